/* SPDX-License-Identifier: BSD-3-Clause */
/* Linux's side of real RDMA-CM handshakes (rping, ucmatose, ib_write_bw -R between two
 * rxe peers) replayed into lib/cm's state machine. Passive: the captured REQs go into a
 * listener that accepts with the QPN and PSN Linux's passive side chose; the REP it builds
 * must be Linux's REP byte for byte but for our own comm ID (QPN, PSN, resources, ACK
 * delay, RNR retries, CA GUID, private data: what accept() gave, never an echo of the
 * REQ's), then the captured RTU establishes it and the DREQ/DREP exchange closes it as
 * Linux did. Active: connect() with the captured REQ's values, the captured REP in, and
 * the RTU out must be Linux's but for the comm ID and transaction ID. */
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cm_test_link.h"
#include "pcap_read.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::cm;
using namespace droce::cm::test;

namespace {

struct Mad {
    bool from_active; /* sent by the REQ's sender */
    MadAddr from;
    std::vector<uint8_t> bytes;
    CmMad m;
};

/* The capture's CM MADs, in order, each tagged with its direction (the first REQ's
 * source is the active side; every capture here has one active host). */
std::vector<Mad> load(const std::string &name) {
    std::string err;
    const auto frames =
        droce::test::read_eth_capture(droce::test::vectors_dir() + "/rxe/" + name, err);
    EXPECT_TRUE(err.empty()) << err;
    std::vector<Mad> out;
    uint8_t active_gid[16] = {};
    bool have_active = false;
    for (const auto &f : frames) {
        wire::ParsedPacket p{};
        if (wire::parse_frame(f.data(), f.size(), p, true) != wire::ParseResult::Ok ||
            p.bth.dest_qp != 1)
            continue;
        Mad d{};
        d.bytes.assign(p.payload, p.payload + p.payload_len);
        EXPECT_EQ(parse_cm_mad(d.bytes.data(), d.bytes.size(), d.m), MadError::Ok);
        if (!have_active && d.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Req)) {
            std::memcpy(active_gid, p.src_gid, 16);
            have_active = true;
        }
        d.from_active = std::memcmp(p.src_gid, active_gid, 16) == 0;
        std::memcpy(d.from.gid, p.src_gid, 16);
        d.from.qpn = p.deth.src_qp;
        out.push_back(std::move(d));
    }
    return out;
}

