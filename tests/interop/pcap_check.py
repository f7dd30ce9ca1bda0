#!/usr/bin/env python3
"""Wire checks on a capture of RoCEv2 traffic that Wireshark does not make.

tshark dissects UDP 4791 as RoCEv2 ("RRoCE") but does NOT verify the ICRC, the IPv4 header
checksum (off by default) or length consistency. For every IPv4 UDP-4791 frame this checks
(for IPv6 ones: lengths and the ICRC with traffic class, flow label and hop limit masked):
  - IPv4 header checksum, IPv4 total length vs. captured bytes, UDP length vs. IPv4 payload
  - the RoCEv2 ICRC (CRC-32 over 8 bytes of 0xFF + IPv4 header with TOS/TTL/checksum masked +
    UDP header with checksum masked + BTH with its byte 4 (F/B/resv) masked + payload)
and over the whole capture:
  - no ICMP destination-unreachable (the host kernel answering UDP 4791 means the endpoint used
    the kernel's own IP)
  - at least --min-roce RoCEv2 frames (default 1)
Reads classic pcap (any endianness, us/ns) with Ethernet link type, optional 802.1Q tags.
Exit status 0 when clean; 1 with one line per problem (first 20) otherwise.
Usage: pcap_check.py [--min-roce N] [--quiet] FILE.pcap
"""
import struct
import sys
import zlib


