"""Hand-built RoCEv2 frames for the hostile-client suite: Ethernet/IPv4/UDP 4791/BTH and the
extension headers a requester sends (RETH, AtomicETH) or a responder sends back (AETH,
AtomicAckETH), with the ICRC, plus a parser for what droce answers.

Written from the IBTA rules (annex A17 for RoCEv2's ICRC), not from droce's code: the ICRC
is a CRC-32 (the Ethernet one) over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and
header checksum set to all ones, the UDP header with its checksum set to all ones, the
BTH with its reserved byte (byte 4, after the P_Key) set to all ones, and the rest of the
packet; it is sent little-endian."""

import struct
import zlib

ROCE_PORT = 4791

# RC opcodes (IBTA table 38).
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY = 0x06, 0x07, 0x08, 0x0A
READ_REQUEST = 0x0C
READ_RESP_FIRST, READ_RESP_MIDDLE, READ_RESP_LAST, READ_RESP_ONLY = 0x0D, 0x0E, 0x0F, 0x10
ACK, ATOMIC_ACK = 0x11, 0x12
CMP_SWAP, FETCH_ADD = 0x13, 0x14

# AETH syndromes: top 3 bits 011 = NAK, low 5 = the NAK code.
NAK_PSN_SEQ, NAK_INVALID, NAK_ACCESS, NAK_OPERATIONAL = 0x60, 0x61, 0x62, 0x63


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(':'))


def ip_bytes(ip):
    return bytes(int(x) for x in ip.split('.'))


def ip_checksum(hdr):
    s = sum(struct.unpack('!10H', hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icrc(ip_udp_ib):
    """ip_udp_ib: from the IPv4 header to the end of the payload (pad included)."""
    b = bytearray(ip_udp_ib)
    b[1] = 0xFF  # TOS
    b[8] = 0xFF  # TTL
    b[10:12] = b'\xff\xff'  # header checksum
    b[20 + 6:20 + 8] = b'\xff\xff'  # UDP checksum
    b[28 + 4] = 0xFF  # BTH reserved byte
    return struct.pack('<I', zlib.crc32(b'\xff' * 8 + bytes(b)) & 0xFFFFFFFF)


def bth(opcode, dqpn, psn, pad=0, pkey=0xFFFF, ack_req=True, se=False, mig=False):
    b0 = (0x80 if se else 0) | (0x40 if mig else 0) | ((pad & 3) << 4)
    return struct.pack('!BBHII', opcode, b0, pkey, dqpn & 0xFFFFFF,
                       (0x80000000 if ack_req else 0) | (psn & 0xFFFFFF))


def reth(va, rkey, length):
    return struct.pack('!QII', va & 0xFFFFFFFFFFFFFFFF, rkey, length)


def atomic_eth(va, rkey, swap_add, compare=0):
    return struct.pack('!QIQQ', va, rkey, swap_add, compare)


def aeth(syndrome, msn):
    return struct.pack('!I', (syndrome << 24) | (msn & 0xFFFFFF))


class Endpoints:
    """Addresses of the attacker (the kernel side of the veth) and of droce."""

    def __init__(self, src_mac, dst_mac, src_ip, dst_ip, sport=0xC000):
        self.src_mac, self.dst_mac = mac_bytes(src_mac), mac_bytes(dst_mac)
        self.src_ip, self.dst_ip = ip_bytes(src_ip), ip_bytes(dst_ip)
        self.sport = sport
        self.ip_id = 1

    def frame(self, ib_hdrs, payload=b'', pad=None, fix_icrc=True):
        """ib_hdrs: BTH and extension headers (the BTH's pad count is trusted as given
        when pad is None; else payload gets pad zero bytes appended)."""
        body = ib_hdrs + payload + (b'\0' * pad if pad else b'')
        udp_len = 8 + len(body) + 4
        ip_len = 20 + udp_len
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        iph = bytearray(struct.pack('!BBHHHBBH4s4s', 0x45, 0, ip_len, self.ip_id, 0x4000, 64, 17, 0,
                                    self.src_ip, self.dst_ip))
        iph[10:12] = struct.pack('!H', ip_checksum(bytes(iph)))
        udp = struct.pack('!HHHH', self.sport, ROCE_PORT, udp_len, 0)
        pkt = bytes(iph) + udp + body
        crc = icrc(pkt) if fix_icrc else b'\0\0\0\0'
        return self.dst_mac + self.src_mac + b'\x08\x00' + pkt + crc


class Reply:
    """One RoCEv2 packet droce sent."""

    def __init__(self, opcode, psn, dqpn, syndrome=None, msn=None, orig=None, payload=b'',
                 icrc_ok=True, pkey=0xFFFF):
        self.opcode, self.psn, self.dqpn = opcode, psn, dqpn
        self.syndrome, self.msn, self.orig = syndrome, msn, orig
        self.payload, self.icrc_ok, self.pkey = payload, icrc_ok, pkey

    def kind(self):
        if self.opcode == ACK:
            if self.syndrome >> 5 == 0:
                return 'ACK'
            if self.syndrome >> 5 == 1:
                return 'RNR'
            return 'NAK%02x' % self.syndrome
        if self.opcode == ATOMIC_ACK:
            return 'ATOMIC_ACK'
        if READ_RESP_FIRST <= self.opcode <= READ_RESP_ONLY:
            if self.syndrome is not None and self.syndrome >> 5 == 3:
                return 'NAK%02x' % self.syndrome
            return 'READ_RESP'
        return 'OP%02x' % self.opcode

    def __repr__(self):
        s = '%s psn=%06x' % (self.kind(), self.psn)
        if self.orig is not None:
            s += ' orig=%d' % self.orig
        if self.payload:
            s += ' len=%d' % len(self.payload)
        return s


def parse(frame, from_mac):
    """A Reply, or None when the frame is not a RoCEv2 packet from from_mac."""
    if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[6:12] != from_mac or frame[12:14] != b'\x08\x00':
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0xF) * 4
    if ip[9] != 17 or ihl != 20:
        return None
    ip_len = struct.unpack('!H', ip[2:4])[0]
    ip = ip[:ip_len]
    if struct.unpack('!H', ip[22:24])[0] != ROCE_PORT:
        return None
    ib = ip[28:-4]
    icrc_ok = icrc(ip[:-4]) == ip[-4:]
    opcode, b0, pkey, dqpn, apsn = struct.unpack('!BBHII', ib[:12])
    pad = (b0 >> 4) & 3
    rest = ib[12:]
    r = Reply(opcode, apsn & 0xFFFFFF, dqpn & 0xFFFFFF, icrc_ok=icrc_ok, pkey=pkey)
    if opcode in (ACK, ATOMIC_ACK, READ_RESP_FIRST, READ_RESP_LAST, READ_RESP_ONLY):
        a = struct.unpack('!I', rest[:4])[0]
        r.syndrome, r.msn = a >> 24, a & 0xFFFFFF
        rest = rest[4:]
    if opcode == ATOMIC_ACK:
        r.orig = struct.unpack('!Q', rest[:8])[0]
        rest = rest[8:]
    r.payload = bytes(rest[:len(rest) - pad])
    return r
