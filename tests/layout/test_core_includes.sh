#!/usr/bin/env bash
# The protocol core (lib/wire, cc, mem, rc, ud, cm, net) is written in its own vocabulary
# (lib/vocab) and never includes the installed API (include/droce): the API includes the
# vocabulary, not the other way round. The build enforces it (the core compiles without
# include/ on its path); this catches an installed copy of droce's headers under
# /usr/include or /usr/local/include making such an include compile all the same.
# Usage: test_core_includes.sh SOURCE_DIR
set -u
src=${1:?usage: $0 SOURCE_DIR}
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]droce/' \
    "$src"/lib/{wire,cc,mem,rc,ud,cm,net}/*.{h,cpp} 2>/dev/null)
if [ -n "$bad" ]; then
    echo "FAIL: the protocol core includes the installed API (use lib/vocab's headers):"
    sed "s|^$src/|    |" <<<"$bad"
    exit 1
fi
echo "ok: lib/{wire,cc,mem,rc,ud,cm,net} include nothing of include/droce"