def frames(path):
    with open(path, 'rb') as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            raise ValueError('short pcap header')
        magic = hdr[:4]
        if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1'):
            e = '<'
        elif magic in (b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
            e = '>'
        else:
            raise ValueError('not a classic pcap file (pcapng? use tcpdump -w)')
        linktype = struct.unpack(e + 'I', hdr[20:24])[0] & 0xFFFF
        if linktype != 1:
            raise ValueError('link type %d is not Ethernet' % linktype)
        n = 0
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            _, _, incl, orig = struct.unpack(e + 'IIII', rh)
            data = f.read(incl)
            n += 1
            yield n, data, orig


def ip_csum(b):
    s = 0
    for i in range(0, len(b), 2):
        s += (b[i] << 8) | (b[i + 1] if i + 1 < len(b) else 0)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icrc(ip, udp_and_payload):
    """ip: IPv4 header bytes; udp_and_payload: UDP header + BTH... up to (not incl.) the ICRC."""
    iph = bytearray(ip)
    iph[1] = 0xFF                 # TOS (DSCP+ECN)
    iph[8] = 0xFF                 # TTL
    iph[10:12] = b'\xff\xff'      # header checksum
    u = bytearray(udp_and_payload)
    u[6:8] = b'\xff\xff'          # UDP checksum
    u[8 + 4] = 0xFF               # BTH byte 4: FECN/BECN/resv6
    return zlib.crc32(b'\xff' * 8 + bytes(iph) + bytes(u)) & 0xFFFFFFFF


def icrc6(ip6, udp_and_payload):
    """ICRC over IPv6: traffic class, flow label and hop limit masked to ones."""
    h = bytearray(ip6[:40])
    h[0] |= 0x0F
    h[1:4] = b'\xff\xff\xff'
    h[7] = 0xFF
    u = bytearray(udp_and_payload)
    u[6:8] = b'\xff\xff'
    u[8 + 4] = 0xFF
    return zlib.crc32(b'\xff' * 8 + bytes(h) + bytes(u)) & 0xFFFFFFFF


def check_ipv6(n, d, off, problems):
    """One IPv6 frame: True when it is RoCEv2 (checked into problems), False otherwise."""
    if len(d) < off + 40:
        return False
    ip6 = d[off:off + 40]
    plen = struct.unpack('>H', ip6[4:6])[0]
    nh = ip6[6]
    if nh == 58 and len(d) > off + 40 and d[off + 40] == 1:
        problems.append('frame %d: ICMPv6 destination unreachable (code %d)' % (n, d[off + 41]))
        return False
    if nh != 17 or len(d) < off + 44 or struct.unpack('>H', d[off + 42:off + 44])[0] != 4791:
        return False
    if off + 40 + plen > len(d):
        problems.append('frame %d: IPv6 payload length %d exceeds frame' % (n, plen))
        return True
    if len(d) > max(60, off + 40 + plen):
        problems.append('frame %d: %d trailing bytes after the IPv6 datagram' % (n, len(d) - off - 40 - plen))
    udp = d[off + 40:off + 40 + plen]
    if struct.unpack('>H', udp[4:6])[0] != len(udp) or len(udp) < 8 + 12 + 4:
        problems.append('frame %d: bad UDP length over IPv6' % n)
        return True
    want = struct.unpack('<I', udp[-4:])[0]
    got = icrc6(ip6, udp[:-4])
    if want != got:
        problems.append('frame %d: bad ICRC 0x%08x (expected 0x%08x) over IPv6' % (n, want, got))
    return True


def main(argv):
    min_roce, quiet, path = 1, False, None
    it = iter(argv)
    for a in it:
        if a == '--min-roce':
            min_roce = int(next(it))
        elif a == '--quiet':
            quiet = True
        else:
            path = a
    if not path:
        print(__doc__, file=sys.stderr)
        return 2
    problems, roce, truncated, other = [], 0, 0, 0
    try:
        for n, d, orig in frames(path):
            if len(d) < orig:
                truncated += 1
                continue
            off = 12
            etype = struct.unpack('>H', d[off:off + 2])[0]
            while etype in (0x8100, 0x88A8) and len(d) >= off + 6:
                off += 4
                etype = struct.unpack('>H', d[off:off + 2])[0]
            off += 2
            if etype == 0x86DD:
                if check_ipv6(n, d, off, problems):
                    roce += 1
                else:
                    other += 1
                continue
            if etype != 0x0800:
                other += 1
                continue
            ihl = (d[off] & 0x0F) * 4
            ip = d[off:off + ihl]
            tot = struct.unpack('>H', ip[2:4])[0]
            proto = ip[9]
            if proto == 1 and len(d) > off + ihl and d[off + ihl] == 3:
                problems.append('frame %d: ICMP destination unreachable (code %d) %s -> %s'
                                % (n, d[off + ihl + 1], '.'.join(map(str, ip[12:16])),
                                   '.'.join(map(str, ip[16:20]))))
                continue
            if proto != 17:
                other += 1
                continue
            dport = struct.unpack('>H', d[off + ihl + 2:off + ihl + 4])[0]
            if dport != 4791:
                other += 1
                continue
            roce += 1
            if ip_csum(ip) != 0:
                problems.append('frame %d: bad IPv4 header checksum' % n)
            if off + tot > len(d):
                problems.append('frame %d: IPv4 total length %d exceeds frame (%d bytes after L2)'
                                % (n, tot, len(d) - off))
                continue
            if len(d) > max(60, off + tot):
                # bytes beyond the IP datagram that are not minimum-frame padding
                problems.append('frame %d: %d trailing bytes after the IPv4 datagram' % (n, len(d) - off - tot))
            udp = d[off + ihl:off + tot]
            ulen = struct.unpack('>H', udp[4:6])[0]
            if ulen != len(udp):
                problems.append('frame %d: UDP length %d != IPv4 payload %d' % (n, ulen, len(udp)))
                continue
            if len(udp) < 8 + 12 + 4:
                problems.append('frame %d: UDP payload too short for BTH+ICRC' % n)
                continue
            want = struct.unpack('<I', udp[-4:])[0]
            got = icrc(ip, udp[:-4])
            if want != got:
                problems.append('frame %d: bad ICRC 0x%08x (expected 0x%08x), opcode 0x%02x psn %d'
                                % (n, want, got, udp[8], struct.unpack('>I', udp[16:20])[0] & 0xFFFFFF))
    except (ValueError, OSError, struct.error, IndexError) as ex:
        print('pcap_check: %s: %s' % (path, ex))
        return 1
    if truncated:
        problems.append('%d frames truncated by the capture snaplen (capture with -s 0)' % truncated)
    if roce < min_roce:
        problems.append('only %d RoCEv2 frames (expected at least %d)' % (roce, min_roce))
    for p in problems[:20]:
        print('pcap_check: %s: %s' % (path, p))
    if len(problems) > 20:
        print('pcap_check: %s: ... %d more problems' % (path, len(problems) - 20))
    if not quiet:
        print('pcap_check: %s: %d RoCEv2 frames, %d other, %d problems'
              % (path, roce, other, len(problems)))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
