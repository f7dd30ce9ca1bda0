#!/usr/bin/env python3
"""Hostile RDMA-CM clients against droce's CM server roles, over a veth pair with
net_af_packet (the set-up of hostile.py, whose helpers this reuses).

droce-rping -s: CM MADs built by cm.py from the kernel end of the veth: a REQ for a port
nobody listens on, a REQ for another transport, REP / RTU / DREQ / REJ / DREP / MRA for
connections that do not exist, malformed MADs (short, bad base version, class, class
version, method, attribute, a SIDR_REP's status), a MAD with a wrong Q_Key; each case
checks the answer on the wire (REJ and its reason, DREP, or nothing). Then a real droce-rping client
session against the same server (a second droce process on the other veth end), the
server's exit status and its CM counters (--counters), which must account for every
case. A second server takes a REQ flood (400 REQs, distinct comm IDs and source ports)
while one legitimate connection made by cm.py is up: every REQ is answered (rping's REJ
28, never a second REP: the CM's table of Timewait slots gives way), a REQ right after
still reaches the application, the server's memory stays put, the telemetry socket
answers; 200 REQs for a port with no listener get stateless REJs up to the burst and are
rate-limited beyond; the legitimate connection then disconnects cleanly (DREQ -> DREP)
and the server exits 0.

droce-nvmf (RAM disk): a CM connection by cm.py with the NVMe-oF RDMA private data, RTU,
capsules by SEND: too short (no response, counted), bad SGL type and bad opcode (NVMe
status in the response capsule), Connect for an unknown subsystem NQN (Fabrics Connect
Invalid Parameters naming SUBNQN); forged RDMA WRITE / READ / CMP_SWAP at the target's QP,
one connection each (it grants no remote rights: NAK invalid request, then the target's
DREQ); then droce-nvmf-perf -w verify against the same target passes, the target exits 0
on SIGINT and its counters show each case once.

Exit 77 (skip) when not root or when a veth pair cannot be made.
Usage: hostile_cm.py --rping PATH --nvmf PATH --nvmf-perf PATH [--only NAME] [-v]"""

import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cm  # noqa: E402
import hostile as H  # noqa: E402
import roce  # noqa: E402
from roce import (ACK, CMP_SWAP, SEND_ONLY, WRITE_ONLY, aeth, bth)  # noqa: E402

SKIP = 77
args = None
results = []  # (server, case, expected, got, ok, note)


def log(*a):
    if args.verbose:
        print(*a, flush=True)


def record(server, case, want, got, ok, note=''):
    results.append((server, case, want, got, ok, note))
    print('%-4s %-8s %-44s want %-16s got %-16s %s' % ('ok' if ok else 'FAIL', server, case, want,
                                                        got, note), flush=True)


def parse_counters(out):
    """The '  name value' lines droce's --counters prints (last value wins)."""
    c = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[1].isdigit():
            c[f[0]] = int(f[1])
    return c


def cm_live(srv):
    """The CM's counters as the running server publishes them (/droce/cm), {} if none."""
    c = srv.tel.q('/droce/cm,' + srv.dev) or {}
    return {} if 'error' in c else c


class LiveCheck:
    """Each case's CM counters, checked on the telemetry socket while the server runs:
    the counters the case expects moved by exactly as much since the previous case (the
    CM publishes every 1 ms: a short wait for the snapshot to catch up)."""

    def __init__(self, srv):
        self.srv, self.pending, self.bad, self.cases = srv, {}, [], 0
        self.snap = cm_live(srv)

    def expect(self, ctr, n=1):
        self.pending[ctr] = self.pending.get(ctr, 0) + n

    def check(self):
        if not self.pending:
            return
        end = time.time() + 2
        while True:
            now = cm_live(self.srv)
            diff = {k: now.get(k, 0) - self.snap.get(k, 0) for k in self.pending}
            if diff == self.pending or time.time() > end:
                break
            time.sleep(0.02)
        self.cases += 1
        if diff != self.pending:
            self.bad.append('want %s got %s' % (self.pending, diff))
        self.pending, self.snap = {}, now


