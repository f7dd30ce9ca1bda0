#!/usr/bin/env python3
"""Hostile clients against droce's server roles, over a veth pair with net_af_packet.

For droce-perf (write_bw, read_bw, send_bw, atomic_bw) and droce-pingpong as servers: do
the tool's real TCP exchange as a client would (perftest's, ibv_rc_pingpong's), then send
hand-built RoCEv2 frames from the kernel end of the veth and check per case the reaction
on the wire (ACK, NAK syndrome, silent drop, READ/atomic response), the counter that moves
(over the telemetry socket, as droce-info reads it), the server QP's state (RTS, or ERR
where verbs puts it) and, at the end, the server's exit status. Memory: where the test
grants READ (read_bw) the whole MR is read back through that right and compared with a
snapshot; where it grants ATOMIC (atomic_bw) the words are read with FETCH_ADD 0; send_bw
and droce-pingpong report what they received (iterations; -c page check); write_bw exposes
nothing, so only the reaction proves no write happened.

Also the control surface: the runtime directory and telemetry socket are owner-only, and
malformed or oversized telemetry requests get an error, the process lives on.

Exit 77 (skip) when not root or when a veth pair cannot be made.
Usage: hostile.py --perf PATH --pingpong PATH [--only NAME] [-v]"""

import argparse
import json
import os
import select
import shlex
import socket
import stat
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import roce  # noqa: E402
from roce import (ACK, CMP_SWAP, FETCH_ADD, READ_REQUEST, SEND_FIRST,  # noqa: E402
                  SEND_MIDDLE, SEND_ONLY, WRITE_FIRST, WRITE_MIDDLE, WRITE_ONLY, aeth,
                  atomic_eth, bth, reth)

SKIP = 77
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
MTU = 1024

args = None
results = []  # (server, case, expected, got, ok, note)


def log(*a):
    if args.verbose:
        print(*a, flush=True)


def sh(cmd, check=True):
    return subprocess.run(cmd, shell=True, check=check, capture_output=True, text=True)


class Veth:
    def __init__(self):
        n = os.getpid() % 200 + 20
        self.a, self.b = 'hsa%d' % os.getpid(), 'hsb%d' % os.getpid()
        self.a, self.b = self.a[:15], self.b[:15]
        self.net = '10.79.%d' % n
        self.my_ip, self.droce_ip = self.net + '.1', self.net + '.2'
        self.droce_mac = '02:00:00:79:%02x:02' % n
        self.made = False

    def up(self):
        r = sh('ip link add %s type veth peer name %s' % (self.a, self.b), check=False)
        if r.returncode != 0:
            return False
        self.made = True
        for ifc in (self.a, self.b):
            p = '/proc/sys/net/ipv6/conf/%s/disable_ipv6' % ifc
            if os.path.exists(p):
                with open(p, 'w') as f:
                    f.write('1')  # no router solicitations etc. on the wire we watch
            # 9000 on both ends: an oversized frame reaches droce (its port's MTU is 1500)
            sh('ip link set %s mtu 9000 up' % ifc)
        sh('ip addr add %s/24 dev %s' % (self.my_ip, self.b))  # the kernel answers droce's ARP
        with open('/sys/class/net/%s/address' % self.b) as f:
            self.my_mac = f.read().strip()
        return True

    def down(self):
        if self.made:
            sh('ip link del %s' % self.a, check=False)


class Telemetry:
    """DPDK's telemetry v2 socket: JSON over SOCK_SEQPACKET."""

    def __init__(self, pid, timeout=15):
        self.dir = '/var/run/dpdk/droce-%d' % pid
        self.path = self.dir + '/dpdk_telemetry.v2'
        end = time.time() + timeout
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self.s.connect(self.path)
                break
            except OSError:
                self.s.close()
                if time.time() > end or not os.path.exists('/proc/%d' % pid):
                    raise
                time.sleep(0.1)
        self.s.settimeout(5)
        self.hello = json.loads(self.s.recv(65536))

    def raw(self, data):
        self.s.send(data)
        return self.s.recv(1 << 20)

    def q(self, cmd):
        return json.loads(self.raw(cmd.encode())).get(cmd.split(',')[0])

    def dev(self):
        d = self.q('/droce/devices')
        return d[0] if isinstance(d, list) else list(d)[0]

    def counters(self, dev):
        return self.q('/droce/counters,' + dev)

    def qp_state(self, dev, qpn):
        q = self.q('/droce/qps,' + dev) or {}
        text = ' '.join(q.get('0x%06x' % qpn, []))
        return text.split()[1] if text.startswith('state ') else text


