"""CM MADs for the hostile-client suite: a builder and parser of the Communication
Management messages rdma_cm exchanges over RoCEv2 (IBTA vol. 1 ch. 12 and 13.4), written
from the IBTA layouts (the offsets lib/cm/cm_mad.cpp uses too, checked against the Linux
captures in ../shared/vectors/rxe), not from any implementation.

A CM MAD is the 256-byte payload of a UD SEND_ONLY to QP1: BTH (opcode 0x64, P_Key
0xFFFF, dest QP 1), DETH (Q_Key 0x80010000, source QP 1), then the 24-byte MAD common
header and the message at offset 24."""

import struct

from roce import bth

UD_SEND_ONLY = 0x64
GSI_QKEY = 0x80010000
MAD_LEN = 256

BASE_VERSION, CLASS_CM, CLASS_VERSION, METHOD_SEND = 1, 0x07, 2, 0x03
REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP = range(0x10, 0x19)
ATTR_NAMES = {REQ: 'REQ', MRA: 'MRA', REJ: 'REJ', REP: 'REP', RTU: 'RTU', DREQ: 'DREQ',
              DREP: 'DREP', SIDR_REQ: 'SIDR_REQ', SIDR_REP: 'SIDR_REP'}

# REJ reasons (IBTA table 112).
REJ_NO_RESOURCES, REJ_TIMEOUT, REJ_INVALID_COMM_ID = 3, 4, 6
REJ_INVALID_SERVICE_ID, REJ_STALE_CONN, REJ_CONSUMER = 8, 10, 28

RDMA_PS_TCP = 0x0106


def service_id(port, ps=RDMA_PS_TCP):
    """rdma_cm's IP service ID: 0x0000000001PPpppp."""
    return (ps << 16) | port


def ipv4_gid(ip4):
    """ip4: 4 bytes; the IPv4-mapped GID ::ffff:a.b.c.d."""
    return bytes(10) + b'\xff\xff' + bytes(ip4)


def mad_hdr(attr, tid, base=BASE_VERSION, mclass=CLASS_CM, cver=CLASS_VERSION,
            method=METHOD_SEND, attr_mod=0):
    return struct.pack('!BBBBHHQHHI', base, mclass, cver, method, 0, 0, tid, attr, 0, attr_mod)


def mad(attr, tid, body, **kw):
    """The 256-byte MAD: header, body, zeros."""
    m = mad_hdr(attr, tid, **kw) + body
    assert len(m) <= MAD_LEN
    return m + bytes(MAD_LEN - len(m))


def ip_cm_hdr(src_ip4, src_port, dst_ip4):
    """rdma_cm's 36-byte IP CM header (struct cma_hdr): version 0, IP version 4 in the
    high nibble, the source port, source and destination addresses (IPv4 in the last 4
    of 16 bytes)."""
    return struct.pack('!BBH', 0, 0x40, src_port) + bytes(12) + bytes(src_ip4) + bytes(12) + \
        bytes(dst_ip4)


def req(comm_id, sid, qpn, psn, local_gid, remote_gid, private=b'', ca_guid=0x0200aabbccddeeff,
        transport=0, resp_res=1, init_depth=1, mtu=3, ack_timeout=19, max_cm_retries=15):
    """A REQ body (IBTA 12.6.5; message offsets, the MAD header not counted)."""
    b = bytearray(232)
    struct.pack_into('!I', b, 0, comm_id)
    struct.pack_into('!QQ', b, 8, sid, ca_guid)
    struct.pack_into('!I', b, 28, 0)  # Q_Key: RC ignores it
    b[32:35] = (qpn & 0xFFFFFF).to_bytes(3, 'big')
    b[35] = resp_res
    b[39] = init_depth
    b[43] = (20 << 3) | ((transport & 3) << 1)  # remote CM response timeout 20, RC
    b[44:47] = (psn & 0xFFFFFF).to_bytes(3, 'big')
    b[47] = (20 << 3) | 7  # local CM response timeout 20, retry count 7
    struct.pack_into('!H', b, 48, 0xFFFF)
    b[50] = (mtu << 4) | 7  # path MTU, RNR retry 7
    b[51] = max_cm_retries << 4
    # primary path at 52: permissive LIDs, GIDs, hop limit, SL 0, ACK timeout
    struct.pack_into('!HH', b, 52, 0xFFFF, 0xFFFF)
    b[56:72] = local_gid
    b[72:88] = remote_gid
    b[93] = 64  # hop limit (path offset 41)
    b[95] = (ack_timeout & 0x1F) << 3
    b[140:140 + len(private)] = private
    return bytes(b)


