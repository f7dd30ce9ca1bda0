#!/usr/bin/env bash
# droce's librdmacm.so.1 exports every symbol Debian 12's librdmacm.so.1 exports, at the
# same version (so that any binary linked against the real one resolves), and nothing else.
# Usage: test_rdmacm_symbols.sh PATH/TO/librdmacm.so.1
set -u
ours=${1:?usage: $0 PATH/TO/librdmacm.so.1}
sys=$(ldconfig -p | awk '/librdmacm.so.1 .*x86-64/ {print $NF; exit}')
[[ -n $sys ]] || { echo "SKIP: no system librdmacm.so.1"; exit 77; }
defaults() { # the defined, default-version symbols: "VERSION SYMBOL"
    objdump -T "$1" | awk '$2 == "g" && $0 !~ /\*UND\*/ && $(NF-1) !~ /^\(/ &&
        $(NF-1) != $NF {print $(NF-1), $NF}' | sort
}
if diff <(defaults "$sys") <(defaults "$ours") >/tmp/rdmacm-symbols.$$; then
    echo "ok: $(defaults "$ours" | wc -l) symbols, versions as $sys"
    rm -f /tmp/rdmacm-symbols.$$
    exit 0
fi
echo "FAIL: exported symbols differ (< $sys, > $ours):"
cat /tmp/rdmacm-symbols.$$
rm -f /tmp/rdmacm-symbols.$$
exit 1
