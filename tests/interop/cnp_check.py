#!/usr/bin/env python3
"""DCQCN wire checks on a capture of droce against a RoCEv2 peer.

  cnp_check.py --np IP [--qpn QPN] [--ref REF.pcap] [--tshark] [--min-cnp N] FILE.pcap
      The CNPs (BTH opcode 0x81) that IP sent: each must be 12 B BTH + 16 reserved zero bytes +
      ICRC (UDP length 40), BTH byte 1 = 0 (SE, M, pad, TVer), P_Key 0xFFFF, byte 4 = 0x40 (BECN
      set, FECN and reserved clear), byte 8 = 0 (AckReq, reserved), PSN 0, DestQP = QPN (the
      peer's QP) when given, DSCP 48, a valid ICRC; with --ref, equal to the published ConnectX
      CNP in REF byte for byte from the BTH to the ICRC except DestQP, and in the IPv4 TOS and
      lengths. With --tshark, the same fields as Wireshark decodes them (infiniband.bth.opcode
      129, infiniband.reserved 40 = BECN, infiniband.bth.destqp, infiniband.bth.psn, the 16
      zero bytes of infiniband.vendor). Also counts the CE-marked frames the other side sent.
  cnp_check.py --ect IP FILE.pcap
      Every RoCE request or read/atomic response frame IP sent is ECT(0) (ECN field 10).

Prints one summary line ("cnp: ..." / "ect: ...") and one line per problem (first 20).
Exit 0 when clean, 1 otherwise.
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pcap_check import frames, icrc  # noqa: E402

CNP = 0x81
# frames that carry data or responses (ACK 0x11 and CNP 0x81 are not-ECT by design)
ECT_OPCODES = set(range(0x00, 0x11)) | {0x12, 0x13, 0x14, 0x16, 0x17, 0x64, 0x65}


def roce_frames(path):
    """(frame number, IPv4 header bytes, UDP datagram incl. ICRC) for each RoCEv2 frame."""
    for n, d, orig in frames(path):
        if len(d) < orig:
            continue
        off = 12
        etype = struct.unpack('>H', d[off:off + 2])[0]
        while etype in (0x8100, 0x88A8) and len(d) >= off + 6:
            off += 4
            etype = struct.unpack('>H', d[off:off + 2])[0]
        off += 2
        if etype != 0x0800 or len(d) < off + 20:
            continue
        ihl = (d[off] & 0x0F) * 4
        ip = d[off:off + ihl]
        tot = struct.unpack('>H', ip[2:4])[0]
        if ip[9] != 17 or off + tot > len(d):
            continue
        udp = d[off + ihl:off + tot]
        if len(udp) < 8 + 12 + 4 or struct.unpack('>H', udp[2:4])[0] != 4791:
            continue
        yield n, ip, udp


def dotted(b):
    return '.'.join(map(str, b))


def check_cnp(path, np_ip, qpn, ref, use_tshark, min_cnp):
    problems, cnps, ce_in, roce_in, other_out, qpns = [], 0, 0, 0, 0, set()
    ref_udp = ref_ip = None
    if ref:
        for _, ip, udp in roce_frames(ref):
            if udp[8] == CNP:
                ref_ip, ref_udp = ip, udp
                break
        if ref_udp is None:
            problems.append('no CNP in the reference %s' % ref)
    for n, ip, udp in roce_frames(path):
        src = dotted(ip[12:16])
        if src != np_ip:
            roce_in += 1
            ce_in += (ip[1] & 3) == 3
            continue
        bth = udp[8:20]
        if bth[0] != CNP:
            other_out += 1
            continue
        cnps += 1
        qpns.add(int.from_bytes(bth[5:8], 'big'))
        why = []
        if len(udp) != 40:
            why.append('UDP length %d, want 40 (BTH + 16 reserved + ICRC)' % len(udp))
        if bth[1] != 0:
            why.append('BTH byte 1 0x%02x, want 0' % bth[1])
        if bth[2:4] != b'\xff\xff':
            why.append('P_Key 0x%s, want 0xffff' % bth[2:4].hex())
        if bth[4] != 0x40:
            why.append('BTH byte 4 0x%02x, want 0x40 (BECN only)' % bth[4])
        if qpn is not None and int.from_bytes(bth[5:8], 'big') != qpn:
            why.append('DestQP 0x%06x, want 0x%06x' % (int.from_bytes(bth[5:8], 'big'), qpn))
        if bth[8] != 0 or bth[9:12] != b'\0\0\0':
            why.append('AckReq/reserved/PSN %s, want 00000000' % bth[8:12].hex())
        if udp[20:-4] != bytes(16):
            why.append('reserved bytes %s, want 16 zero bytes' % udp[20:-4].hex())
        if ip[1] >> 2 != 48:
            why.append('DSCP %d, want 48' % (ip[1] >> 2))
        if struct.unpack('<I', udp[-4:])[0] != icrc(ip, udp[:-4]):
            why.append('bad ICRC')
        if ref_udp is not None:
            mine = bytearray(udp[8:-4])
            theirs = bytearray(ref_udp[8:-4])
            mine[5:8] = theirs[5:8] = b'\0\0\0'
            if mine != theirs:
                why.append('BTH+payload %s differs from the published CNP %s' % (mine.hex(), theirs.hex()))
            if (ip[1], ip[2:4], udp[4:6]) != (ref_ip[1], ref_ip[2:4], ref_udp[4:6]):
                why.append('TOS/lengths 0x%02x/%s/%s differ from the published CNP 0x%02x/%s/%s'
                           % (ip[1], ip[2:4].hex(), udp[4:6].hex(), ref_ip[1], ref_ip[2:4].hex(),
                              ref_udp[4:6].hex()))
        for w in why:
            problems.append('frame %d: CNP %s' % (n, w))
    if cnps < min_cnp:
        problems.append('%d CNPs from %s, want at least %d' % (cnps, np_ip, min_cnp))
    seen = ''
    if use_tshark:
        seen, tp = tshark_cnps(path, np_ip, qpn)
        problems += tp
    print('cnp: %d CNPs from %s to DestQP %s (+%d other RoCE frames); %d RoCE frames from the peer, '
          '%d CE-marked%s' % (cnps, np_ip, ','.join('0x%06x' % q for q in sorted(qpns)) or '-', other_out,
                              roce_in, ce_in, seen))
    return problems


def tshark_cnps(path, np_ip, qpn):
    """The CNPs as Wireshark decodes them; returns (summary, problems)."""
    fields = ['frame.number', 'infiniband.bth.opcode', 'infiniband.reserved', 'infiniband.bth.destqp',
              'infiniband.bth.psn', 'infiniband.bth.p_key', 'infiniband.vendor', 'ip.dsfield.dscp',
              'ip.dsfield.ecn']
    cmd = ['tshark', '-n', '-r', path, '-Y', 'ip.src == %s && infiniband.bth.opcode == 129' % np_ip,
           '-T', 'fields', '-E', 'separator=/t', '-E', 'occurrence=l']
    for f in fields:
        cmd += ['-e', f]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError) as ex:
        return '', ['tshark failed: %s' % ex]
    rows = [dict(zip(fields, line.split('\t'))) for line in out.splitlines() if line]
    problems = []
    for r in rows:
        why = []
        # Wireshark 4.0 names no FECN/BECN bits: BTH byte 4 is "infiniband.reserved" (hex)
        if r['infiniband.reserved'] != '40':
            why.append('infiniband.reserved (BECN byte) %s, want 40' % r['infiniband.reserved'])
        if qpn is not None and int(r['infiniband.bth.destqp'] or '-1', 0) != qpn:
            why.append('infiniband.bth.destqp %s, want 0x%06x' % (r['infiniband.bth.destqp'], qpn))
        if r['infiniband.bth.psn'] != '0' or r['infiniband.bth.p_key'] != '65535':
            why.append('psn/p_key %s/%s, want 0/65535' % (r['infiniband.bth.psn'], r['infiniband.bth.p_key']))
        # the unknown-header bytes: the 16 reserved bytes, then the ICRC
        if not r['infiniband.vendor'].startswith('0' * 32) or len(r['infiniband.vendor']) != 40:
            why.append('infiniband.vendor %s, want 16 zero bytes + ICRC' % r['infiniband.vendor'])
        if r['ip.dsfield.dscp'] != '48':
            why.append('ip.dsfield.dscp %s, want 48' % r['ip.dsfield.dscp'])
        for w in why:
            problems.append('tshark frame %s: %s' % (r['frame.number'], w))
    def seen(f):
        return '/'.join(sorted({r[f] for r in rows})) or '-'
    return ('; tshark: %d rows infiniband.bth.opcode 129, infiniband.reserved(BECN) %s, destqp %s, psn %s, '
            'dscp %s, ecn %s' % (len(rows), seen('infiniband.reserved'), seen('infiniband.bth.destqp'),
                                 seen('infiniband.bth.psn'), seen('ip.dsfield.dscp'), seen('ip.dsfield.ecn'))), problems


def check_ect(path, ip_src):
    problems, ect, acks, total = [], 0, 0, 0
    for n, ip, udp in roce_frames(path):
        if dotted(ip[12:16]) != ip_src:
            continue
        op = udp[8]
        if op not in ECT_OPCODES:
            acks += 1
            continue
        total += 1
        if ip[1] & 3 == 2:
            ect += 1
        elif len(problems) < 1000:
            problems.append('frame %d: opcode 0x%02x from %s has ECN %d, want 2 (ECT(0))'
                            % (n, op, ip_src, ip[1] & 3))
    if total == 0:
        problems.append('no data frames from %s' % ip_src)
    print('ect: %d of %d data frames from %s ECT(0); %d ACK/CNP frames' % (ect, total, ip_src, acks))
    return problems


def main(argv):
    np_ip = ect_ip = ref = path = None
    qpn, use_tshark, min_cnp = None, False, 1
    it = iter(argv)
    for a in it:
        if a == '--np':
            np_ip = next(it)
        elif a == '--qpn':
            qpn = int(next(it), 0)
        elif a == '--ref':
            ref = next(it)
        elif a == '--tshark':
            use_tshark = True
        elif a == '--min-cnp':
            min_cnp = int(next(it))
        elif a == '--ect':
            ect_ip = next(it)
        else:
            path = a
    if not path or bool(np_ip) == bool(ect_ip):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        problems = check_cnp(path, np_ip, qpn, ref, use_tshark, min_cnp) if np_ip else check_ect(path, ect_ip)
    except (ValueError, OSError, struct.error, IndexError) as ex:
        print('cnp_check: %s: %s' % (path, ex))
        return 1
    for p in problems[:20]:
        print('cnp_check: %s' % p)
    if len(problems) > 20:
        print('cnp_check: ... %d more problems' % (len(problems) - 20))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