def rss_kb(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


class CmClient:
    """Our side of the CM: MADs to droce's QP1 from the kernel end of the veth."""

    def __init__(self, wire, veth):
        self.w = wire
        self.my_ip, self.their_ip = roce.ip_bytes(veth.my_ip), roce.ip_bytes(veth.droce_ip)
        self.my_gid, self.their_gid = cm.ipv4_gid(self.my_ip), cm.ipv4_gid(self.their_ip)
        self.tid = 0x7000_0000
        self.comm = 0x1000_0000

    def next_tid(self):
        self.tid += 1
        return self.tid

    def next_comm(self):
        self.comm += 1
        return self.comm

    def frame(self, attr, body, tid=None, raw=None, **kw):
        wire_kw = {k: kw.pop(k) for k in ('qkey', 'src_qp') if k in kw}
        m = raw if raw is not None else cm.mad(attr, tid or self.next_tid(), body, **kw)
        return cm.gmp(self.w.ep, m, **wire_kw)

    def req_frame(self, port, comm_id, qpn, psn, private=b'', sport=0xD000, **kw):
        pd = cm.ip_cm_hdr(self.my_ip, sport, self.their_ip) + private
        body = cm.req(comm_id, cm.service_id(port), qpn, psn, self.my_gid, self.their_gid, pd,
                      **kw)
        return self.frame(cm.REQ, body)

    def mads(self, wait, n=1):
        """CM MADs droce sends within wait s (stops at n); other replies in self.other."""
        got = self.w.recv(wait, lambda g: sum(1 for r in g if cm.parse_reply(r)) >= n)
        self.other = [r for r in got if not cm.parse_reply(r)]
        return [cm.parse_reply(r) for r in got if cm.parse_reply(r)]


def kind(mads):
    if not mads:
        return 'DROP'
    m = mads[0]
    if m.attr == cm.REJ:
        return 'REJ%d' % m.reason
    return m.name()


def mad_case(srv, c, name, frames, want, wait=None, check=None):
    c.w.drain()
    for f in frames:
        c.w.send(f)
    got = c.mads(wait if wait is not None else (0.4 if want == 'DROP' else 2.0))
    if want != 'DROP':
        got += c.mads(0.05)
    react = kind(got)
    ok, note = react == want, ''
    if len(got) > 1:
        ok, note = False, '%d answers: %s' % (len(got), got)
    if ok and check:
        why = check(got)
        if why:
            ok, note = False, why
    record(srv, name, want, react, ok, note)
    return got


def malformed(c):
    """(name, frame, counter) for each MAD the CM's codec must drop."""
    t = c.next_tid
    d = cm.rtu(0x11, 0x22)
    return [
        ('MAD 100 bytes (short)', c.frame(0, None, raw=cm.mad(cm.RTU, t(), d)[:100]),
         'drop_bad_length'),
        ('MAD base version 2', c.frame(cm.RTU, d, base=2), 'drop_bad_base_version'),
        ('MAD class 0x04 (perf mgmt)', c.frame(cm.RTU, d, mclass=0x04), 'drop_not_cm_class'),
        ('MAD class version 1', c.frame(cm.RTU, d, cver=1), 'drop_bad_class_version'),
        ('MAD method GET', c.frame(cm.RTU, d, method=0x01), 'drop_bad_method'),
        ('MAD attribute 0x0099', c.frame(0x0099, d), 'drop_unknown_attribute'),
        ('SIDR_REP status 9', c.frame(cm.SIDR_REP, cm.sidr_rep(0x33, 9)), 'drop_bad_sidr_rep'),
    ]


def rping_server(veth, port, extra=()):
    ours = ['--ip', veth.droce_ip + '/24', '--mac', veth.droce_mac, '-s', '-p', str(port), '-V',
            '-S', '64', '--timeout', '40', '--counters'] + list(extra)
    return H.Server('rping', [args.rping] + H.eal(veth), ours, veth)


def rping_client(veth, port, count):
    """droce-rping -c from the other end of the veth (its own IP and MAC)."""
    ip = veth.net + '.3'
    mac = veth.droce_mac[:-2] + '03'
    cmd = [args.rping, '-l', '0', '--no-huge', '-m', '256', '--no-pci', '--no-shconf',
           '--vdev', 'net_af_packet0,iface=%s,qdisc_bypass=0' % veth.b, '--log-level=*:warning',
           '--file-prefix=droce-c%d' % os.getpid(), '--', '--ip', ip + '/24', '--mac', mac, '-c',
           '-a', veth.droce_ip, '-p', str(port), '-C', str(count), '-V', '-S', '64',
           '--timeout', '30']
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def finish(srv, sn, stop=False):
    if stop and srv.p.poll() is None:
        srv.p.send_signal(signal.SIGINT)
    rc, out = srv.finish(20)
    record(sn, 'server exit status', '0', str(rc), rc == 0, '' if rc == 0 else out[-600:])
    return parse_counters(out or '')


def run_rping(veth, wire):
    port = 30000 + os.getpid() % 20000
    srv = rping_server(veth, port)
    c = CmClient(wire, veth)
    want = {}  # CM counter -> how many the cases must have added
    live = LiveCheck(srv)

    def expect(ctr, n=1):
        want[ctr] = want.get(ctr, 0) + n
        live.expect(ctr, n)

    def case(*a, **kw):  # the previous case's counters first, on the socket
        live.check()
        return mad_case(*a, **kw)

    try:
        # The CM answers only once the tool polls it, i.e. after rdma_listen.
        end = time.time() + 15
        while time.time() < end and srv.p.poll() is None:
            c.w.send(c.req_frame(port + 1, c.next_comm(), 0x300, 1))
            if c.mads(0.5):
                expect('drop_req_no_listener')
                expect('rej_sent_invalid_service_id')
                break
        sid_ok = lambda g: None if g[0].remote_comm_id == c.comm else 'REJ names %08x' % (
            g[0].remote_comm_id)
        case('rping', c, 'REQ, port with no listener',
                 [c.req_frame(port + 2, c.next_comm(), 0x301, 1)], 'REJ8', check=sid_ok)
        expect('drop_req_no_listener')
        expect('rej_sent_invalid_service_id')
        case('rping', c, 'REQ, UC transport', [c.req_frame(port, c.next_comm(), 0x302, 1,
                                                               transport=1)], 'REJ9')
        expect('drop_req_bad_transport')
        expect('rej_sent_invalid_transport')
        case('rping', c, 'REP, no such connection',
                 [c.frame(cm.REP, cm.rep(c.next_comm(), 0xDEAD0001, 0x303, 5))], 'REJ6',
                 check=lambda g: None if g[0].msg_rejected == 1 else 'message rejected %d' %
                 g[0].msg_rejected)
        expect('drop_rep_unknown')
        expect('rej_sent_invalid_comm_id')
        case('rping', c, 'RTU, no such connection',
                 [c.frame(cm.RTU, cm.rtu(c.next_comm(), 0xDEAD0002))], 'DROP')
        expect('drop_rtu_unknown')
        case('rping', c, 'DREQ, no such connection',
                 [c.frame(cm.DREQ, cm.dreq(c.next_comm(), 0xDEAD0003, 0x42))], 'DREP',
                 check=lambda g: None if g[0].remote_comm_id == c.comm else 'DREP names %08x' %
                 g[0].remote_comm_id)
        expect('drop_dreq_unknown')
        case('rping', c, 'REJ, no such connection',
                 [c.frame(cm.REJ, cm.rej(c.next_comm(), 0xDEAD0004, 28))], 'DROP')
        expect('drop_rej_unknown')
        case('rping', c, 'DREP, no such connection',
                 [c.frame(cm.DREP, cm.drep(c.next_comm(), 0xDEAD0005))], 'DROP')
        expect('drop_drep_unknown')
        case('rping', c, 'MRA, no such connection',
                 [c.frame(cm.MRA, struct.pack('!II', c.next_comm(), 0xDEAD0006))], 'DROP')
        expect('drop_mra_unknown')
        for name, f, ctr in malformed(c):
            case('rping', c, name, [f], 'DROP')
            expect(ctr)
        # A REQ to the listening port under a Q_Key that is not QP1's: the UD QP drops it
        # before the CM sees it (it would otherwise be accepted: REP).
        before = srv.tel.counters(srv.dev)
        case('rping', c, 'REQ with Q_Key 0x11111111',
                 [c.frame(0, None, raw=cm.mad(cm.REQ, c.next_tid(), cm.req(
                     c.next_comm(), cm.service_id(port), 0x304, 1, c.my_gid, c.their_gid,
                     cm.ip_cm_hdr(c.my_ip, 0xD001, c.their_ip))), qkey=0x11111111)], 'DROP')
        after = srv.tel.counters(srv.dev)
        moved = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
        log('   moved:', moved)
        qk = [k for k in moved if 'qkey' in k]
        record('rping', 'Q_Key drop counted (telemetry)', 'a *qkey* counter',
               ','.join(qk) or 'none', bool(qk), str(moved))
        live.check()
        record('rping', 'CM counters live (/droce/cm)', '%d cases' % live.cases,
               '%d wrong' % len(live.bad), live.cases > 10 and not live.bad, '; '.join(live.bad))
        # The real thing: a droce-rping client session against the same server.
        t0 = time.time()
        cl = rping_client(veth, port, 3)
        record('rping', 'droce-rping -c -C 3 -V after the cases', 'exit 0',
               'exit %d' % cl.returncode, cl.returncode == 0,
               '%.1f s' % (time.time() - t0) if cl.returncode == 0 else
               (cl.stdout + cl.stderr)[-600:])
    except Exception:
        srv.kill()
        raise
    got = finish(srv, 'rping')
    for ctr, n in sorted(want.items()):
        v = got.get(ctr, 0)
        record('rping', 'counter ' + ctr, '%d' % n, '%d' % v, v == n)
    record('rping', 'a connection established', 'est_passive 1', 'est_passive %d' %
           got.get('est_passive', 0), got.get('est_passive', 0) == 1)


def run_flood(veth, wire, n_flood=400, n_unknown=200):
    port = 30000 + (os.getpid() + 7) % 20000
    srv = rping_server(veth, port)
    c = CmClient(wire, veth)
    try:
        # One legitimate connection first (our QP 0x400; the server's REP names its QP).
        cid, qpn, psn = c.next_comm(), 0x400, 0x100
        end, rep, tries = time.time() + 15, None, 0
        while time.time() < end and rep is None:
            tries += 1
            c.w.send(c.req_frame(port, cid, qpn, psn))
            got = c.mads(1.0)
            rep = next((m for m in got if m.attr == cm.REP and m.remote_comm_id == cid), None)
        record('flood', 'REQ to the listener', 'REP', rep.name() if rep else 'none', bool(rep))
        if not rep:
            raise RuntimeError('no REP')
        c.w.send(c.frame(cm.RTU, cm.rtu(cid, rep.local_comm_id), tid=rep.tid))
        time.sleep(0.2)
        rss0 = rss_kb(srv.p.pid)
        t0 = time.time()
        frames = [c.req_frame(port, c.next_comm(), 0x1000 + i, i, sport=0xE000 + i)
                  for i in range(n_flood)]
        c.w.drain()
        for f in frames:
            c.w.send(f)
        got = c.mads(1.5, n_flood)
        dt = time.time() - t0
        by = {}
        for m in got:
            by[kind([m])] = by.get(kind([m]), 0) + 1
        reps = by.get('REP', 0)
        ok = reps == 0 and 0 < len(got) <= n_flood and all(k.startswith('REJ') for k in by)
        record('flood', '%d REQs, distinct comm IDs' % n_flood, 'REJ only, <= %d' % n_flood,
               ','.join('%s:%d' % kv for kv in sorted(by.items())), ok, '%.1f s' % dt)
        rss1 = rss_kb(srv.p.pid)
        record('flood', 'server RSS after the flood', '< +4096 kB', '+%d kB' % (rss1 - rss0),
               rss1 - rss0 < 4096)
        st = srv.tel.counters(srv.dev)
        record('flood', 'telemetry answers', 'counters', 'counters' if st else 'nothing',
               bool(st))
        # The table is full of the flood's Timewait slots: one of them gives way to a new
        # REQ, which rping's application then rejects (one connection at a time: 28)
        # rather than the CM having no room for it (3). After the stateless burst.
        time.sleep(0.2)
        mad_case('flood', c, 'REQ right after the flood',
                 [c.req_frame(port, c.next_comm(), 0x3000, 1, sport=0xF000)], 'REJ28')
        # The same towards a port nobody listens on: stateless REJs, rate-limited
        # beyond CmConfig's burst (64) and rate (1000/s).
        frames = [c.req_frame(port + 1, c.next_comm(), 0x2000 + i, i, sport=0xE800 + i)
                  for i in range(n_unknown)]
        c.w.drain()
        for f in frames:
            c.w.send(f)
        got = c.mads(1.0, n_unknown)
        rej8 = sum(1 for m in got if kind([m]) == 'REJ8')
        record('flood', '%d REQs for a port with no listener' % n_unknown, 'REJ8 only, < %d' %
               n_unknown, 'REJ8:%d other:%d' % (rej8, len(got) - rej8),
               0 < rej8 < n_unknown and rej8 == len(got))
        # The same on the telemetry socket, while the server runs: every unknown-port REQ
        # either answered (as many REJs as the wire carried) or rate-limited.
        end = time.time() + 2
        while True:
            lc = cm_live(srv)
            sent, lim = lc.get('rej_sent_invalid_service_id', 0), lc.get(
                'stateless_rate_limited', 0)
            if sent + lim >= n_unknown or time.time() > end:
                break
            time.sleep(0.02)
        record('flood', 'live /droce/cm: REJ sent + rate-limited', '%d' % n_unknown,
               '%d + %d' % (sent, lim), sent + lim == n_unknown and lim > 0 and sent == rej8,
               'timewait_evicted %d, age %s ms' % (lc.get('timewait_evicted', 0),
                                                   lc.get('age_ms')))
        record('flood', 'live /droce/cm: Timewait slots given way', '> 0',
               '%d' % lc.get('timewait_evicted', 0), lc.get('timewait_evicted', 0) > 0)
        # The legitimate connection is still there: DREQ -> DREP, and the server ends.
        c.w.drain()
        c.w.send(c.frame(cm.DREQ, cm.dreq(cid, rep.local_comm_id, rep.qpn)))
        g = [m for m in c.mads(2.0, 1) if m.attr == cm.DREP]
        record('flood', 'DREQ of the legitimate connection', 'DREP',
               g[0].name() if g else 'none', bool(g) and g[0].remote_comm_id == cid)
    except Exception:
        srv.kill()
        raise
    ctr = finish(srv, 'flood')
    log('   flood counters:', {k: v for k, v in ctr.items() if v and ('req' in k or 'rej' in k or
                               'stateless' in k or 'mad' in k or 'tx_' in k or 'timewait' in k)})
    g = ctr.get
    # Every flood REQ reached the CM and was rejected by the application (rping takes one
    # connection at a time: reason 28): a slot was found for each, the table's Timewait
    # ones giving way. The legitimate REQ (sent `tries` times until the CM was up) is
    # answered by its REP (again).
    n_rx = n_flood + 1 + n_unknown
    record('flood', 'REQs at the listener rejected by rping', '%d' % (n_flood + 1),
           '%d' % g('rej_sent_consumer', 0), g('rej_sent_consumer', 0) == n_flood + 1 and
           n_rx < g('rx_req', 0) <= n_rx + tries, 'rx_req %d' % g('rx_req', 0))
    record('flood', 'Timewait slots given way', '> 0', '%d' % g('timewait_evicted', 0),
           g('timewait_evicted', 0) > 0 and g('drop_req_no_resources', 0) == 0)
    # Stateless REJs: each either sent (and seen on the wire) or rate-limited.
    record('flood', 'unknown-port REQs: REJ sent + rate-limited', '%d' % n_unknown,
           '%d + %d' % (g('rej_sent_invalid_service_id', 0), g('stateless_rate_limited', 0)),
           g('rej_sent_invalid_service_id', 0) + g('stateless_rate_limited', 0) == n_unknown and
           g('stateless_rate_limited', 0) > 0 and g('rej_sent_invalid_service_id', 0) == rej8)
    record('flood', 'one connection only', 'est_passive 1', 'est_passive %d' %
           g('est_passive', 0), g('est_passive', 0) == 1)


# ---- NVMe-oF ----

NVMF_PORT = 4420


def nvmf_priv(qid=0, hrqsize=32, hsqsize=31):
    """NVMe-oF RDMA CM REQ private data (recfmt 0, QID, HRQSIZE, HSQSIZE, reserved)."""
    return struct.pack('<HHHH', 0, qid, hrqsize, hsqsize) + bytes(24)


def connect_capsule(cid, subnqn, hostnqn, qid=0, sqsize=31):
    """Fabrics Connect with its 1024 bytes of data in the capsule (SGL data block,
    offset 0): SQE (64 bytes) + data."""
    sqe = bytearray(64)
    sqe[0], sqe[1] = 0x7F, 0x40  # Fabrics; PSDT 01: SGL
    struct.pack_into('<H', sqe, 2, cid)
    sqe[4] = 0x01  # fctype Connect
    struct.pack_into('<QI', sqe, 24, 0, 1024)
    sqe[39] = 0x01  # SGL data block, subtype offset
    struct.pack_into('<HHHHI', sqe, 40, 0, qid, sqsize, 0, 0)
    data = bytearray(1024)
    data[0:16] = bytes(range(16))  # host ID
    struct.pack_into('<H', data, 16, 0xFFFF)  # any controller
    data[256:256 + len(subnqn)] = subnqn.encode()
    data[512:512 + len(hostnqn)] = hostnqn.encode()
    return bytes(sqe) + bytes(data)


def cqe_status(p):
    """(cid, SCT, SC, DW0) of a 16-byte NVMe completion."""
    dw0, _, _, _, cid, st = struct.unpack('<IIHHHH', p[:16])
    return cid, (st >> 9) & 7, (st >> 1) & 0xFF, dw0


class NvmfHost:
    """One admin-queue connection of ours to the target: CM, then capsules by SEND."""

    def __init__(self, c, wire, qpn, psn):
        self.c, self.w = c, wire
        self.cid, self.qpn = c.next_comm(), qpn
        end, self.rep = time.time() + 15, None
        while time.time() < end and self.rep is None:
            c.w.send(c.req_frame(NVMF_PORT, self.cid, qpn, psn, private=nvmf_priv(),
                                 sport=0xC000 + qpn))
            got = c.mads(1.0)
            self.rep = next((m for m in got if m.attr in (cm.REP, cm.REJ) and
                             m.remote_comm_id == self.cid), None)
        if self.rep is None or self.rep.attr != cm.REP:
            return
        c.w.send(c.frame(cm.RTU, cm.rtu(self.cid, self.rep.local_comm_id), tid=self.rep.tid))
        # The REP's starting PSN is the one the target expects from us first (the REQ's
        # is the one we expect from it).
        self.q = H.Qp(wire, qpn, self.rep.psn, self.rep.qpn)

    def ok(self):
        return self.rep is not None and self.rep.attr == cm.REP

    def disconnect(self):
        self.c.w.drain()
        self.c.w.send(self.c.frame(cm.DREQ, cm.dreq(self.cid, self.rep.local_comm_id,
                                                    self.rep.qpn)))
        return [m for m in self.c.mads(2.0) if m.attr in (cm.DREP, cm.DREQ)]


def run_nvmf(veth, wire):
    nqn = 'nqn.2014-08.org.droce:hostile'
    ours = ['--ip', veth.droce_ip + '/24', '--mac', veth.droce_mac, '--ram', '4M', '--nqn', nqn,
            '-p', str(NVMF_PORT), '--counters']
    srv = H.Server('nvmf', [args.nvmf] + H.eal(veth), ours, veth)
    c = CmClient(wire, veth)
    sends = []  # the target's SENDs (response capsules)
    peer = {}

    def on_request(p):  # ACK them as an RC requester's responder would
        sends.append(p)
        if 'qpn' in peer:
            wire.send(wire.ep.frame(bth(ACK, peer['qpn'], p.psn, ack_req=False) +
                                    aeth(0x1F, len(sends))))

    wire.on_request = on_request
    chk = H.Check(srv, wire, 'nvmf')
    hostnqn = 'nqn.2014-08.org.nvmexpress:uuid:hostile'
    try:
        h = NvmfHost(c, wire, 0x500, 0x2000)
        rfmt = struct.unpack('<HH', h.rep.private[:4]) if h.ok() else None
        record('nvmf', 'REQ with NVMe-oF private data (QID 0)', 'REP recfmt 0',
               '%s %s' % (h.rep.name() if h.rep else 'none', rfmt), h.ok() and rfmt[0] == 0)
        if not h.ok():
            raise RuntimeError('no REP')
        peer['qpn'] = h.rep.qpn
        time.sleep(0.1)
        q = h.q

        def capsule_case(name, payload, want_status):
            """SEND payload (SEND_FIRST/LAST beyond 1024 bytes); want_status: None for no
            response capsule, else (SCT, SC[, DW0])."""
            del sends[:]
            if len(payload) <= 1024:
                frames = [q.f_send(SEND_ONLY, q.next_psn(), payload)]
            else:
                frames = [q.f_send(roce.SEND_FIRST, q.next_psn(), payload[:1024], ack_req=False),
                          q.f_send(roce.SEND_LAST, q.next_psn(), payload[1024:])]
            chk.case(name + ': ACK', frames, 'ACK')
            end = time.time() + (0.5 if want_status is None else 2.0)
            while time.time() < end and not sends:
                wire.recv(0.05)
            got = [cqe_status(p.payload) for p in sends]
            if want_status is None:
                record('nvmf', name + ': response', 'none', str(got) if got else 'none', not got)
            else:
                st = got[0][1:1 + len(want_status)] if got else None
                record('nvmf', name + ': response', 'SCT %d SC 0x%02x' % want_status[:2] +
                       (' DW0 0x%x' % want_status[2] if len(want_status) > 2 else ''),
                       'SCT %d SC 0x%02x DW0 0x%x' % got[0][1:] if got else 'none',
                       len(got) == 1 and st == tuple(want_status))

        capsule_case('capsule 32 B (short)', bytes(range(32)), None)
        bad = bytearray(64)
        bad[0], bad[1] = 0xFF, 0x40
        struct.pack_into('<H', bad, 2, 0x77)
        # SGL1 type 0 (data block, address): not one NVMe/RDMA takes -> SGL Descriptor
        # Type Invalid; a keyed SGL of 0 bytes passes, the opcode before Connect is then a
        # Command Sequence Error.
        capsule_case('capsule opcode 0xFF, SGL type 0', bytes(bad), (0, 0x11))
        bad[39] = 0x40
        capsule_case('capsule opcode 0xFF before Connect', bytes(bad), (0, 0x0C))
        capsule_case('Connect, unknown subsystem NQN',
                     connect_capsule(0x78, 'nqn.2014-08.org.droce:nope', hostnqn),
                     (1, 0x82, (1 << 16) | 256))
        # The target grants no remote rights (QP access 0, local-write MRs): an RDMA
        # access from the host is an invalid request (NAK), whatever key it names. Each
        # NAK leaves the target's QP in ERR: one connection per access.
        h.disconnect()
        hosts = [h]
        for i, (name, build) in enumerate((
                ('forged WRITE 64 B', lambda q: q.f_write(WRITE_ONLY, q.next_psn(), 0x1000, 0,
                                                          64, 64)),
                ('forged READ 64 B', lambda q: q.f_read(q.next_psn(), 0x1000, 0x100, 64)),
                ('forged CMP_SWAP', lambda q: q.f_atomic(CMP_SWAP, q.next_psn(), 0x1000, 0x100,
                                                         1)))):
            hh = NvmfHost(c, wire, 0x600 + i, 0x3000)
            if not hh.ok():
                record('nvmf', name + ': connect', 'REP', 'none', False)
                continue
            time.sleep(0.1)
            wire.drain()
            wire.send(build(hh.q))
            got = wire.recv(2.0, lambda g: any(not cm.parse_reply(r) for r in g) and
                            any(cm.parse_reply(r) for r in g))
            got += wire.recv(0.05)
            rc = [r for r in got if not cm.parse_reply(r)]
            mads = [cm.parse_reply(r) for r in got if cm.parse_reply(r)]
            react = rc[0].kind() if rc else 'DROP'
            record('nvmf', name, 'NAK61', react, react == 'NAK61' and len(rc) == 1,
                   '' if len(rc) <= 1 else '%d replies: %s' % (len(rc), rc))
            # The QP is in ERR: the target disconnects (DREQ), we answer DREP.
            dq = [m for m in mads if m.attr == cm.DREQ]
            record('nvmf', name + ': target disconnects', 'DREQ',
                   ','.join(m.name() for m in mads) or 'none', len(dq) == 1)
            if dq:
                wire.send(c.frame(cm.DREP, cm.drep(hh.cid, dq[0].local_comm_id), tid=dq[0].tid))
            else:
                hh.disconnect()
            hosts.append(hh)
        results.extend(H.results)  # printed by hostile.record already
        del H.results[:]
        # The target still serves a real host: droce-nvmf-perf -w verify from the other
        # end of the veth.
        wire.on_request = None
        ip, mac = veth.net + '.3', veth.droce_mac[:-2] + '03'
        cmd = [args.nvmf_perf, '-l', '0', '--no-huge', '-m', '256', '--no-pci', '--no-shconf',
               '--vdev', 'net_af_packet0,iface=%s,qdisc_bypass=0' % veth.b,
               '--log-level=*:warning', '--file-prefix=droce-i%d' % os.getpid(), '--', '--ip',
               ip + '/24', '--mac', mac, '-a', veth.droce_ip, '-n', nqn, '-w', 'verify', '-q',
               '4', '-t', '1', '--timeout', '30']
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        res = [line for line in r.stdout.splitlines() if line.startswith('result:')]
        ok = r.returncode == 0 and res and 'errors=0 mismatches=0' in res[0]
        record('nvmf', 'droce-nvmf-perf -w verify after the cases', 'exit 0, no errors',
               'exit %d' % r.returncode, bool(ok), '%.1f s %s' % (time.time() - t0, res[0])
               if ok else (r.stdout + r.stderr)[-800:])
    except Exception:
        srv.kill()
        raise
    ctr = finish(srv, 'nvmf', stop=True)
    log('   nvmf counters:', {k: v for k, v in ctr.items() if v})
    # Each case once: the target's core (capsule checks, Connect), its RDMA glue, and
    # the engine's responder (an RDMA access the QP does not allow).
    for k, n in (('capsule_too_short', 1), ('rdma_capsules_dropped', 1), ('st_sgl_type', 1),
                 ('st_cmd_seq', 1), ('connect_unknown_subsys', 1), ('resp_op_not_allowed', 3),
                 ('rdma_wc_errors', 0), ('rdma_read_errors', 0)):
        v = ctr.get(k, 0)
        record('nvmf', 'counter ' + k, '%d' % n, '%d' % v, v == n)


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument('--rping', required=True)
    ap.add_argument('--nvmf', required=True)
    ap.add_argument('--nvmf-perf', required=True)
    ap.add_argument('--only', default='')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    H.args = args
    if os.geteuid() != 0:
        print('SKIP: needs root (veth pair, AF_PACKET)')
        return SKIP
    veth = H.Veth()
    t0 = time.time()
    try:
        if not veth.up():
            print('SKIP: cannot create a veth pair')
            return SKIP
        wire = H.Wire(veth)
        # The flood's answers arrive faster than we read them: room for all of them.
        wire.s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE (root)
        if args.only in ('', 'rping'):
            run_rping(veth, wire)
        if args.only in ('', 'flood'):
            run_flood(veth, wire)
        if args.only in ('', 'nvmf'):
            run_nvmf(veth, wire)
    finally:
        veth.down()
    fails = [r for r in results if not r[4]]
    print('%d cases, %d failed, %.1f s' % (len(results), len(fails), time.time() - t0))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