class Wire:
    def __init__(self, veth):
        self.v = veth
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.s.bind((veth.b, 0))
        self.ep = roce.Endpoints(veth.my_mac, veth.droce_mac, veth.my_ip, veth.droce_ip)
        self.droce_mac = roce.mac_bytes(veth.droce_mac)
        self.on_request = None  # called with Replies that are requests droce sends us

    def send(self, frame):
        self.s.send(frame)

    def recv(self, wait, until=None):
        """RoCE packets from droce for `wait` s, or until until(list) is true."""
        got, end = [], time.time() + wait
        while True:
            left = end - time.time()
            if left <= 0 or (until and until(got)):
                return got
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                continue
            data, addr = self.s.recvfrom(65536)
            if addr[2] == PACKET_OUTGOING:
                continue
            p = roce.parse(data, self.droce_mac)
            if p is None:
                continue
            if p.opcode <= 0x0B and self.on_request:  # droce's own SENDs (pingpong)
                self.on_request(p)
                continue
            got.append(p)

    def drain(self):
        self.recv(0.05)


class Qp:
    """Our side of one connection: what the server told us, our QPN and next PSN."""

    def __init__(self, wire, qpn, psn, rqpn, rkey=0, vaddr=0):
        self.w, self.qpn, self.psn, self.rqpn = wire, qpn, psn, rqpn
        self.rkey, self.vaddr = rkey, vaddr

    def next_psn(self, n=1):
        p = self.psn
        self.psn = (self.psn + n) & 0xFFFFFF
        return p

    def f_write(self, op, psn, va, rkey, dma_len, n, **kw):
        hdr = bth(op, self.rqpn, psn, pad=(-n) % 4, **kw)
        if op in (WRITE_FIRST, WRITE_ONLY):
            hdr += reth(va, rkey, dma_len)
        return self.w.ep.frame(hdr, bytes((i * 7 + 3) & 0xFF for i in range(n)), pad=(-n) % 4)

    def f_read(self, psn, va, rkey, n, **kw):
        return self.w.ep.frame(bth(READ_REQUEST, self.rqpn, psn, **kw) + reth(va, rkey, n))

    def f_atomic(self, op, psn, va, rkey, add, cmp=0, **kw):
        return self.w.ep.frame(bth(op, self.rqpn, psn, **kw) + atomic_eth(va, rkey, add, cmp))

    def f_send(self, op, psn, payload, **kw):
        return self.w.ep.frame(bth(op, self.rqpn, psn, pad=(-len(payload)) % 4, **kw), payload,
                               pad=(-len(payload)) % 4)

    def read(self, va, n):
        """A legitimate READ: the bytes, or None."""
        psn = self.next_psn((n + MTU - 1) // MTU or 1)
        self.w.send(self.f_read(psn, va, self.rkey, n))
        want = (n + MTU - 1) // MTU or 1
        got = self.w.recv(3, lambda g: len(g) >= want)
        if len(got) != want or any(g.kind() != 'READ_RESP' for g in got):
            log('read: got', got)
            return None
        return b''.join(g.payload for g in got)

    def fadd(self, va, add):
        self.w.send(self.f_atomic(FETCH_ADD, self.next_psn(), va, self.rkey, add))
        got = self.w.recv(3, lambda g: len(g) >= 1)
        return got[0].orig if got and got[0].kind() == 'ATOMIC_ACK' else None


def classify(got):
    if not got:
        return 'DROP'
    return got[0].kind()


class Server:
    def __init__(self, name, argv_eal, argv_ours, veth):
        self.name = name
        cmd = ' '.join(shlex.quote(a) for a in argv_eal) + ' --file-prefix=droce-$$ -- ' + \
            ' '.join(shlex.quote(a) for a in argv_ours)
        self.p = subprocess.Popen(['sh', '-c', 'exec ' + cmd], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            self.tel = Telemetry(self.p.pid)
        except OSError:
            self.kill()
            print(self.p.stdout.read())
            raise
        end = time.time() + 15
        try:
            while True:  # telemetry is up before the tool has opened its device
                d = self.tel.q('/droce/devices')
                if d or time.time() > end:
                    break
                time.sleep(0.05)
            self.dev = self.tel.dev()
        except (OSError, ValueError):
            # The tool went away while starting (its socket closed, or an empty answer):
            # say why it did.
            self.kill()
            print('%s exited while starting (exit %s):' % (name, self.p.returncode))
            print(self.p.stdout.read())
            raise

    def finish(self, timeout=15):
        try:
            out, _ = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            out, _ = self.p.communicate()
            return None, out
        return self.p.returncode, out

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def eal(veth):
    return ['-l', '0', '--no-huge', '-m', '256', '--no-pci', '--no-shconf',
            '--vdev', 'net_af_packet0,iface=%s,qdisc_bypass=0' % veth.a, '--log-level=*:warning']


def tcp_connect(port, timeout=15):
    end = time.time() + timeout
    while True:
        try:
            return socket.create_connection(('127.0.0.1', port), timeout=10)
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.1)


def recv_exact(s, n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError('server closed the exchange')
        b += c
    return b


def gid_of(ip):
    return bytes(10) + b'\xff\xff' + roce.ip_bytes(ip)


def perf_record(qpn, psn, gid, rkey=0, vaddr=0):
    s = '%04x:%04x:%06x:%06x:%08x:%016x:' % (0, 1, qpn, psn, rkey, vaddr)
    s += ''.join('%02x:' % b for b in gid) + '%08x:' % 0
    return s.encode().ljust(108, b'\0')


def perf_parse(rec):
    f = rec.split(b'\0')[0].decode().split(':')
    return {'qpn': int(f[2], 16), 'psn': int(f[3], 16), 'rkey': int(f[4], 16),
            'vaddr': int(f[5], 16)}


class Check:
    """Runs one case: counters before/after, the reaction, the QP state."""

    def __init__(self, srv, wire, server_name):
        self.srv, self.w, self.sn = srv, wire, server_name

    def case(self, name, frames, want, counter=None, qp=None, qp_state=None, wait=None,
             check=None):
        snap = counter or want == 'DROP'
        before = self.srv.tel.counters(self.srv.dev) if snap else None
        self.w.drain()
        for f in frames:
            self.w.send(f)
        if wait is None:
            wait = 0.4 if want == 'DROP' else 2.0
        got = self.w.recv(wait, None if want == 'DROP' else (lambda g: len(g) >= 1))
        if want != 'DROP':
            got += self.w.recv(0.05)  # anything more than one answer shows too
        react = classify(got)
        ok, notes = react == want, []
        if len(got) > 1 and want not in ('READ_RESP',):
            ok, notes = False, notes + ['%d replies: %s' % (len(got), got)]
        if any(not g.icrc_ok for g in got):
            ok, notes = False, notes + ['reply with a bad ICRC']
        if snap:
            time.sleep(0.02)
            after = self.srv.tel.counters(self.srv.dev)
            moved = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
            log('   moved:', moved)
        if counter:
            if counter not in after:
                ok, notes = False, notes + ['no counter %s' % counter]
            else:
                d = after[counter] - before.get(counter, 0)
                notes.append('%s +%d' % (counter, d))
                ok = ok and d >= 1
        if qp is not None and qp_state:
            st = self.srv.tel.qp_state(self.srv.dev, qp.rqpn)
            notes.append('QP ' + st)
            ok = ok and st == qp_state
        if check:
            c_ok, c_note = check(got)
            ok = ok and c_ok
            notes.append(c_note)
        record(self.sn, name, want + ('/' + qp_state if qp_state else ''), react, ok,
               '; '.join(notes))
        return got


def record(server, case, want, got, ok, note=''):
    results.append((server, case, want, got, ok, note))
    print('%s %-10s %-52s want %-14s got %-10s %s' % ('ok  ' if ok else 'FAIL', server, case, want,
                                                       got, note), flush=True)


# ---------------------------------------------------------------- droce-perf ----

RIGHT = {'write_bw': 'W', 'read_bw': 'R', 'send_bw': '', 'atomic_bw': 'A'}


def perf_fatal_cases(mode):
    """(name, build(qp, ctx) -> frames, reaction, counter): each kills its QP."""
    r = RIGHT[mode]
    c = []
    if r != 'W':
        c.append(('WRITE without REMOTE_WRITE',
                  lambda q, x: [q.f_write(WRITE_ONLY, q.next_psn(), q.vaddr, q.rkey, 64, 64)],
                  'NAK61', 'resp_op_not_allowed'))
    if r != 'R':
        c.append(('READ without REMOTE_READ',
                  lambda q, x: [q.f_read(q.next_psn(), q.vaddr, q.rkey, 64)], 'NAK61',
                  'resp_op_not_allowed'))
    if r != 'A':
        c.append(('FETCH_ADD without REMOTE_ATOMIC',
                  lambda q, x: [q.f_atomic(FETCH_ADD, q.next_psn(), q.vaddr, q.rkey, 1)],
                  'NAK61', 'resp_op_not_allowed'))
    if r:
        def op(q, va, rkey, n=64):
            if r == 'W':
                return q.f_write(WRITE_ONLY, q.next_psn(), va, rkey, n, min(n, 64))
            if r == 'R':
                return q.f_read(q.next_psn(), va, rkey, n)
            return q.f_atomic(FETCH_ADD, q.next_psn(), va, rkey, 1)
        c += [
            ('forged rkey (generation bits)', lambda q, x: [op(q, q.vaddr, q.rkey ^ 0x40)],
             'NAK62', 'resp_remote_access_error'),
            ('forged rkey (other slot)', lambda q, x: [op(q, q.vaddr, q.rkey + 0x1000)],
             'NAK62', 'resp_remote_access_error'),
            ('VA below the MR', lambda q, x: [op(q, x['base'] - 64, q.rkey)], 'NAK62',
             'resp_remote_access_error'),
            ('VA past the MR', lambda q, x: [op(q, x['base'] + x['len'], q.rkey)], 'NAK62',
             'resp_remote_access_error'),
        ]
        if r == 'A':
            c.append(('misaligned atomic', lambda q, x: [op(q, q.vaddr + 4, q.rkey)], 'NAK61',
                      'resp_invalid_request'))
        else:
            c.append(('length overrun (inside, runs past the end)',
                      lambda q, x: [op(q, x['base'] + x['len'] - 32, q.rkey, 64)], 'NAK62',
                      'resp_remote_access_error'))
    if r == 'W':
        c.append(('WRITE_MIDDLE without FIRST',
                  lambda q, x: [q.f_write(WRITE_MIDDLE, q.next_psn(), 0, 0, 0, MTU)], 'NAK61',
                  'resp_invalid_request'))
        c.append(('WRITE_ONLY payload > path MTU',
                  lambda q, x: [q.f_write(WRITE_ONLY, q.next_psn(), q.vaddr, q.rkey, 1400, 1400)],
                  'NAK61', 'resp_invalid_request'))
        c.append(('WRITE_FIRST while a WRITE is open',
                  lambda q, x: [q.f_write(WRITE_FIRST, q.next_psn(), q.vaddr, q.rkey, 4096, MTU,
                                          ack_req=False),
                                q.f_write(WRITE_FIRST, q.next_psn(), q.vaddr, q.rkey, 4096, MTU)],
                  'NAK61', 'resp_invalid_request'))
        c.append(('READ inside a WRITE',
                  lambda q, x: [q.f_write(WRITE_FIRST, q.next_psn(), q.vaddr, q.rkey, 4096, MTU,
                                          ack_req=False),
                                q.f_read(q.next_psn(), q.vaddr, q.rkey, 8)],
                  'NAK61', 'resp_invalid_request'))
        c.append(('WRITE_ONLY longer than its RETH',
                  lambda q, x: [q.f_write(WRITE_ONLY, q.next_psn(), q.vaddr, q.rkey, 32, 64)],
                  'NAK61', 'resp_invalid_request'))
    else:
        c.append(('SEND_MIDDLE without FIRST',
                  lambda q, x: [q.f_send(SEND_MIDDLE, q.next_psn(), bytes(MTU))], 'NAK61',
                  'resp_invalid_request'))
    if r == '':
        c.append(('SEND_FIRST while a SEND is open',
                  lambda q, x: [q.f_send(SEND_FIRST, q.next_psn(), bytes(MTU), ack_req=False),
                                q.f_send(SEND_FIRST, q.next_psn(), bytes(MTU))],
                  'NAK61', 'resp_invalid_request'))
        c.append(('SEND_ONLY payload > path MTU',
                  lambda q, x: [q.f_send(SEND_ONLY, q.next_psn(), bytes(1400))], 'NAK61',
                  'resp_invalid_request'))
    return c


def run_perf(mode, veth, wire):
    fatal = perf_fatal_cases(mode)
    nq = len(fatal) + 1
    port = 20000 + os.getpid() % 20000
    iters = 5  # droce-perf's minimum, as perftest's
    ours = ['--ip', veth.droce_ip + '/24', '--mac', veth.droce_mac, '-x', '1', '-p', str(port),
            '-q', str(nq), '-n', str(iters), '--timeout', '40', '--counters']
    if mode != 'atomic_bw':
        ours += ['-s', '64']
    sn = mode
    srv = Server(sn, [args.perf, mode] + eal(veth), ours, veth)
    try:
        if mode == 'write_bw':
            control_surface(srv)
        s = tcp_connect(port)
        # perftest's preamble: version, cycle buffer, cache line, MTU; the client writes first.
        for mine, n in ((b'6.06'.ljust(16, b'\0'), 16), (struct.pack('!I', 4096), 4),
                        (struct.pack('!I', 64), 4), (b'3\0', 2)):
            s.sendall(mine)
            recv_exact(s, n)
        mine = [(0x000100 + i, 0x100000 + i * 0x1000) for i in range(nq)]
        gid = gid_of(veth.my_ip)
        theirs = []
        for qpn, psn in mine:
            s.sendall(perf_record(qpn, psn, gid))
            theirs.append(perf_parse(recv_exact(s, 108)))
        extra = nq + 1 + (1 if mode == 'send_bw' else 0)
        for _ in range(extra):
            s.sendall(perf_record(mine[0][0], mine[0][1], gid))
            recv_exact(s, 108)
        qps = [Qp(wire, m[0], m[1], t['qpn'], t['rkey'], t['vaddr']) for m, t in zip(mine, theirs)]
        half = 4096
        ctx = {'base': theirs[0]['vaddr'] - nq * half, 'len': 2 * nq * half}
        chk = Check(srv, wire, sn)
        q0 = qps[0]

        # Legitimate traffic first: what the test grants works.
        snap = None
        if mode == 'send_bw':
            # droce coalesces ACKs (as IBTA allows): each QP's last PSN must be ACKed.
            wire.drain()
            last = {}
            for q in qps:
                for i in range(iters):
                    last[q.rqpn] = q.next_psn()
                    wire.send(q.f_send(SEND_ONLY, last[q.rqpn], bytes([0x5a]) * 64))

            def all_acked(g):
                done = {r.dqpn for r in g if r.kind() == 'ACK' and
                        any(q.qpn == r.dqpn and last[q.rqpn] == r.psn for q in qps)}
                return len(done) == nq
            got = wire.recv(3, all_acked)
            record(sn, 'legit SENDs, %d per QP' % iters, 'all ACKed', '%d ACKs' % len(got),
                   all_acked(got) and all(g.kind() == 'ACK' for g in got))
            time.sleep(0.3)  # the server polls its receives and is done before any QP fails
        elif mode == 'write_bw':
            chk.case('legit WRITE', [q0.f_write(WRITE_ONLY, q0.next_psn(), q0.vaddr, q0.rkey, 64,
                                                64)], 'ACK', qp=q0, qp_state='RTS')
        elif mode == 'read_bw':
            snap = q0.read(ctx['base'], ctx['len'])
            record(sn, 'legit READ of the whole MR (snapshot)', 'READ_RESP',
                   'READ_RESP' if snap else 'none', snap is not None, '%d bytes' % len(snap or b''))
        elif mode == 'atomic_bw':
            snap = [q0.fadd(q.vaddr, 0) for q in qps]
            record(sn, 'legit FETCH_ADD 0 on every QP slice', 'ATOMIC_ACK', str(snap),
                   None not in snap)

        # Silent drops and the sequence cases on QP 0, which must stay alive.
        def gen_op(q, psn, **kw):
            """A frame the QP accepts (0-length WRITE for a non-write server is refused, so
            non-write servers get their own op)."""
            r = RIGHT[mode]
            if r == 'W':
                return q.f_write(WRITE_ONLY, psn, q.vaddr, q.rkey, 64, 64, **kw)
            if r == 'R':
                return q.f_read(psn, q.vaddr, q.rkey, 64, **kw)
            if r == 'A':
                return q.f_atomic(FETCH_ADD, psn, q.vaddr, q.rkey, 0, **kw)
            return q.f_send(SEND_ONLY, psn, bytes(64), **kw)

        def tamper(f, fn):
            b = bytearray(f)
            fn(b)
            return bytes(b)

        legit = {'W': 'ACK', 'R': 'READ_RESP', 'A': 'ATOMIC_ACK', '': 'ACK'}[RIGHT[mode]]
        # A frame over the port MTU (1500) whose IPv4 packet is valid, followed by an
        # Ethernet trailer: judged by the IPv4 packet inside (as the kernel's IP layer
        # trims trailers; only a NIC's own MTU check would drop it for its size).
        chk.case('valid packet + 1700 B trailer (frame > port MTU)',
                 [gen_op(q0, q0.next_psn()) + bytes(1700)], legit, None, q0, 'RTS')
        e = q0.psn
        chk.case('bad ICRC', [tamper(gen_op(q0, e), lambda b: b.__setitem__(-1, b[-1] ^ 1))],
                 'DROP', 'rx_drop_bad_icrc', q0, 'RTS')
        chk.case('truncated frame (20 bytes cut)', [gen_op(q0, e)[:-20]], 'DROP',
                 'rx_drop_too_short', q0, 'RTS')
        chk.case('wrong P_Key', [gen_op(q0, e, pkey=0x8123)], 'DROP', 'rx_pkey_violation', q0,
                 'RTS')
        unknown = Qp(wire, q0.qpn, e, 0x777777, q0.rkey, q0.vaddr)
        chk.case('unknown QPN', [gen_op(unknown, e)], 'DROP', 'rx_drop_unknown_qpn', q0, 'RTS')
        chk.case('bad pad (pad count past the payload)',
                 [wire.ep.frame(bth(WRITE_ONLY, q0.rqpn, e, pad=3) + reth(q0.vaddr, q0.rkey, 0))],
                 'DROP', 'rx_drop_bad_pad_length', q0, 'RTS')
        big = gen_op(q0, e)
        big = big[:-4] + bytes(3000) + big[-4:]
        # net_af_packet hands droce at most its 2048-byte ring frame: the cut frame fails
        # its ICRC (a frame over the port MTU but within the ring frame is judged by its
        # RoCE content: payload > path MTU is NAKed, see the fatal cases).
        chk.case('oversized frame (3 kB on a 1500 port)', [big], 'DROP', 'rx_drop_bad_icrc', q0,
                 'RTS')
        chk.case('PSN ahead (+5)', [gen_op(q0, (e + 5) & 0xFFFFFF)], 'NAK60', 'out_of_sequence', q0,
                 'RTS')
        chk.case('PSN ahead again (NAK once)', [gen_op(q0, (e + 6) & 0xFFFFFF)], 'DROP',
                 'out_of_sequence', q0, 'RTS')
        # Now a good request, then replays of it.
        if mode == 'write_bw':
            p = q0.next_psn()
            chk.case('in-order WRITE after the drops', [gen_op(q0, p)], 'ACK', None, q0, 'RTS')
            chk.case('PSN old (duplicate WRITE)', [gen_op(q0, p)], 'ACK', 'duplicate_request', q0,
                     'RTS')
            chk.case('PSN old with a forged rkey (no check, no effect)',
                     [q0.f_write(WRITE_ONLY, (q0.psn - 0x10) & 0xFFFFFF, 0, 0xDEAD00, 64, 64)],
                     'ACK',
                     'duplicate_request', q0, 'RTS')
        elif mode == 'read_bw':
            p = q0.next_psn()
            first = chk.case('in-order READ after the drops', [gen_op(q0, p)], 'READ_RESP', None,
                             q0, 'RTS')
            chk.case('PSN old (duplicate READ replayed)', [gen_op(q0, p)], 'READ_RESP',
                     'duplicate_request', q0, 'RTS',
                     check=lambda g: (bool(first) and bool(g) and g[0].payload == first[0].payload
                                      and g[0].psn == p, 'same bytes, same PSN'))
            far = (q0.psn - 0x100) & 0xFFFFFF
            chk.case('PSN far behind (READ, no saved request): no answer',
                     [q0.f_read(far, ctx['base'], q0.rkey, 4096)], 'DROP', 'duplicate_request', q0,
                     'RTS')
        elif mode == 'atomic_bw':
            p = q0.next_psn()
            va = qps[1].vaddr
            first = chk.case('in-order FETCH_ADD +5', [q0.f_atomic(FETCH_ADD, p, va, q0.rkey, 5)],
                             'ATOMIC_ACK', None, q0, 'RTS')
            chk.case('PSN old (duplicate FETCH_ADD: saved result)',
                     [q0.f_atomic(FETCH_ADD, p, va, q0.rkey, 5)], 'ATOMIC_ACK', 'duplicate_request',
                     q0, 'RTS', check=lambda g: (bool(first) and bool(g) and
                                                g[0].orig == first[0].orig, 'orig as the first'))
            far = (q0.psn - 0x80) & 0xFFFFFF
            chk.case('PSN far behind (FETCH_ADD +1000, no saved result)',
                     [q0.f_atomic(FETCH_ADD, far, va, q0.rkey, 1000)], 'DROP', 'duplicate_request',
                     q0, 'RTS')
            v = q0.fadd(va, 0)
            record(sn, 'duplicates not re-executed (word is +5 once)', str(snap[1] + 5), str(v),
                   v == snap[1] + 5)
        else:
            p = q0.next_psn()
            chk.case('in-order SEND after the drops', [gen_op(q0, p)], 'ACK', None, q0, 'RTS')
            chk.case('PSN old (duplicate SEND)', [gen_op(q0, p)], 'ACK', 'duplicate_request', q0,
                     'RTS')

        chk.case('PSN far ahead (half the PSN space)', [gen_op(q0, (q0.psn + 0x7FFFFF) & 0xFFFFFF)],
                 'NAK60', 'out_of_sequence', q0, 'RTS')

        # Each fatal case on a QP of its own.
        for (name, build, want, counter), q in zip(fatal, qps[1:]):
            chk.case(name, build(q, ctx), want, counter, q, 'ERR')
        chk.case('QP 0 unaffected by the others\' errors', [gen_op(q0, q0.next_psn())], legit,
                 None, q0, 'RTS')

        # Memory, where a right lets us look.
        if mode == 'read_bw':
            after = q0.read(ctx['base'], ctx['len'])
            same = after is not None and after == snap
            record(sn, 'MR unchanged (read back, compared)', 'equal', 'equal' if same else 'DIFF',
                   same)
        elif mode == 'atomic_bw':
            now = [q0.fadd(q.vaddr, 0) for q in qps]
            want = list(snap)
            want[1] += 5
            record(sn, 'MR words unchanged but the +5', str(want), str(now), now == want)

        # The end of perftest's exchange: report (not send_bw), closing handshake, "done".
        if mode != 'send_bw':
            s.sendall(perf_record(mine[0][0], mine[0][1], gid))
            recv_exact(s, 108)
            for v in (64, iters, 0, 0, 0):
                s.sendall(struct.pack('!Q', v))
                recv_exact(s, 8)
        s.sendall(perf_record(mine[0][0], mine[0][1], gid))
        recv_exact(s, 108)
        s.sendall(b'done\0')
        recv_exact(s, 5)
        s.close()
        rc, out = srv.finish()
        log(out)
        note = ''
        if mode == 'send_bw':
            row = [ln for ln in out.splitlines() if ln.startswith(' 64 ')]
            it = row[0].split()[1] if row else '?'
            note = 'server counted %s SENDs (want %d)' % (it, nq * iters)
            rc_ok = rc == 0 and it == str(nq * iters)
        else:
            rc_ok = rc == 0
        record(sn, 'server exits 0', '0', str(rc), rc_ok, note)
        if rc != 0:
            print(out)
    finally:
        srv.kill()


# ------------------------------------------------------------ droce-pingpong ----

def run_pingpong(veth, wire, fatal=None):
    """ibv_rc_pingpong's server with -c: 2 iterations of 64 bytes. fatal: (name, build, want)
    sent instead of the ping-pong: the QP errors, the posted receives flush and the server
    fails as ibv_rc_pingpong would."""
    port = 40000 + os.getpid() % 20000
    iters = 2
    ours = ['--ip', veth.droce_ip + '/24', '--mac', veth.droce_mac, '-g', '1', '-p', str(port),
            '-n', str(iters), '-s', '64', '-c', '--timeout', '20', '--counters']
    sn = 'pingpong'
    srv = Server(sn, [args.pingpong] + eal(veth), ours, veth)
    acked = []
    peer = {}

    def on_request(p):  # ACK droce's SENDs: we are its responder too
        acked.append(p)
        wire.send(wire.ep.frame(bth(ACK, peer['qpn'], p.psn, ack_req=False) +
                                aeth(0x1F, len(acked))))

    wire.on_request = on_request
    try:
        s = tcp_connect(port)
        gid = gid_of(veth.my_ip)
        myqpn, mypsn = 0x000200, 0x222222
        s.sendall(('%04x:%06x:%06x:%s' % (0, myqpn, mypsn, gid.hex())).encode() + b'\0')
        t = recv_exact(s, 52).split(b'\0')[0].decode().split(':')
        s.sendall(b'done\0')
        q = Qp(wire, myqpn, mypsn, int(t[1], 16))
        peer['qpn'] = q.rqpn
        chk = Check(srv, wire, sn)
        if fatal is None:
            e = q.psn
            # One bit flipped: setting the last byte to 0 left 1 frame in 256 unchanged.
            f = q.f_send(SEND_ONLY, e, bytes(64))
            chk.case('bad ICRC', [f[:-1] + bytes([f[-1] ^ 1])], 'DROP', 'rx_drop_bad_icrc', q,
                     'RTS')
            chk.case('wrong P_Key', [q.f_send(SEND_ONLY, e, bytes(64), pkey=0x8123)], 'DROP',
                     'rx_pkey_violation', q, 'RTS')
            chk.case('PSN ahead (+3)', [q.f_send(SEND_ONLY, (e + 3) & 0xFFFFFF, bytes(64))],
                     'NAK60', 'out_of_sequence', q, 'RTS')
            # -c: the first byte of each page is 0 (ibv_rc_pingpong's check); the rest is ours.
            for i in range(iters):
                payload = b'\0' + bytes([0x40 + i]) * 63
                p = q.next_psn()
                chk.case('legit SEND #%d' % i, [q.f_send(SEND_ONLY, p, payload)], 'ACK', None, q)
                wire.recv(1, lambda g: len(acked) > i)  # the pong
                if i == 0:  # the server is done after the last pong: replay before that
                    # Delivered again, it would be a ping: the server would pong.
                    chk.case('PSN old (duplicate SEND, not delivered again)',
                             [q.f_send(SEND_ONLY, p, payload)], 'ACK', 'duplicate_request', q,
                             'RTS', check=lambda g: (time.sleep(0.3) or len(acked) == 1,
                                                     'no extra pong'))
            rc, out = srv.finish()
            ok = rc == 0 and 'invalid data' not in out and len(acked) == iters
            record(sn, 'server exits 0, -c data check passes', '0', str(rc), ok,
                   '%d SENDs from the server' % len(acked))
            if not ok:
                print(out)
        else:
            name, build, want = fatal
            # The server fails at once (its receives flush), so the counter and the error
            # come from what it prints at exit (--counters).
            chk.case(name, build(q), want)
            rc, out = srv.finish()
            flushed = [ln for ln in out.splitlines() if ln.startswith('Failed status')]
            cnt = [ln.split() for ln in out.splitlines()
                   if ln.split()[:1] == ['resp_op_not_allowed']]
            ok = rc == 1 and bool(flushed) and 'flush' in flushed[0].lower() and \
                bool(cnt) and cnt[0][1] == '1'
            record(sn, name + ': receives flushed, exit 1', 'exit 1', str(rc), ok,
                   (flushed[0] if flushed else 'no "Failed status" line') +
                   ('; resp_op_not_allowed ' + cnt[0][1] if cnt else '; no counter'))
    finally:
        wire.on_request = None
        srv.kill()


# ----------------------------------------------------------- control surface ----

def control_surface(srv):
    t = srv.tel
    sn = 'control'
    dmode = stat.S_IMODE(os.stat(t.dir).st_mode)
    smode = stat.S_IMODE(os.stat(t.path).st_mode)
    record(sn, 'runtime dir owner-only', '0700', oct(dmode), dmode & 0o077 == 0, t.dir)
    record(sn, 'telemetry socket owner-only', '0600', oct(smode), smode & 0o077 == 0)
    # And in practice: another user cannot connect (nobody, via setpriv).
    probe = ('import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n'
             'try:\n s.connect(sys.argv[1]); print("connected")\n'
             'except OSError as e: print(e.strerror)')
    r = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                        sys.executable, '-c', probe, t.path], capture_output=True, text=True)
    got = (r.stdout + r.stderr).strip().splitlines()[-1:] or ['?']
    record(sn, 'another user (nobody) cannot connect', 'Permission denied', got[0],
           got[0] == 'Permission denied')
    for name, data in (('unknown command', b'/no/such/command'),
                       ('not a command (no /)', b'garbage\x00\xff'),
                       ('oversized request (64 KiB)', b'/droce/counters,' + b'A' * 65536),
                       ('parameter for no device', b'/droce/qps,' + b'\xff' * 200),
                       ('empty parameter', b'/droce/counters,')):
        try:
            r = t.raw(data)
            j = json.loads(r)
            ok = isinstance(j, dict) and (list(j.values()) == [None] or 'error' in str(j).lower()
                                          or list(j.values())[0] in (None, {}))
            got = r[:60].decode(errors='replace')
        except Exception as ex:  # the socket closing is an answer too, but the process lives
            ok, got = True, 'closed: %s' % type(ex).__name__
            t.s.close()
            t.__init__(srv.p.pid)
        alive = srv.p.poll() is None and t.dev() == srv.dev
        record(sn, 'telemetry: ' + name, 'error+alive', got, ok and alive)


