#!/usr/bin/env bash
# The installed package works for a consumer: `meson install --destdir` into a temporary
# root, then, against that root only (PKG_CONFIG_PATH), check the installed files (one
# libdroce, headers that include no internal or DPDK header, droce.pc, the apps), build a
# one-line `g++ $(pkg-config --cflags --libs droce)` probe that creates a net_ring pair
# and opens an af_packet vdev (the PMD comes from the EAL's plugin directory), and build
# examples/kv_fetch with its own Makefile and run it in both threading modes.
# Usage: test_installed_example.sh BUILD_DIR SOURCE_DIR
set -u
build=$(readlink -f "${1:?usage: $0 BUILD_DIR SOURCE_DIR}")
src=$(readlink -f "${2:?usage: $0 BUILD_DIR SOURCE_DIR}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

root=$tmp/root
if ! meson install -C "$build" --no-rebuild --destdir "$root" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: meson install"
    exit 1
fi
pc=$(find "$root" -name droce.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: no droce.pc installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
echo "ok: installed; droce.pc at ${pc#$root}"
grep -q '^prefix=${pcfiledir}' "$pc" ||
    fail "droce.pc is not relocatable (configure with -Dpkgconfig.relocatable=true)"
grep -Eq '^Requires.private:.*libdpdk' "$pc" || fail "droce.pc does not require libdpdk"

libdir=$(pkg-config --variable=libdir droce)
incdir=$(pkg-config --variable=includedir droce)
ls "$libdir"/libdroce.so* >/dev/null 2>&1 || fail "no libdroce.so in $libdir"
for h in buffer.h cm.h cm_device.h dcqcn.h droce.h status.h verbs.h vocab_dcqcn.h vocab_status.h \
    vocab_verbs.h; do
    [ -f "$incdir/droce/$h" ] || fail "header droce/$h not installed"
done
# Public headers: only the standard library and each other.
bad=$(grep -h '^#include' "$incdir"/droce/*.h | grep -Ev '^#include (<(c[a-z]+|memory|string|utility|vector|variant)>|"(buffer|cm|dcqcn|droce|status|verbs|vocab_dcqcn|vocab_status|vocab_verbs)\.h")$' || true)
[ -z "$bad" ] || fail "public headers include more than the standard library: $bad"
[ "$(ls "$incdir/droce")" = "$(printf 'buffer.h\ncm.h\ncm_device.h\ndcqcn.h\ndroce.h\nstatus.h\nverbs.h\nvocab_dcqcn.h\nvocab_status.h\nvocab_verbs.h')" ] ||
    fail "unexpected files in include/droce: $(ls "$incdir/droce" | tr '\n' ' ')"
for app in droce-pingpong droce-perf droce-info droce-rping; do
    [ -x "$(find "$root" -path "*/bin/$app" | head -1)" ] || fail "$app not installed"
done
echo "ok: library, headers (standard includes only), apps"

# The one-line consumer build of the issue, with a probe of the PMDs it can reach.
cat >"$tmp/probe.cpp" <<'CPP'
#include <droce/droce.h>
#include <cstdio>
int main(int, char **argv) {
    char *eal[] = {argv[0], (char *)"-l", (char *)"0", (char *)"--no-huge", (char *)"-m",
                   (char *)"256", (char *)"--no-pci", (char *)"--no-shconf",
                   (char *)"--no-telemetry", (char *)"--log-level=*:warning",
                   (char *)"--vdev", (char *)"net_af_packet0,iface=lo", nullptr};
    droce::EngineOptions eo;
    eo.embedded = true;
    int used = 0;
    auto e = droce::Engine::create(12, eal, &used, eo);
    if (!e) { std::printf("create: %s\n", e.status().message().c_str()); return 1; }
    auto pair = (*e)->create_ring_pair();
    if (!pair) { std::printf("ring pair: %s\n", pair.status().message().c_str()); return 1; }
    droce::DeviceConfig c;
    c.ipv4_cidr = "10.9.0.1/24";
    for (const char *port : {pair->first.c_str(), pair->second.c_str(), "net_af_packet0"}) {
        c.port = port;
        auto d = (*e)->open_device(c);
        if (!d) { std::printf("open %s: %s\n", port, d.status().message().c_str()); return 1; }
    }
    std::printf("probe: OK: %s, %s and net_af_packet0 open\n", pair->first.c_str(),
                pair->second.c_str());
    return 0;
}
CPP
if ! g++ -o "$tmp/probe" "$tmp/probe.cpp" $(pkg-config --cflags --libs droce) >"$tmp/probe.log" 2>&1; then
    cat "$tmp/probe.log"
    fail "g++ \$(pkg-config --cflags --libs droce) probe.cpp"
else
    LD_LIBRARY_PATH=$libdir ldd "$tmp/probe" | grep -q "libdroce.so.0 => $libdir/" ||
        fail "probe does not load the installed libdroce: $(LD_LIBRARY_PATH=$libdir ldd "$tmp/probe" | grep droce)"
    # af_packet is not linked: the EAL must load it from its plugin directory.
    ! LD_LIBRARY_PATH=$libdir ldd "$tmp/probe" | grep -q librte_net_af_packet ||
        fail "probe links librte_net_af_packet directly; the plugin-dir check proves nothing"
    out=$(LD_LIBRARY_PATH=$libdir timeout 60 "$tmp/probe" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^probe: OK' <<<"$out"; then
        echo "ok: g++ \$(pkg-config --cflags --libs droce): $(grep '^probe: OK' <<<"$out")"
    else
        echo "$out"
        fail "probe exit $rc"
    fi
fi

# examples/kv_fetch with its own Makefile, against the installed package only.
cp -r "$src/examples/kv_fetch" "$tmp/kv_fetch"
rm -f "$tmp/kv_fetch/kv_fetch"
if ! make -C "$tmp/kv_fetch" >"$tmp/make.log" 2>&1; then
    cat "$tmp/make.log"
    fail "make -C examples/kv_fetch against the installed droce"
else
    echo "ok: examples/kv_fetch built against the installed droce"
    for mode in --embedded --worker; do
        out=$(LD_LIBRARY_PATH=$libdir timeout 120 "$tmp/kv_fetch/kv_fetch" "$mode" 2>&1)
        rc=$?
        if [ $rc -eq 0 ] && grep -q '^kv_fetch: OK: ' <<<"$out"; then
            echo "ok: kv_fetch $mode: $(grep '^kv_fetch: OK' <<<"$out")"
        else
            echo "$out"
            fail "kv_fetch $mode: exit $rc"
        fi
    done
fi

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