void put32(uint8_t *p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

constexpr size_t kLocalId = kMadHdrLen;      /* every CM message: local comm ID first */
constexpr size_t kRemoteId = kMadHdrLen + 4; /* then the remote one (not in a REQ) */

/* Equal but for the 4 bytes at `skip` (and the TID when skip_tid). */
void expect_same_but(const std::vector<uint8_t> &ours, const std::vector<uint8_t> &linux_,
                     size_t skip, bool skip_tid, const std::string &what) {
    ASSERT_EQ(ours.size(), kMadLen);
    ASSERT_EQ(linux_.size(), kMadLen);
    for (size_t i = 0; i < kMadLen; ++i) {
        if (i >= skip && i < skip + 4)
            continue;
        if (skip_tid && i >= 8 && i < 16)
            continue;
        EXPECT_EQ(ours[i], linux_[i]) << what << ": byte " << i;
    }
}

void replay_passive(const std::string &name, size_t expect_conns) {
    SCOPED_TRACE(name);
    const std::vector<Mad> mads = load(name);
    ASSERT_FALSE(mads.empty());
    /* Our CA GUID: Linux's passive one, so that the REPs can match byte for byte. */
    uint64_t guid = 0;
    for (const Mad &d : mads)
        if (d.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Rep))
            guid = d.m.rep.local_ca_guid;
    RecordSink out;
    EventLog log;
    CmConfig cfg;
    cfg.local_ca_guid = guid;
    CmManager cm(cfg, out, log);
    std::map<uint32_t, uint32_t> ours_by_linux; /* Linux passive comm ID -> ours */
    std::map<uint32_t, uint32_t> ours_by_req;   /* the REQ's (active) comm ID -> ours */
    uint64_t now = 1'000'000;
    for (size_t i = 0; i < mads.size(); ++i, now += 1'000'000) {
        const Mad &d = mads[i];
        const auto attr = static_cast<CmAttr>(d.m.hdr.attr_id);
        SCOPED_TRACE("MAD #" + std::to_string(i) + " " + cm_attr_name(d.m.hdr.attr_id));
        if (d.from_active) {
            std::vector<uint8_t> b = d.bytes;
            if (attr == CmAttr::Req) {
                ASSERT_TRUE(cm.listen(d.m.req.service_id) || true);
            } else {
                /* The active side names Linux's passive comm ID: ours instead. */
                const uint8_t *q = d.bytes.data() + kRemoteId; /* same offset in all */
                const uint32_t linux_id = static_cast<uint32_t>(q[0]) << 24 |
                                          static_cast<uint32_t>(q[1]) << 16 |
                                          static_cast<uint32_t>(q[2]) << 8 | q[3];
                ASSERT_TRUE(ours_by_linux.count(linux_id));
                put32(b.data() + kRemoteId, ours_by_linux[linux_id]);
            }
            const size_t before = out.sent.size();
            const size_t ev_before = log.events.size();
            cm.on_mad(d.from, b.data(), b.size(), now);
            if (attr == CmAttr::Req) {
                ASSERT_EQ(log.events.size(), ev_before + 1);
                const LoggedEvent &e = log.events.back();
                ASSERT_EQ(e.ev.type, CmEventType::ConnectRequest);
                ours_by_req[d.m.req.local_comm_id] = e.ev.conn;
                /* What the QP needs, from the REQ. */
                EXPECT_EQ(e.ev.qp.remote_qpn, d.m.req.local_qpn);
                EXPECT_EQ(e.ev.qp.sq_psn, d.m.req.starting_psn);
                EXPECT_EQ(e.ev.qp.path_mtu, d.m.req.path_mtu);
                EXPECT_EQ(e.ev.qp.local_ack_timeout, d.m.req.primary.local_ack_timeout);
                EXPECT_EQ(0, std::memcmp(e.ev.qp.remote_gid, d.from.gid, 16));
                EXPECT_EQ(0, std::memcmp(e.ev.qp.local_gid, d.m.req.primary.remote_gid, 16));
                /* The private data as sent: rdma_cm's IP header first. */
                ASSERT_EQ(e.pd.size(), kReqPrivLen);
                IpCmHdr ih;
                EXPECT_EQ(parse_ip_cm_hdr(e.pd.data(), e.pd.size(), ih), IpCmError::Ok);
                /* Accept as Linux did: the next passive MAD is its REP. */
                const Mad *rep = nullptr;
                for (size_t j = i + 1; j < mads.size() && !rep; ++j)
                    if (!mads[j].from_active &&
                        mads[j].m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Rep) &&
                        mads[j].m.rep.remote_comm_id == d.m.req.local_comm_id)
                        rep = &mads[j];
                ASSERT_NE(rep, nullptr);
                AcceptParams p;
                p.local_qpn = rep->m.rep.local_qpn;
                p.rq_psn = rep->m.rep.starting_psn;
                p.responder_resources = rep->m.rep.responder_resources;
                p.initiator_depth = rep->m.rep.initiator_depth;
                p.rnr_retry_count = rep->m.rep.rnr_retry_count;
                p.target_ack_delay = rep->m.rep.target_ack_delay;
                p.srq = rep->m.rep.srq;
                p.private_data = rep->m.rep.private_data;
                p.private_data_len = kRepPrivLen;
                ASSERT_TRUE(cm.accept(e.ev.conn, p, now));
                ours_by_linux[rep->m.rep.local_comm_id] = e.ev.conn;
                ASSERT_EQ(out.sent.size(), before + 1);
                const SentMad &s = out.sent.back();
                const CmMad ours = s.decode();
                ASSERT_EQ(ours.hdr.attr_id, static_cast<uint16_t>(CmAttr::Rep));
                EXPECT_EQ(ours.hdr.tid, d.m.hdr.tid);
                EXPECT_EQ(ours.rep.remote_comm_id, d.m.req.local_comm_id);
                EXPECT_EQ(ours.rep.local_comm_id, e.ev.conn);
                EXPECT_EQ(ours.rep.local_qpn, rep->m.rep.local_qpn);
                EXPECT_EQ(ours.rep.starting_psn, rep->m.rep.starting_psn);
                EXPECT_LE(ours.rep.responder_resources, d.m.req.initiator_depth);
                EXPECT_LE(ours.rep.initiator_depth, d.m.req.responder_resources);
                EXPECT_EQ(0, std::memcmp(s.to.gid, d.from.gid, 16));
                /* rdma_cm's REP carries the acceptor's data only: no echo of the REQ's IP
                 * header (which is never all zero: it holds the IP version). */
                EXPECT_NE(0, std::memcmp(ours.rep.private_data, d.m.req.private_data, kIpCmHdrLen));
                expect_same_but(s.bytes, rep->bytes, kLocalId, false, "REP");
            } else if (attr == CmAttr::Rtu) {
                const uint32_t ours = ours_by_linux[d.m.rtu.remote_comm_id];
                EXPECT_EQ(cm.state(ours), ConnState::Established);
                EXPECT_EQ(out.sent.size(), before);
            } else if (attr == CmAttr::Dreq) {
                const uint32_t ours = ours_by_linux[d.m.dreq.remote_comm_id];
                EXPECT_EQ(cm.state(ours), ConnState::Timewait);
                ASSERT_EQ(out.sent.size(), before + 1);
                /* Linux's DREP is the passive MAD answering it. */
                const Mad *drep = nullptr;
                for (size_t j = i + 1; j < mads.size() && !drep; ++j)
                    if (!mads[j].from_active &&
                        mads[j].m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Drep) &&
                        mads[j].m.drep.remote_comm_id == d.m.dreq.local_comm_id)
                        drep = &mads[j];
                ASSERT_NE(drep, nullptr);
                expect_same_but(out.sent.back().bytes, drep->bytes, kLocalId, false, "DREP");
            } else if (attr == CmAttr::Drep) {
                const uint32_t ours = ours_by_linux[d.m.drep.remote_comm_id];
                EXPECT_EQ(cm.state(ours), ConnState::Timewait);
            }
        } else if (attr == CmAttr::Dreq) {
            /* Linux's passive side disconnected here: so do we, and compare. */
            const uint32_t ours = ours_by_linux[d.m.dreq.local_comm_id];
            ASSERT_TRUE(cm.disconnect(ours, nullptr, 0, now));
            expect_same_but(out.sent.back().bytes, d.bytes, kLocalId, true, "DREQ");
        }
    }
    EXPECT_EQ(ours_by_req.size(), expect_conns);
    EXPECT_EQ(log.count(CmEventType::Established), expect_conns);
    EXPECT_EQ(log.count(CmEventType::Disconnected), expect_conns);
    uint64_t drops = 0;
    for (size_t k = 0; k < kCmCtrCount; ++k)
        if (std::string(cm_ctr_name(static_cast<CmCtr>(k))).rfind("drop_", 0) == 0)
            drops += cm.counters().v[k];
    EXPECT_EQ(drops, 0u);
}

