#!/usr/bin/env bash
# The protocol core (lib/wire, cc, mem, qp, rc, ud, cm, net) is written in its own vocabulary
# (lib/vocab) and never includes the installed API (include/droce): the API includes the
# vocabulary, not the other way round. The build enforces it (the core compiles without
# include/ on its path); this catches an installed copy of droce's headers under
# /usr/include or /usr/local/include making such an include compile all the same. And RC
# and UD stand side by side on lib/qp: neither includes the other.
# Usage: test_core_includes.sh SOURCE_DIR
set -u
src=${1:?usage: $0 SOURCE_DIR}
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]droce/' \
    "$src"/lib/{wire,cc,mem,qp,rc,ud,cm,net}/*.{h,cpp} 2>/dev/null)
if [ -n "$bad" ]; then
    echo "FAIL: the protocol core includes the installed API (use lib/vocab's headers):"
    sed "s|^$src/|    |" <<<"$bad"
    exit 1
fi
echo "ok: lib/{wire,cc,mem,qp,rc,ud,cm,net} include nothing of include/droce"
# RC and UD share lib/qp; neither includes the other's headers.
cross=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"rc_' "$src"/lib/ud/*.{h,cpp} 2>/dev/null
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"ud_' "$src"/lib/rc/*.{h,cpp} 2>/dev/null)
if [ -n "$cross" ]; then
    echo "FAIL: lib/rc and lib/ud include each other (what both need belongs in lib/qp):"
    sed "s|^$src/|    |" <<<"$cross"
    exit 1
fi
echo "ok: lib/rc and lib/ud include nothing of each other"
