#!/usr/bin/env bash
# libdroce.so exports its API and nothing else (lib/droce_version.map):
#  - every exported symbol is in version node DROCE_0;
#  - every one is a function of the installed headers (include/droce/*.h and the core's
#    vocabulary lib/vocab/*.h installed next to them: droce::f for a
#    free function declared there, droce::C::m for a member of a class declared there) or
#    the typeinfo / vtable of a class declared there: nothing of droce::engine, wire, rc,
#    cm, net, mem, drivers, ..., no CmChannel::Impl, no std / fmt / spdlog instance;
#  - there are at most MAX_EXPORTS of them (the API's size: grow it on purpose);
#  - the exported set is exactly lib/droce.abi (committed: a change to the ABI is a reviewed
#    decision; regenerate with `nm -D --defined-only -C libdroce.so | cut -d' ' -f3- | sort`
#    and say why in the commit);
#  - no DPDK type in the code of the installed headers (comments may name DPDK);
#  - API_PROBE, built from the headers against libdroce.so alone, links (every function of
#    the API is exported) and runs.
# On failure it prints the exports by namespace.
# Usage: test_exports.sh LIBDROCE_SO SOURCE_DIR MAX_EXPORTS API_PROBE
set -u
lib=${1:?usage: $0 LIBDROCE_SO SOURCE_DIR MAX_EXPORTS API_PROBE}
src=${2:?}
max=${3:?}
probe=${4:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
hdrs=("$src"/include/droce/*.h "$src"/lib/vocab/*.h)

# nm -D prints a versioned symbol as NAME@@DROCE_0 (NAME@DROCE_0 for a non-default one),
# and the version node itself as an absolute symbol.
all=$(nm -D --defined-only -C "$lib" | cut -d' ' -f3-) || { echo "FAIL: nm -D $lib"; exit 1; }
syms=$(grep -v '^DROCE_0$' <<<"$all")
count=$(grep -c . <<<"$syms")

# The names the installed headers declare: top-level classes and structs (unindented, as
# the headers write them; nested ones have no code of their own), free functions (an
# unindented declaration with a parameter list) and member functions (indented ones).
classes=$(grep -ohE '^(class|struct) [A-Z][A-Za-z0-9_]*' "${hdrs[@]}" | cut -d' ' -f2 | sort -u)
funcs=$(grep -hE '^[A-Za-z][^#(]*[ *&][a-z_][a-z0-9_]*\(' "${hdrs[@]}" |
    sed -E 's/^[^(]*[ *&]([a-z_][a-z0-9_]*)\(.*/\1/' | sort -u)
members=$(grep -hE '^ +' "${hdrs[@]}" | grep -oE '~?[A-Za-z_][A-Za-z0-9_]*\(' | tr -d '(' |
    sort -u)
is_in() { grep -qxF -- "$1" <<<"$2"; }

bad=()
unversioned=0
while IFS= read -r s; do
    [ -n "$s" ] || continue
    case "$s" in
    *@@DROCE_0 | *@DROCE_0) ;;
    *) unversioned=$((unversioned + 1)) ;;
    esac
    name=${s%@DROCE_0}
    name=${name%@}
    ok=0
    if [[ $name =~ ^(typeinfo\ for\ |typeinfo\ name\ for\ |vtable\ for\ )droce::([A-Za-z0-9_]+)$ ]]; then
        is_in "${BASH_REMATCH[2]}" "$classes" && ok=1
    elif [[ $name =~ ^droce::([a-z_][a-z0-9_]*)\( ]]; then
        is_in "${BASH_REMATCH[1]}" "$funcs" && ok=1
    elif [[ $name =~ ^droce::([A-Z][A-Za-z0-9_]*)::(~?[A-Za-z_][A-Za-z0-9_]*)\( ]]; then
        is_in "${BASH_REMATCH[1]}" "$classes" && is_in "${BASH_REMATCH[2]}" "$members" && ok=1
    fi
    [ $ok -eq 1 ] || bad+=("$name")
done <<<"$syms"

by_namespace() {
    sed -E 's/@.*//; s/^(typeinfo name for |typeinfo for |vtable for |VTT for |guard variable for |non-virtual thunk to |virtual thunk to )//' <<<"$syms" |
        sed -E 's/^[^:(]*[ *&](([A-Za-z_][A-Za-z0-9_]*::))/\1/' |
        sed -E 's/^(droce::[a-z_][a-z0-9_]*::).*/\1/;t; s/^(droce::CmChannel::Impl)\b.*/\1/;t; s/^droce::.*/droce:: (top level)/;t; s/^([A-Za-z_][A-Za-z0-9_]*::).*/\1/;t; s/.*/(global)/' |
        sort | uniq -c | sort -rn
}

if [ ${#bad[@]} -gt 0 ]; then
    fail "${#bad[@]} exported symbols are not the API of include/droce (see lib/droce_version.map):"
    printf "    %s\n" "${bad[@]:0:40}"
    [ ${#bad[@]} -le 40 ] || echo "    ... and $((${#bad[@]} - 40)) more"
fi
[ $unversioned -eq 0 ] || fail "$unversioned exported symbols are not in version node DROCE_0"
if [ "$count" -gt "$max" ]; then
    fail "$count symbols exported, more than the API's $max"
fi
if [ $fails -gt 0 ]; then
    echo "exports by namespace:"
    by_namespace
else
    echo "ok: $count symbols exported (at most $max), all the API of include/droce, in DROCE_0"
fi

# The exported set against the committed one: what appeared (+) or went (-).
abi=$src/lib/droce.abi
if [ ! -f "$abi" ]; then
    fail "no committed ABI list $abi"
elif ! d=$(diff <(sort "$abi") <(sort <<<"$all")); then
    fail "the exported set differs from lib/droce.abi (< committed, > built):"
    sed 's/^/    /' <<<"$d" | head -40
else
    echo "ok: the exported set is lib/droce.abi ($(grep -c . "$abi") lines)"
fi

# No DPDK type in the API: the headers' code, comments stripped by the preprocessor.
dpdk=$(for h in "${hdrs[@]}"; do cpp -fpreprocessed -P "$h" 2>/dev/null | grep -nE '\brte_|\bRTE_' | sed "s|^|${h##*/}:|"; done)
if [ -n "$dpdk" ]; then
    fail "DPDK names in the code of the installed headers:"
    sed 's/^/    /' <<<"$dpdk"
else
    echo "ok: no DPDK name in the code of include/droce/*.h"
fi

# The other way: every function of the API is there (the probe linked, and runs).
out=$("$probe" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q '^api_probe: OK' <<<"$out"; then
    echo "ok: $(basename "$probe"), linked to libdroce.so only, runs"
else
    echo "$out"
    fail "$probe: exit $rc"
fi
ldd "$probe" | grep -q 'libdroce\.so' || fail "$probe does not load libdroce.so"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
