#!/usr/bin/env bash
# droce's libibverbs.so.1 exports every symbol Debian 12's libibverbs.so.1 exports as a
# default version, at that version (so that any binary or library linked against the
# real one resolves), and nothing else. The compatibility versions of IBVERBS_1.0
# (symbols in parentheses in objdump's listing) are not carried (lib/verbs/README.md).
# Usage: test_verbs_symbols.sh PATH/TO/libibverbs.so.1
set -u
ours=${1:?usage: $0 PATH/TO/libibverbs.so.1}
sys=$(ldconfig -p | awk '/libibverbs.so.1 .*x86-64/ {print $NF; exit}')
[[ -n $sys ]] || { echo "SKIP: no system libibverbs.so.1"; exit 77; }
defaults() { # the defined, default-version symbols: "VERSION SYMBOL"
    objdump -T "$1" | awk '$2 == "g" && $0 !~ /\*UND\*/ && $(NF-1) !~ /^\(/ &&
        $(NF-1) != $NF {print $(NF-1), $NF}' | sort
}
if diff <(defaults "$sys") <(defaults "$ours") >/tmp/verbs-symbols.$$; then
    echo "ok: $(defaults "$ours" | wc -l) symbols, versions as $sys"
    rm -f /tmp/verbs-symbols.$$
    exit 0
fi
echo "FAIL: exported symbols differ (< $sys, > $ours):"
cat /tmp/verbs-symbols.$$
rm -f /tmp/verbs-symbols.$$
exit 1