def main():
    global args
    ap = argparse.ArgumentParser()
    ap.add_argument('--perf', required=True)
    ap.add_argument('--pingpong', required=True)
    ap.add_argument('--only', default='')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    if os.geteuid() != 0:
        print('SKIP: needs root (veth pair, AF_PACKET)')
        return SKIP
    veth = Veth()
    t0 = time.time()
    try:
        if not veth.up():
            print('SKIP: cannot create a veth pair')
            return SKIP
        wire = Wire(veth)
        for mode in ('write_bw', 'read_bw', 'send_bw', 'atomic_bw'):
            if args.only in ('', mode):
                run_perf(mode, veth, wire)
        if args.only in ('', 'pingpong'):
            run_pingpong(veth, wire)
            for name, build in (
                    ('WRITE at a SEND/RECV-only QP',
                     lambda q: [q.f_write(WRITE_ONLY, q.next_psn(), 0x1000, 0x100, 64, 64)]),
                    ('READ at a SEND/RECV-only QP',
                     lambda q: [q.f_read(q.next_psn(), 0x1000, 0x100, 64)]),
                    ('CMP_SWAP at a SEND/RECV-only QP',
                     lambda q: [q.f_atomic(CMP_SWAP, q.next_psn(), 0x1000, 0x100, 1)])):
                run_pingpong(veth, wire, (name, build, 'NAK61'))
    finally:
        veth.down()
    fails = [r for r in results if not r[4]]
    print('%d cases, %d failed, %.1f s' % (len(results), len(fails), time.time() - t0))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
