/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the CM path of QP1: an input is either a whole frame (the seeds:
 * every frame of the vectors) or a bare MAD. A frame goes through parse_frame into a UD
 * QP1 (Q_Key, P_Key, GRH placement into a registered buffer, with guard bytes around it
 * that must not change); the MAD (the frame's payload, or the input itself) through
 * parse_cm_mad, and when accepted, build_cm_mad and parse again must agree; a REQ's
 * private data through the rdma_cm IP header parser. Any disagreement aborts. */
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cm_mad.h"
#include "ud_qp.h"
#include "wire_packet.h"

using namespace droce;

namespace {

[[noreturn]] void fail(const char *why) {
    __builtin_printf("fuzz_cm: %s\n", why);
    std::abort();
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail(#c);                                                                              \
    } while (0)

struct NullPort : rc::TxPort {
    bool transmit(const wire::FrameSpec &) override { return true; }
};
struct CountCq : rc::CqSink {
    Wc last{};
    bool push(const Wc &wc) override {
        last = wc;
        return true;
    }
};

constexpr size_t kGuard = 64;
constexpr size_t kBuf = 40 + 256;

void check_mad(const uint8_t *p, size_t n) {
    cm::CmMad m{};
    if (cm::parse_cm_mad(p, n, m) != cm::MadError::Ok)
        return;
    uint8_t b[cm::kMadLen];
    CHECK(cm::build_cm_mad(m, b, sizeof b) == cm::kMadLen);
    cm::CmMad m2{};
    CHECK(cm::parse_cm_mad(b, sizeof b, m2) == cm::MadError::Ok);
    uint8_t b2[cm::kMadLen];
    CHECK(cm::build_cm_mad(m2, b2, sizeof b2) == cm::kMadLen);
    CHECK(std::memcmp(b, b2, sizeof b) == 0);
    if (m.hdr.attr_id == static_cast<uint16_t>(cm::CmAttr::Req)) {
        cm::IpCmHdr h;
        uint16_t ps, port;
        (void)cm::parse_ip_service_id(m.req.service_id, ps, port);
        if (cm::parse_ip_cm_hdr(m.req.private_data, cm::kReqPrivLen, h) == cm::IpCmError::Ok) {
            uint8_t hb[cm::kIpCmHdrLen];
            cm::encode(h, hb);
            /* Byte 1's low nibble is reserved: the parser ignores it, encode writes 0. */
            hb[1] = static_cast<uint8_t>(hb[1] | (m.req.private_data[1] & 0x0F));
            CHECK(std::memcmp(hb, m.req.private_data, cm::kIpCmHdrLen) == 0);
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wire::ParsedPacket p{};
    if (wire::parse_frame(data, size, p, false) == wire::ParseResult::Ok) {
        static std::vector<uint8_t> mem(kGuard + kBuf + kGuard);
        std::memset(mem.data(), 0xA5, mem.size());
        mem::MrTable mrs(4);
        const uint32_t key = mrs.reg(1, mem.data() + kGuard, kBuf, kAccessLocalWrite)->key;
        NullPort port;
        CountCq cq;
        ud::QpConfig c;
        c.qpn = 1;
        c.pd = 1;
        c.port = &port;
        c.send_cq = &cq;
        c.recv_cq = &cq;
        c.mrs = &mrs;
        ud::Qp qp(c);
        QpAttr a{};
        a.qp_state = QpState::Init;
        a.qkey = ud::kGsiQkey;
        CHECK(qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
        a.qp_state = QpState::Rtr;
        CHECK(qp.modify(a, kQpState));
        RecvWr r;
        r.sg_list[0] = {reinterpret_cast<uint64_t>(mem.data() + kGuard), kBuf, key};
        r.num_sge = 1;
        CHECK(qp.post_recv(r));
        qp.on_packet(p, 0);
        for (size_t i = 0; i < kGuard; ++i)
            CHECK(mem[i] == 0xA5 && mem[kGuard + kBuf + i] == 0xA5);
        if (qp.counters().rx_packets)
            CHECK(cq.last.byte_len == 40 + p.payload_len);
        if (p.payload && p.bth.dest_qp == 1)
            check_mad(p.payload, p.payload_len);
    }
    check_mad(data, size);
    return 0;
}
