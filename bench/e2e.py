#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""End-to-end comparison of issue 9 (`./dev.sh bench` runs it): droce vs the raw DPDK link
vs the kernel UDP path, two processes on the two cores, alternating within each round.

Per round, in an order that flips every round (ABBA: a slow stretch on a shared machine hits
droce and its reference alike):
  - net_memif (--no-huge) and virtio_user <-> net_vhost (hugepages, both directions):
      droce-perf write_bw over a size sweep (memif: 64 B .. 1 MiB; vhost: 64 B, 64 KiB),
      read_bw and send_bw 64 KiB, write_lat and send_lat 64 B (path MTU 4096),
    each followed (or preceded) by bench/raw_link with frames of the exact sizes droce puts
    on the wire for that message (gen/sink, one ACK-sized reply per message; ping/pong);
  - kernel UDP (bench/udp_kernel) between two network namespaces over a veth pair:
    ping-pong with 138-B frames (= droce's 64 B WRITE) and streaming.
Ratios droce / raw are taken within a round, then summarised (min / median / max).
write_bw 64 B and 64 KiB also get a second reference (unless --no-touch): raw_link --touch,
a generator that copies each payload in and a sink that copies it out, with no protocol —
what the link gives a mover of real data (the plain reference never reads or writes one).

Output (--out, default bench/e2e): e2e.json (every run), e2e.md (the tables), and the plots
e2e_bw.png / e2e_lat.png (bench/plot_e2e.py). Must run as root (hugepages, netns).

Usage: bench/e2e.py [--build build] [--rounds 5] [--secs 2] [--lat-iters 100000] [--quick]
                    [--out bench/e2e] [--only memif,vhost,kernel] [--no-touch]
"""
import argparse
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# Header sizes (lib/wire/wire_headers.h): Ethernet 14, IPv4 20, UDP 8, BTH 12, RETH 16,
# AETH 4, ICRC 4.
ETH, IP4, UDP, BTH, RETH, AETH, ICRC = 14, 20, 8, 12, 16, 4, 4
BASE = ETH + IP4 + UDP + BTH  # 54
ACK = BASE + AETH + ICRC  # 62
READ_REQ = BASE + RETH + ICRC  # 74
MTU = 4096


def pad4(n):
    return (n + 3) & ~3


def frames_for(verb, size, mtu=MTU):
    """Frame sizes of one message of `size` bytes in the data direction (droce's framing)."""
    n = max(1, -(-size // mtu))
    rem = size - (n - 1) * mtu
    if verb == "write":
        if n == 1:
            return [BASE + RETH + pad4(size) + ICRC]
        return [BASE + RETH + mtu + ICRC] + [BASE + mtu + ICRC] * (n - 2) + [BASE + pad4(rem) + ICRC]
    if verb == "send":
        if n == 1:
            return [BASE + pad4(size) + ICRC]
        return [BASE + mtu + ICRC] * (n - 1) + [BASE + pad4(rem) + ICRC]
    if verb == "read":  # responses
        if n == 1:
            return [BASE + AETH + pad4(size) + ICRC]
        return [BASE + AETH + mtu + ICRC] + [BASE + mtu + ICRC] * (n - 2) + [BASE + AETH + pad4(rem) + ICRC]
    raise ValueError(verb)


def rle(frames):
    out, i = [], 0
    while i < len(frames):
        j = i
        while j < len(frames) and frames[j] == frames[i]:
            j += 1
        out.append(f"{frames[i]}x{j - i}" if j - i > 1 else str(frames[i]))
        i = j
    return ",".join(out)


def summ(vals):
    v = sorted(x for x in vals if x is not None)
    if not v:
        return None
    return {"min": v[0], "median": statistics.median(v), "max": v[-1], "n": len(v)}


class Runner:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="droce-e2e-")
        self.perf = os.path.join(a.build, "apps/droce-perf/droce-perf")
        self.raw = os.path.join(a.build, "bench/raw_link")
        self.udp = os.path.join(a.build, "bench/udp_kernel")
        self.cpu_pair_bin = os.path.join(a.build, "bench/cpu_pair")
        self.port = 21000 + os.getpid() % 20000
        self.seq = 0
        self.runs = []
        self.old_huge = None
        self.netns = None

    # ---- environment -------------------------------------------------------------------
    def hugepages_up(self, pages):
        # Relative to what is there: other jobs on the machine may hold hugepages too, so
        # the script adds its own and takes back exactly as many at the end.
        p = "/proc/sys/vm/nr_hugepages"
        old = int(open(p).read())
        with open(p, "w") as f:
            f.write(str(old + pages))
        got = int(open(p).read())
        self.old_huge = got - old
        print(f"hugepages: {old} -> {got} (2 MiB)", flush=True)
        if got < old + pages:
            print("warning: fewer hugepages than asked", flush=True)

    def hugepages_down(self):
        if self.old_huge is not None:
            p = "/proc/sys/vm/nr_hugepages"
            now = int(open(p).read())
            with open(p, "w") as f:
                f.write(str(max(0, now - self.old_huge)))
            print(f"hugepages: {now} -> {open(p).read().strip()} (released {self.old_huge})", flush=True)
            self.old_huge = None

    def netns_up(self):
        t = f"e2e{os.getpid() % 100000}"
        self.netns = (t + "a", t + "b")
        a, b = self.netns
        cmds = [
            f"ip netns add {a}", f"ip netns add {b}",
            f"ip link add {t}va type veth peer name {t}vb",
            f"ip link set {t}va netns {a}", f"ip link set {t}vb netns {b}",
            f"ip -n {a} addr add 10.99.0.1/24 dev {t}va", f"ip -n {b} addr add 10.99.0.2/24 dev {t}vb",
            f"ip -n {a} link set {t}va mtu 9000 up", f"ip -n {b} link set {t}vb mtu 9000 up",
            f"ip -n {a} link set lo up", f"ip -n {b} link set lo up",
        ]
        for c in cmds:
            subprocess.run(c.split(), check=True)

    def netns_down(self):
        if self.netns:
            for n in self.netns:
                subprocess.run(["ip", "netns", "del", n], check=False)
            self.netns = None

    # ---- process pairs -----------------------------------------------------------------
    def pair(self, first, second, timeout, wait_for=None, gap=1.0, grace=None):
        """Starts `first`, waits (for a socket file or `gap` s), starts `second`; returns
        (rc1, out1, rc2, out2). Either is killed after `timeout` s."""
        grace = timeout if grace is None else grace
        self.seq += 1
        logs = [os.path.join(self.tmp, f"{self.seq}-{i}.log") for i in (1, 2)]
        f1, f2 = open(logs[0], "w"), open(logs[1], "w")
        # restore_signals=False: the children inherit Python's SIGPIPE = ignore. A
        # virtio_user process whose vhost peer exits first writes to a closed vhost-user
        # socket on shutdown; it must see EPIPE, not die of the signal.
        p1 = subprocess.Popen(first, stdout=f1, stderr=subprocess.STDOUT, start_new_session=True,
                              restore_signals=False)
        t0 = time.time()
        if wait_for:
            while not os.path.exists(wait_for) and time.time() - t0 < 20 and p1.poll() is None:
                time.sleep(0.05)
            time.sleep(0.3)
        else:
            time.sleep(gap)
        p2 = subprocess.Popen(second, stdout=f2, stderr=subprocess.STDOUT, start_new_session=True,
                              restore_signals=False)
        # Once one side has exited, the other gets `grace` s more: droce-perf's send_bw
        # server in a timed run (-D) does not notice that the client is done and waits for
        # its --timeout; its figures are not used (the client's are).
        rcs = [None, None]
        ended = None
        while None in rcs:
            for i, p in enumerate((p1, p2)):
                if rcs[i] is None and p.poll() is not None:
                    rcs[i] = p.returncode
                    ended = ended or time.time()
            now = time.time()
            late = now - t0 > timeout or (ended is not None and now - ended > grace)
            if None in rcs and late:
                for i, p in enumerate((p1, p2)):
                    if rcs[i] is None:
                        os.killpg(p.pid, signal.SIGKILL)
                        p.wait()
                        rcs[i] = "killed"
            time.sleep(0.02)
        f1.close()
        f2.close()
        outs = [open(x).read() for x in logs]
        return rcs[0], outs[0], rcs[1], outs[1]

    # ---- links -------------------------------------------------------------------------
    def eal(self, link, side, lcore):
        """EAL args of side 'a' (memif server / vhost) or 'b' (memif client / virtio_user).
        memif's socket is made a file (socket-abstract=no) so that the script can wait for
        the server side to exist before it starts the client, whose start fails without it."""
        self.seq += 1
        pre = f"e2e{os.getpid()}-{self.seq}{side}"
        common = [f"-l{lcore}", "--no-pci", "--log-level=*:warning", "--file-prefix", pre]
        if link == "memif":
            role = "server" if side == "a" else "client"
            return common + ["--no-huge", "-m", "1024", "--no-shconf",
                             f"--vdev=net_memif0,role={role},socket={self.sock},socket-abstract=no"]
        if side == "a":
            return common + ["-m", "1024", f"--vdev=net_vhost0,iface={self.sock},queues=1"]
        return common + ["-m", "1024", "--single-file-segments",
                         f"--vdev=net_virtio_user0,path={self.sock},queues=1"]

    def new_sock(self, link):
        self.sock = os.path.join(self.tmp, f"{link}-{self.seq}.sock")
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        return self.sock

    def sides(self, link, sender):
        """(first, second) process sides: 'a' must start first on vhost (it makes the socket).
        Returns the data sender's side and the order."""
        return ("a", "b")

    def secs_for(self, size):
        """Run length: the target sizes (64 B, 64 KiB) get --secs; the rest of the sweep
        half of it (they only draw the curve), which keeps the full run near 15 minutes."""
        return self.a.secs if size <= 200 or 65536 <= size <= 70000 else max(1, self.a.secs // 2)

    def cpu_pair(self):
        """bench/cpu_pair: a cache line's hand-over between CPUs 0 and 1 and a 4 KiB frame
        stream between them, just before a bw run. On the AMD VM the two vCPUs move between
        sharing an L3 (~30 ns a hop) and not (~160 ns, for minutes): runs whose payloads cross
        the cores then lose 2-5x, the raw link much less (bench/README.md)."""
        try:
            out = subprocess.run([self.cpu_pair_bin], capture_output=True, text=True, timeout=10).stdout
            return json.loads(out.strip().splitlines()[-1])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return None

    # ---- droce -------------------------------------------------------------------------
    def droce(self, link, dirn, mode, size, rnd):
        """dirn: which side is droce-perf's client: 'a' or 'b'."""
        self.port += 1
        sock = self.new_sock(link)
        lat = mode.endswith("_lat")
        ips = {"a": ("10.78.0.1/24", "02:00:00:00:09:01"), "b": ("10.78.0.2/24", "02:00:00:00:09:02")}
        client, server = dirn, ("b" if dirn == "a" else "a")
        run = ["-s", str(size), "-m", str(MTU), "--eth-mtu", "9000", "-p", str(self.port), "--timeout", "60"]
        run += ["-n", str(self.a.lat_iters)] if lat else ["-D", str(self.secs_for(size)), "--report_gbits"]
        if mode == "send_bw":
            run += ["-r", "512"]
        cmd = {}
        for side, lcore in (("a", 0), ("b", 1)):
            ip, mac = ips[side]
            c = [self.perf, mode] + self.eal(link, side, lcore) + ["--", "--ip", ip, "--mac", mac] + run
            if side == client:
                c.append("127.0.0.1")
            cmd[side] = c
        # The server listens on TCP; the client retries its connect for 10 s. On vhost side
        # 'a' creates the vhost-user socket, so it always starts first.
        cpu = None if lat else self.cpu_pair()
        r1, o1, r2, o2 = self.pair(cmd["a"], cmd["b"], timeout=self.a.secs + 90,
                                   wait_for=sock, grace=3)
        out_c = o1 if client == "a" else o2
        rec = {"kind": "droce", "link": link, "client": client, "mode": mode, "size": size,
               "round": rnd, "rc": [r1, r2]}
        if cpu:
            rec["cpu_pair"] = cpu
        rc_c, rc_s = (r1, r2) if client == "a" else (r2, r1)
        ok = rc_c == 0 and rc_s in (0, "killed")
        if rc_s == "killed":
            rec["server_killed"] = True
        rows = [ln.split() for ln in out_c.splitlines()
                if re.match(r"^\s*%d\s+\d+" % size, ln)]
        if ok and rows:
            f = [float(x) for x in rows[-1]]
            if lat:
                rec.update(t_min=f[2], t_max=f[3], t_typical=f[4], t_avg=f[5], p99=f[7], p99_9=f[8])
            else:
                rec.update(gbps=f[3], mpps=f[4])
        else:
            rec["error"] = (o1[-600:] + "\n----\n" + o2[-600:]).strip()
        return rec

    # ---- raw link ----------------------------------------------------------------------
    def raw_bw(self, link, sender, frames, reply, rnd, tag, touch=False):
        sock = self.new_sock(link)
        recv = "b" if sender == "a" else "a"
        lc = {"a": 0, "b": 1}
        gen = [self.raw, "gen"] + self.eal(link, sender, lc[sender]) + [
            "--", "--frames", rle(frames), "--secs", str(self.secs_for(sum(frames)))]
        sink = [self.raw, "sink"] + self.eal(link, recv, lc[recv]) + [
            "--", "--every", str(len(frames)), "--reply-bytes", str(reply)]
        if touch:
            # Payloads written by the generator and copied out by the sink (raw_link.cpp).
            gen += ["--touch", "1"]
            sink += ["--frames", rle(frames), "--touch", "1"]
        cmd = {sender: gen, recv: sink}
        cpu = self.cpu_pair()
        r1, o1, r2, o2 = self.pair(cmd["a"], cmd["b"], timeout=self.a.secs + 60,
                                   wait_for=sock)
        out = o1 if recv == "a" else o2
        rec = {"kind": "raw_touch" if touch else "raw", "link": link, "client": sender, "mode": tag,
               "round": rnd, "frames": rle(frames), "rc": [r1, r2]}
        if cpu:
            rec["cpu_pair"] = cpu
        m = [ln for ln in out.splitlines() if ln.startswith('{"role":"sink"')]
        if r1 == 0 and r2 == 0 and m:
            j = json.loads(m[-1])
            rec.update(frame_mpps=j["mpps"], frame_gbps=j["gbps"], msgs_per_s=j["msgs_per_s"])
        else:
            rec["error"] = (o1[-600:] + "\n----\n" + o2[-600:]).strip()
        return rec

    def raw_lat(self, link, pinger, frame, rnd, tag):
        sock = self.new_sock(link)
        other = "b" if pinger == "a" else "a"
        lc = {"a": 0, "b": 1}
        ping = [self.raw, "ping"] + self.eal(link, pinger, lc[pinger]) + [
            "--", "--frames", str(frame), "--iters", str(self.a.lat_iters)]
        pong = [self.raw, "pong"] + self.eal(link, other, lc[other]) + ["--"]
        cmd = {pinger: ping, other: pong}
        r1, o1, r2, o2 = self.pair(cmd["a"], cmd["b"], timeout=60,
                                   wait_for=sock)
        out = o1 if pinger == "a" else o2
        rec = {"kind": "raw", "link": link, "client": pinger, "mode": tag, "round": rnd,
               "frames": str(frame), "rc": [r1, r2]}
        m = [ln for ln in out.splitlines() if ln.startswith('{"role":"ping"')]
        if r1 == 0 and r2 == 0 and m:
            j = json.loads(m[-1])
            for k in ("t_min", "t_typical", "t_avg", "p99", "p99_9", "t_max"):
                rec[k] = j[k]
        else:
            rec["error"] = (o1[-600:] + "\n----\n" + o2[-600:]).strip()
        return rec

    # ---- kernel ------------------------------------------------------------------------
    def kernel(self, rnd, what, payload):
        a, b = self.netns
        self.port += 1
        srv_role = "pong" if what == "lat" else "sink"
        srv = ["ip", "netns", "exec", b, "taskset", "-c", "0", self.udp, srv_role, str(self.port)]
        if what == "lat":
            cli = [self.udp, "ping", "10.99.0.2", str(self.port), str(payload), str(min(self.a.lat_iters, 20000))]
        else:
            cli = [self.udp, "stream", "10.99.0.2", str(self.port), str(payload), str(self.a.secs)]
        cli = ["ip", "netns", "exec", a, "taskset", "-c", "1"] + cli
        r1, o1, r2, o2 = self.pair(srv, cli, timeout=self.a.secs + 60, gap=0.3)
        frame = ETH + IP4 + UDP + payload
        rec = {"kind": "kernel", "link": "veth", "mode": f"udp_{what}", "round": rnd,
               "frames": str(frame), "rc": [r1, r2]}
        src = o2 if what == "lat" else o1
        m = [ln for ln in src.splitlines() if ln.startswith("{")]
        if r1 == 0 and r2 == 0 and m:
            j = json.loads(m[-1])
            if what == "lat":
                for k in ("t_min", "t_typical", "t_avg", "p99", "p99_9", "t_max"):
                    rec[k] = j[k]
            else:
                rec.update(frame_mpps=j["pps"] / 1e6, frame_gbps=j["gbps"] * frame / payload,
                           msgs_per_s=j["pps"])
        else:
            rec["error"] = (o1[-600:] + "\n----\n" + o2[-600:]).strip()
        return rec


def plan(a):
    """Pairs (droce job, raw job) per round. A job is a tuple handed to Runner."""
    sweep = [64, 4096, 65536, 1048576] if a.quick else [64, 256, 1024, 4096, 16384, 65536, 1048576]
    jobs = []
    only = set(a.only.split(","))
    links = []
    if "memif" in only:
        links.append(("memif", "a", sweep))
    if "vhost" in only:
        # client 'a' = net_vhost sends (vhost -> virtio_user); 'b' = virtio_user sends.
        links.append(("vhost", "a", [64, 65536]))
        links.append(("vhost", "b", [64, 65536]))
    for link, cl, sizes in links:
        for s in sizes:
            jobs.append((link, cl, "write_bw", s, ("bw", frames_for("write", s), ACK)))
        jobs.append((link, cl, "read_bw", 65536, ("bw", frames_for("read", 65536), READ_REQ)))
        jobs.append((link, cl, "send_bw", 65536, ("bw", frames_for("send", 65536), ACK)))
        jobs.append((link, cl, "write_lat", 64, ("lat", frames_for("write", 64)[0])))
        jobs.append((link, cl, "send_lat", 64, ("lat", frames_for("send", 64)[0])))
    return jobs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=int, default=2)
    ap.add_argument("--lat-iters", type=int, default=100000)
    ap.add_argument("--quick", action="store_true", help="2 rounds, 1 s runs, 20000 ping-pongs, short sweep")
    ap.add_argument("--out", default="bench/e2e")
    ap.add_argument("--only", default="memif,vhost,kernel")
    ap.add_argument("--no-touch", dest="touch", action="store_false",
                    help="skip the second raw reference that copies payloads in and out")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.secs, a.lat_iters = 2, 1, 20000
    if os.geteuid() != 0:
        sys.exit("e2e.py: run as root (hugepages, network namespaces)")
    os.makedirs(a.out, exist_ok=True)
    r = Runner(a)
    jobs = plan(a)
    t_start = time.time()
    try:
        if "vhost" in a.only:
            r.hugepages_up(1100)  # 2 x 1024 MiB for the virtio_user / vhost processes
        if "kernel" in a.only:
            r.netns_up()
        for rnd in range(1, a.rounds + 1):
            order = jobs if rnd % 2 else list(reversed(jobs))
            for link, cl, mode, size, ref in order:
                droce_first = (rnd % 2 == 1)
                pair = []
                members = [0, 1] + ([2] if a.touch and mode == "write_bw" and size in (64, 65536) else [])
                for which in (members if droce_first else list(reversed(members))):
                    if which == 0:
                        rec = r.droce(link, cl, mode, size, rnd)
                    elif ref[0] == "bw":
                        # read: the responses flow server -> client
                        sender = cl if mode != "read_bw" else ("b" if cl == "a" else "a")
                        rec = r.raw_bw(link, sender, ref[1], ref[2], rnd, f"{mode}:{size}",
                                       touch=which == 2)
                        rec["client"] = cl
                    else:
                        rec = r.raw_lat(link, cl, ref[1], rnd, f"{mode}:{size}")
                    rec["job"] = f"{link}/{cl}/{mode}/{size}"
                    pair.append(rec)
                    r.runs.append(rec)
                for rec in pair:
                    v = rec.get("mpps", rec.get("msgs_per_s", rec.get("t_typical", "-")))
                    print(f"[{time.time() - t_start:6.0f}s] round {rnd} {rec['job']:28s} {rec['kind']:6s} "
                          f"{'FAIL ' + str(rec['rc']) if 'error' in rec else v}", flush=True)
            if "kernel" in a.only:
                for what, payload in (("lat", 96), ("stream", 96), ("stream", 4112)):
                    rec = r.kernel(rnd, what, payload)
                    rec["job"] = f"veth/kernel/udp_{what}/{payload}"
                    r.runs.append(rec)
                    print(f"[{time.time() - t_start:6.0f}s] round {rnd} {rec['job']:28s} kernel "
                          f"{'FAIL' if 'error' in rec else rec.get('t_typical', rec.get('frame_mpps'))}",
                          flush=True)
    finally:
        r.netns_down()
        # Leftovers of this run's EAL instances (a killed process leaves its files).
        import glob
        import shutil
        for d in glob.glob(f"/var/run/dpdk/e2e{os.getpid()}-*"):
            shutil.rmtree(d, ignore_errors=True)
        for h in glob.glob(f"/dev/hugepages/e2e{os.getpid()}-*"):
            os.unlink(h)
        shutil.rmtree(r.tmp, ignore_errors=True)
        r.hugepages_down()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    cpu = ""
    for ln in open("/proc/cpuinfo"):
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit, "machine": f"{platform.node()}: {cpu}, {os.cpu_count()} CPUs, {platform.release()}",
            "rounds": a.rounds, "secs": a.secs, "lat_iters": a.lat_iters, "quick": a.quick,
            "elapsed_s": round(time.time() - t_start, 1)}
    res = {"meta": meta, "runs": r.runs, "summary": summarise(r.runs)}
    with open(os.path.join(a.out, "e2e.json"), "w") as f:
        json.dump(res, f, indent=1)
    md = table(res)
    with open(os.path.join(a.out, "e2e.md"), "w") as f:
        f.write(md)
    print("\n" + md)
    plot = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot_e2e.py")
    subprocess.run(["/usr/bin/python3", plot, os.path.join(a.out, "e2e.json"), a.out], check=False)


def metric(rec):
    """The compared figure: message rate (Mpps) for 64 B bw, goodput Gb/s for larger bw,
    typical RTT/2 (us) for lat."""
    mode, size = rec["job"].split("/")[2], int(rec["job"].split("/")[3])
    if mode.endswith("_lat"):
        return rec.get("t_typical")
    if rec["kind"] == "droce":
        if "mpps" not in rec:
            return None
        return rec["mpps"] if size <= 64 else rec["gbps"]
    if "msgs_per_s" not in rec:
        return None
    return rec["msgs_per_s"] / 1e6 if size <= 64 else rec["msgs_per_s"] * size * 8 / 1e9


def summarise(runs):
    by = {}
    for rec in runs:
        if rec["kind"] == "kernel":
            continue
        by.setdefault(rec["job"], {}).setdefault(rec["round"], {})[rec["kind"]] = rec
    out = {}
    for job, rounds in by.items():
        d = [metric(x["droce"]) for x in rounds.values() if "droce" in x]
        w = [metric(x["raw"]) for x in rounds.values() if "raw" in x]
        ratios = []
        for x in rounds.values():
            if "droce" in x and "raw" in x:
                dv, wv = metric(x["droce"]), metric(x["raw"])
                if dv is not None and wv:
                    ratios.append(dv / wv)
        fails = sum(1 for x in rounds.values() if "droce" in x and "error" in x["droce"])
        out[job] = {"droce": summ(d), "raw": summ(w), "ratio": summ(ratios), "droce_failed_rounds": fails}
        t = [x for x in rounds.values() if "raw_touch" in x]
        if t:
            tr = []
            for x in t:
                dv, tv = metric(x["droce"]) if "droce" in x else None, metric(x["raw_touch"])
                if dv is not None and tv:
                    tr.append(dv / tv)
            out[job]["raw_touch"] = summ([metric(x["raw_touch"]) for x in t])
            out[job]["ratio_touch"] = summ(tr)
        if job.split("/")[2].endswith("_lat"):
            for k in ("p99", "p99_9"):
                out[job]["droce_" + k] = summ([x["droce"].get(k) for x in rounds.values() if "droce" in x])
                out[job]["raw_" + k] = summ([x["raw"].get(k) for x in rounds.values() if "raw" in x])
    kern = {}
    for rec in runs:
        if rec["kind"] == "kernel" and "error" not in rec:
            kern.setdefault(rec["job"], []).append(rec)
    for job, recs in kern.items():
        if "udp_lat" in job:
            out[job] = {k: summ([r[k] for r in recs]) for k in ("t_typical", "p99", "p99_9")}
        else:
            out[job] = {"frame_mpps": summ([r["frame_mpps"] for r in recs]),
                        "frame_gbps": summ([r["frame_gbps"] for r in recs])}
    return out


def fmt(s, prec=2):
    if not s:
        return "fail"
    return f"{s['min']:.{prec}f} / {s['median']:.{prec}f} / {s['max']:.{prec}f}"


LINKNAME = {("memif", "a"): "net_memif", ("vhost", "a"): "vhost → virtio_user",
            ("vhost", "b"): "virtio_user → vhost"}


def table(res):
    m, s = res["meta"], res["summary"]
    lines = [f"End-to-end run {m['date']}, commit {m['commit']}, {m['machine']}; "
             f"{m['rounds']} rounds, {m['secs']} s per bw run, {m['lat_iters']} ping-pongs per lat run"
             f"{' (--quick)' if m['quick'] else ''}; {m['elapsed_s']:.0f} s in all.", "",
             "min / median / max over rounds; ratio = droce / raw of the same round. "
             "64 B bw: Mpps (messages); larger bw: Gb/s of message payload (raw: messages/s x size); "
             "lat: typical RTT/2 in µs.", "",
             "| link | test | unit | droce | raw link | ratio droce / raw |",
             "|---|---|---|---|---|---|"]
    for job, v in s.items():
        parts = job.split("/")
        if parts[0] == "veth":
            continue
        link, cl, mode, size = parts[0], parts[1], parts[2], int(parts[3])
        unit = "µs RTT/2" if mode.endswith("_lat") else ("Mpps" if size <= 64 else "Gb/s")
        size_s = f"{size // 1024} KiB" if size >= 1024 else f"{size} B"
        fail = f" ({v['droce_failed_rounds']} rounds failed)" if v["droce_failed_rounds"] else ""
        lines.append(f"| {LINKNAME[(link, cl)]} | {mode} {size_s} | {unit} | {fmt(v['droce'])}{fail} | "
                     f"{fmt(v['raw'])} | {fmt(v['ratio'])} |")
    touched = [(job, v) for job, v in s.items() if "raw_touch" in v]
    if touched:
        lines += ["", "The same write_bw runs against a second reference, `raw_link --touch`: the generator "
                  "copies each frame's payload in from a buffer and the sink copies it out into one "
                  "(no protocol, no CRC). The targets stay against the plain raw link above.", "",
                  "| link | test | unit | droce | raw link, payload copied in and out | ratio droce / it |",
                  "|---|---|---|---|---|---|"]
        for job, v in touched:
            link, cl, mode, size = job.split("/")
            size = int(size)
            unit = "Mpps" if size <= 64 else "Gb/s"
            size_s = f"{size // 1024} KiB" if size >= 1024 else f"{size} B"
            lines.append(f"| {LINKNAME[(link, cl)]} | {mode} {size_s} | {unit} | {fmt(v['droce'])} | "
                         f"{fmt(v['raw_touch'])} | {fmt(v['ratio_touch'])} |")
    lines += ["", "Latency percentiles (RTT/2, µs; median over rounds of each run's figure):", "",
              "| link | test | droce typical / p99 / p99.9 | raw typical / p99 / p99.9 | kernel UDP (veth) typical / p99 / p99.9 |",
              "|---|---|---|---|---|"]
    k = s.get("veth/kernel/udp_lat/96", {})

    def med(x):
        return f"{x['median']:.2f}" if x else "fail"
    kl = f"{med(k.get('t_typical'))} / {med(k.get('p99'))} / {med(k.get('p99_9'))}" if k else "-"
    for job, v in s.items():
        parts = job.split("/")
        if parts[0] == "veth" or not parts[2].endswith("_lat"):
            continue
        lines.append(f"| {LINKNAME[(parts[0], parts[1])]} | {parts[2]} {parts[3]} B | "
                     f"{med(v['droce'])} / {med(v.get('droce_p99'))} / {med(v.get('droce_p99_9'))} | "
                     f"{med(v['raw'])} / {med(v.get('raw_p99'))} / {med(v.get('raw_p99_9'))} | {kl} |")
    lines += ["", "Kernel UDP between two network namespaces over a veth (frames = Eth+IP+UDP+payload):", ""]
    for job, v in s.items():
        if job.startswith("veth/kernel/udp_stream"):
            pl = int(job.split("/")[3])
            lines.append(f"- stream, {pl + 42}-B frames: {fmt(v['frame_mpps'], 3)} Mpps, "
                         f"{fmt(v['frame_gbps'])} Gb/s (frames)")
        elif job.startswith("veth/kernel/udp_lat"):
            lines.append(f"- ping-pong, 138-B frames: typical RTT/2 {fmt(v['t_typical'])} µs")
    hops = [x["cpu_pair"]["hop_ns"] for x in res["runs"] if x.get("cpu_pair")]
    if hops:
        slow = sum(h > 100 for h in hops)
        lines += ["", f"CPU 0 <-> 1 before each bw run (`bench/cpu_pair`): {slow} of {len(hops)} runs "
                  f"started with a cache-line hand-over above 100 ns (the vCPUs on different L3s: "
                  f"runs whose payloads cross the cores are then 2-5x slower; per run in e2e.json)."]
    fails = [x for x in res["runs"] if "error" in x]
    if fails:
        lines += ["", f"Failed runs: {len(fails)} (first error of each job; full text in e2e.json):", ""]
        seen = set()
        for x in fails:
            if x["job"] + x["kind"] in seen:
                continue
            seen.add(x["job"] + x["kind"])
            err = [ln for ln in x["error"].splitlines() if ln.strip()]
            msg = next((ln for ln in err if re.search(r"(?i)error|fail|exceeded|refused", ln)), err[-1] if err else "")
            lines.append(f"- {x['kind']} {x['job']} rc {x['rc']}: `{msg.strip()[:160]}`")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