def rep(comm_id, remote_comm_id, qpn, psn, ca_guid=0x0200aabbccddeeff):
    b = bytearray(232)
    struct.pack_into('!II', b, 0, comm_id, remote_comm_id)
    b[12:15] = (qpn & 0xFFFFFF).to_bytes(3, 'big')
    b[20:23] = (psn & 0xFFFFFF).to_bytes(3, 'big')
    b[24], b[25], b[26], b[27] = 1, 1, 15 << 3, 7 << 5
    struct.pack_into('!Q', b, 28, ca_guid)
    return bytes(b)


def rtu(comm_id, remote_comm_id):
    return struct.pack('!II', comm_id, remote_comm_id)


def dreq(comm_id, remote_comm_id, remote_qpn):
    return struct.pack('!II', comm_id, remote_comm_id) + (remote_qpn & 0xFFFFFF).to_bytes(3, 'big')


def drep(comm_id, remote_comm_id):
    return struct.pack('!II', comm_id, remote_comm_id)


def rej(comm_id, remote_comm_id, reason, msg_rejected=0):
    return struct.pack('!IIBBH', comm_id, remote_comm_id, msg_rejected << 6, 0, reason)


def sidr_req(request_id, sid, private=b''):
    """SIDR_REQ (IBTA 12.11.1): request ID, P_Key, reserved, service ID, private data."""
    return struct.pack('!IHHQ', request_id, 0xFFFF, 0, sid) + private


def sidr_rep(request_id, status, qpn=0, sid=0, qkey=0, info_len=0):
    """SIDR_REP (IBTA 12.11.2): request ID, status, info length, QPN, service ID, Q_Key."""
    return (struct.pack('!IBBH', request_id, status, info_len, 0) +
            ((qpn & 0xFFFFFF) << 8).to_bytes(4, 'big') + struct.pack('!QI', sid, qkey))


def gmp(ep, mad_bytes, src_qp=1, qkey=GSI_QKEY, dqpn=1, psn=0):
    """One RoCEv2 frame carrying mad_bytes to QP dqpn (UD SEND_ONLY + DETH)."""
    deth = struct.pack('!II', qkey, src_qp & 0xFFFFFF)
    pad = (-len(mad_bytes)) % 4
    return ep.frame(bth(UD_SEND_ONLY, dqpn, psn, pad=pad, ack_req=False) + deth, mad_bytes, pad=pad)


class Mad:
    """A parsed CM MAD (from a roce.Reply of a UD SEND_ONLY)."""

    def __init__(self, payload):
        self.qkey, self.src_qp = struct.unpack('!II', payload[:8])
        self.src_qp &= 0xFFFFFF
        m = payload[8:]
        self.raw = m
        (self.base, self.mclass, self.cver, self.method, self.status, _, self.tid, self.attr, _,
         _) = struct.unpack('!BBBBHHQHHI', m[:24])
        d = m[24:]
        self.local_comm_id, self.remote_comm_id = struct.unpack('!II', d[:8])
        self.reason = self.qpn = self.psn = None
        self.private = b''
        if self.attr == REJ:
            self.msg_rejected = d[8] >> 6
            self.reason = struct.unpack('!H', d[10:12])[0]
            self.private = d[84:232]
        elif self.attr == REP:
            self.qpn = int.from_bytes(d[12:15], 'big')
            self.psn = int.from_bytes(d[20:23], 'big')
            self.resp_res, self.init_depth = d[24], d[25]
            self.private = d[36:232]
        elif self.attr == REQ:
            self.local_comm_id = struct.unpack('!I', d[:4])[0]
            self.remote_comm_id = None
            self.sid = struct.unpack('!Q', d[8:16])[0]
            self.qpn = int.from_bytes(d[32:35], 'big')
            self.psn = int.from_bytes(d[44:47], 'big')
            self.private = d[140:232]

    def name(self):
        return ATTR_NAMES.get(self.attr, '0x%04x' % self.attr)

    def __repr__(self):
        s = '%s tid=%x lid=%08x rid=%08x' % (self.name(), self.tid, self.local_comm_id,
                                             self.remote_comm_id or 0)
        if self.reason is not None:
            s += ' reason=%d' % self.reason
        if self.qpn is not None:
            s += ' qpn=%06x psn=%06x' % (self.qpn, self.psn)
        return s


def parse_reply(r):
    """A Mad when the roce.Reply r is a UD SEND_ONLY to QP1 holding a 256-byte MAD."""
    if r.opcode != UD_SEND_ONLY or r.dqpn != 1 or len(r.payload) < 8 + MAD_LEN:
        return None
    return Mad(r.payload[:8 + MAD_LEN])