TEST(CmReplay, PassiveRping) { replay_passive("rping.pcap", 1); }
TEST(CmReplay, PassiveUcmatose) { replay_passive("ucmatose.pcap", 1); }
TEST(CmReplay, PassiveWriteBwCm) { replay_passive("write_bw_cm.pcap", 2); }

/* Active: our REQ from the captured REQ's values, Linux's REP in, our RTU out. */
void replay_active(const std::string &name) {
    SCOPED_TRACE(name);
    const std::vector<Mad> mads = load(name);
    ASSERT_GE(mads.size(), 3u);
    const Mad &req = mads[0];
    ASSERT_EQ(req.m.hdr.attr_id, static_cast<uint16_t>(CmAttr::Req));
    const Mad *rep = nullptr, *rtu = nullptr;
    for (const Mad &d : mads) {
        if (!rep && d.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Rep))
            rep = &d;
        if (!rtu && d.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Rtu))
            rtu = &d;
    }
    ASSERT_TRUE(rep && rtu);
    const Req &r = req.m.req;
    RecordSink out;
    EventLog log;
    CmConfig cfg;
    cfg.local_ca_guid = r.local_ca_guid;
    std::memcpy(cfg.local_gid, r.primary.local_gid, 16);
    cfg.cm_response_timeout = r.remote_cm_response_timeout;
    cfg.max_cm_retries = r.max_cm_retries;
    CmManager cm(cfg, out, log);
    ConnectParams p;
    p.service_id = r.service_id;
    std::memcpy(p.peer.gid, r.primary.remote_gid, 16);
    p.peer.hop_limit = r.primary.hop_limit;
    p.peer.traffic_class = r.primary.traffic_class;
    p.peer.flow_label = r.primary.flow_label;
    p.local_qpn = r.local_qpn;
    p.rq_psn = r.starting_psn;
    p.path_mtu = r.path_mtu;
    p.responder_resources = r.responder_resources;
    p.initiator_depth = r.initiator_depth;
    p.local_ack_timeout = r.primary.local_ack_timeout;
    p.retry_count = r.retry_count;
    p.rnr_retry_count = r.rnr_retry_count;
    p.pkey = r.pkey;
    p.private_data = r.private_data;
    p.private_data_len = kReqPrivLen;
    const uint32_t id = cm.connect(p, 1000);
    ASSERT_NE(id, 0u);
    ASSERT_EQ(out.sent.size(), 1u);
    /* Our REQ is Linux's but for the comm ID, the TID, and the primary path's packet
     * rate byte (Linux fills in the port's rate; droce leaves it 0). */
    std::vector<uint8_t> ours = out.sent[0].bytes, theirs = req.bytes;
    ours[kMadHdrLen + 52 + 39] = theirs[kMadHdrLen + 52 + 39] = 0;
    expect_same_but(ours, theirs, kLocalId, true, "REQ");

    std::vector<uint8_t> b = rep->bytes;
    put32(b.data() + kRemoteId, id);
    cm.on_mad(rep->from, b.data(), b.size(), 2000);
    EXPECT_EQ(cm.state(id), ConnState::Established);
    ASSERT_EQ(log.count(CmEventType::Established), 1u);
    const QpParams &q = log.first(CmEventType::Established)->ev.qp;
    EXPECT_EQ(q.remote_qpn, rep->m.rep.local_qpn);
    EXPECT_EQ(q.sq_psn, rep->m.rep.starting_psn);
    EXPECT_EQ(q.rq_psn, r.starting_psn);
    ASSERT_EQ(out.sent.size(), 2u);
    expect_same_but(out.sent[1].bytes, rtu->bytes, kLocalId, true, "RTU");
}

TEST(CmReplay, ActiveRping) { replay_active("rping.pcap"); }
TEST(CmReplay, ActiveUcmatose) { replay_active("ucmatose.pcap"); }
TEST(CmReplay, ActiveWriteBwCm) { replay_active("write_bw_cm.pcap"); }

} // namespace
