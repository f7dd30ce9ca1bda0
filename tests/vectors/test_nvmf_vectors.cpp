/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/nvmf against real NVMe/RDMA traffic: the Linux nvme-rdma initiator talking to the
 * Linux nvmet-rdma target (../shared/vectors/rxe-features/nvmf_rdma_*.pcap). The host's
 * side is replayed into our target: its CM REQ private data into Target::accept, its
 * command capsules (SEND payloads) into the queues, the data it gave the kernel target
 * (RDMA READ responses) back to our RDMA READs. Then our answers are held against the
 * kernel's: REP crqsize, every CQE's status (and the Connect/Property values that
 * matter), key Identify fields, the discovery log. Where we differ on purpose, the test
 * says so by name (kKnownDifferences). Our target is configured from what the kernel
 * target said (namespace sizes, MDTS, in-capsule size), as an operator would. */
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cm_mad.h"
#include "nvmf.h"
#include "nvmf_capsule.h"
#include "pcap_read.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::nvmf;

namespace {

constexpr uint32_t kHostIp = 0x0A4D1403; /* 10.77.20.3, the initiator */

struct Blob {
    size_t frame;
    uint32_t rkey;
    uint64_t va;
    std::vector<uint8_t> data;
};

struct Capsule {
    size_t frame;
    uint32_t tqpn;
    std::vector<uint8_t> bytes;
};
struct KCqe {
    size_t frame;
    uint32_t tqpn;
    Cqe cqe;
    bool inv;
    uint32_t ieth;
};
struct CmEv {
    size_t frame;
    uint16_t attr;
    cm::CmMad m;
};

/* Everything one capture says, decoded. */
struct Capture {
    std::vector<CmEv> cm;
    std::vector<Capsule> caps;
    std::vector<KCqe> cqes;
    std::vector<Blob> host_data;   /* RDMA READ responses: what the host gave */
    std::vector<Blob> kernel_data; /* RDMA WRITEs: what the kernel target returned */
    std::map<uint32_t, uint32_t> host_to_target_qpn;
};

void load(const std::string &name, Capture &c) {
    std::string err;
    auto frames = test::read_eth_capture(test::vectors_dir() + "/rxe-features/" + name, err);
    ASSERT_TRUE(err.empty()) << name << ": " << err;
    ASSERT_GT(frames.size(), 100u);
    std::map<uint32_t, std::deque<Blob>> reads; /* by target QPN: requests outstanding */
    std::map<uint32_t, Blob> writes;            /* by host QPN: the WRITE in progress */
    uint32_t last_req_host_qpn = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        wire::ParsedPacket p{};
        if (wire::parse_frame(frames[i].data(), frames[i].size(), p, false) !=
            wire::ParseResult::Ok)
            continue;
        const bool from_host = wire::gid_to_ipv4(p.src_gid) == kHostIp;
        const uint8_t *pl = p.payload;
        const uint32_t n = p.payload_len;
        if (p.bth.dest_qp == 1) {
            CmEv e{i, 0, {}};
            if (cm::parse_cm_mad(pl, n, e.m) != cm::MadError::Ok)
                continue;
            e.attr = e.m.hdr.attr_id;
            if (e.attr == static_cast<uint16_t>(cm::CmAttr::Req))
                last_req_host_qpn = e.m.req.local_qpn;
            if (e.attr == static_cast<uint16_t>(cm::CmAttr::Rep))
                c.host_to_target_qpn[last_req_host_qpn] = e.m.rep.local_qpn;
            c.cm.push_back(e);
            continue;
        }
        const uint8_t op = p.bth.opcode;
        if (from_host) {
            const uint32_t tq = p.bth.dest_qp;
            if (op == wire::kRcSendOnly) {
                c.caps.push_back({i, tq, std::vector<uint8_t>(pl, pl + n)});
            } else if (op >= wire::kRcReadResponseFirst && op <= wire::kRcReadResponseOnly) {
                auto &q = reads[tq];
                if (q.empty())
                    continue; /* the request was before the capture started */
                q.front().data.insert(q.front().data.end(), pl, pl + n);
                if (op == wire::kRcReadResponseLast || op == wire::kRcReadResponseOnly) {
                    q.front().frame = i;
                    c.host_data.push_back(std::move(q.front()));
                    q.pop_front();
                }
            }
        } else {
            const uint32_t hq = p.bth.dest_qp;
            auto it = c.host_to_target_qpn.find(hq);
            const uint32_t tq = it == c.host_to_target_qpn.end() ? 0 : it->second;
            if (op == wire::kRcReadRequest) {
                reads[tq].push_back({i, p.reth.rkey, p.reth.va, {}});
            } else if (op == wire::kRcWriteFirst || op == wire::kRcWriteOnly) {
                writes[hq] = {i, p.reth.rkey, p.reth.va, std::vector<uint8_t>(pl, pl + n)};
                if (op == wire::kRcWriteOnly)
                    c.kernel_data.push_back(std::move(writes[hq]));
            } else if (op == wire::kRcWriteMiddle || op == wire::kRcWriteLast) {
                auto &w = writes[hq];
                w.data.insert(w.data.end(), pl, pl + n);
                if (op == wire::kRcWriteLast)
                    c.kernel_data.push_back(std::move(w));
            } else if ((op == wire::kRcSendOnly || op == wire::kRcSendOnlyInv) && n == 16 && tq) {
                c.cqes.push_back({i, tq, decode_cqe(pl), op == wire::kRcSendOnlyInv, p.ieth});
            }
        }
    }
}

/* The bytes the host exposed under (rkey, va..va+len), from the READ responses seen. */
bool host_bytes(const Capture &c, uint32_t rkey, uint64_t va, uint32_t len, uint8_t *out) {
    uint32_t got = 0;
    while (got < len) {
        bool found = false;
        for (const auto &b : c.host_data)
            if (b.rkey == rkey && b.va <= va + got && va + got < b.va + b.data.size()) {
                const uint64_t off = va + got - b.va;
                const uint32_t k =
                    static_cast<uint32_t>(std::min<uint64_t>(b.data.size() - off, len - got));
                std::memcpy(out + got, b.data.data() + off, k);
                got += k;
                found = true;
                break;
            }
        if (!found)
            return false;
    }
    return true;
}

/* The kernel target's data for a command: its first RDMA WRITE to the SGL after it. */
const Blob *kernel_bytes(const Capture &c, size_t after, const Command &cmd) {
    for (const auto &b : c.kernel_data)
        if (b.frame > after && b.rkey == cmd.sgl.key && b.va == cmd.sgl.addr)
            return &b;
    return nullptr;
}

const KCqe *kernel_cqe(const Capture &c, const Capsule &cap, uint16_t cid) {
    for (const auto &k : c.cqes)
        if (k.frame > cap.frame && k.tqpn == cap.tqpn && k.cqe.cid == cid)
            return &k;
    return nullptr;
}

/* The replayed transport: READs answered from the capture, everything recorded. */
class ReplayTx : public TransportActions {
  public:
    explicit ReplayTx(const Capture &c) : cap(c) {}
    const Capture &cap;
    std::deque<std::pair<uint16_t, bool>> reads;
    std::deque<uint16_t> sends;
    std::vector<Cqe> cqes;
    std::vector<bool> invs;
    std::vector<std::vector<uint8_t>> writes;
    int disconnects = 0;
    bool rdma_read(uint16_t tag, void *local, uint32_t len, uint64_t va, uint32_t rkey) override {
        reads.emplace_back(tag, host_bytes(cap, rkey, va, len, static_cast<uint8_t *>(local)));
        return true;
    }
    bool rdma_write(uint16_t, const void *local, uint32_t len, uint64_t, uint32_t) override {
        auto *p = static_cast<const uint8_t *>(local);
        writes.emplace_back(p, p + len);
        return true;
    }
    bool send(uint16_t tag, const uint8_t *cqe, bool inv, uint32_t) override {
        cqes.push_back(decode_cqe(cqe));
        invs.push_back(inv);
        sends.push_back(tag);
        return true;
    }
    void disconnect() override { ++disconnects; }
    void pump(Queue &q) {
        while (!reads.empty() || !sends.empty()) {
            if (!reads.empty()) {
                auto [t, ok] = reads.front();
                reads.pop_front();
                q.on_read_done(t, ok, 0);
            } else {
                q.on_send_done(sends.front());
                sends.pop_front();
            }
        }
    }
};

std::string cstr(const uint8_t *p, size_t max) {
    return std::string(reinterpret_cast<const char *>(p),
                       strnlen(reinterpret_cast<const char *>(p), max));
}
std::string trimmed(const uint8_t *p, size_t n) {
    std::string s(reinterpret_cast<const char *>(p), n);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\0'))
        s.pop_back();
    return s;
}

std::string describe(const Command &c, uint16_t qid) {
    char b[64];
    if (qid && c.opc != kOpcFabrics)
        snprintf(b, sizeof b, "NVM opcode 0x%02x", c.opc);
    else if (c.opc == kOpcFabrics)
        snprintf(b, sizeof b, "fabrics fctype 0x%02x", c.fctype);
    else if (c.opc == kAdminIdentify)
        snprintf(b, sizeof b, "identify cns 0x%02x", c.cdw10 & 0xFF);
    else if (c.opc == kAdminGetLogPage)
        snprintf(b, sizeof b, "get log 0x%02x", c.cdw10 & 0xFF);
    else if (c.opc == kAdminSetFeatures || c.opc == kAdminGetFeatures)
        snprintf(b, sizeof b, "%s features 0x%02x", c.opc == kAdminSetFeatures ? "set" : "get",
                 c.cdw10 & 0xFF);
    else
        snprintf(b, sizeof b, "opcode 0x%02x", c.opc);
    return b;
}

/* Admin commands where our answer differs from nvmet's on purpose. */
struct Known {
    uint8_t opc;
    uint8_t sub; /* CNS / LID */
    const char *why;
};
constexpr Known kKnownDifferences[] = {
    {kAdminIdentify, 0x06,
     "CNS 06h (I/O command set controller, NVMe 2.0): we speak 1.4, "
     "Invalid Field as 1.4 requires for an unknown CNS"},
    {kAdminGetLogPage, 0x0C,
     "ANA log: our Identify does not claim ANA (CMIC bit 3 clear), "
     "so a host would not ask; Invalid Field"},
};
const Known *known(const Command &c) {
    for (const auto &k : kKnownDifferences)
        if (k.opc == c.opc && k.sub == (c.cdw10 & 0xFF) && c.opc != kOpcFabrics)
            return &k;
    return nullptr;
}

struct Replay {
    Capture cap;
    std::vector<std::unique_ptr<Bdev>> bdevs;
    std::unique_ptr<Target> t;
    std::string subnqn, hostnqn;
    uint32_t mdts_bytes = 0, ioccsz = 0;
    int compared = 0, agreed = 0, identify_checked = 0, disc_checked = 0, held_both = 0;
    std::set<std::string> seen;

    /* Configure our target as the kernel's was, from what it answered. */
    void configure(const std::vector<std::string> &allowed) {
        TargetConfig cfg;
        SubsystemConfig s;
        std::map<uint32_t, std::pair<uint64_t, uint8_t>> ns; /* nsid -> nsze, lbads */
        for (const auto &c : cap.caps) {
            Command cmd;
            if (!parse_command(c.bytes.data(), c.bytes.size(), cmd))
                continue;
            if (cmd.opc == kOpcFabrics && cmd.fctype == kFcConnect) {
                std::vector<uint8_t> d(kConnectDataLen);
                bool have =
                    cmd.sgl.kind == Sgl::Kind::InCapsule
                        ? c.bytes.size() >= kSqeLen + kConnectDataLen
                        : host_bytes(cap, cmd.sgl.key, cmd.sgl.addr, kConnectDataLen, d.data());
                if (cmd.sgl.kind == Sgl::Kind::InCapsule && have)
                    std::memcpy(d.data(), c.bytes.data() + kSqeLen, kConnectDataLen);
                if (have && cstr(d.data() + 256, 256) != kDiscoveryNqn) {
                    subnqn = cstr(d.data() + 256, 256);
                    if (hostnqn.empty())
                        hostnqn = cstr(d.data() + 512, 256);
                }
            }
            const Blob *b = kernel_bytes(cap, c.frame, cmd);
            if (!b || cmd.opc != kAdminIdentify)
                continue;
            if ((cmd.cdw10 & 0xFF) == kCnsController && b->data[111] == 1) {
                mdts_bytes = 4096u << b->data[77];
                ioccsz = ld32(b->data.data() + 1792);
            }
            if ((cmd.cdw10 & 0xFF) == kCnsNamespace)
                ns[cmd.nsid] = {ld64(b->data.data()), b->data[128 + (b->data[26] & 0xF) * 4 + 2]};
        }
        s.nqn = subnqn;
        s.allowed_hosts = allowed.empty() ? std::vector<std::string>{hostnqn} : allowed;
        for (auto &[nsid, v] : ns) {
            bdevs.push_back(make_ram_bdev(v.first << v.second, 1u << v.second));
            s.namespaces.push_back({nsid, bdevs.back().get(), {}});
        }
        cfg.subsystems = {s};
        cfg.traddr = "10.77.20.2";
        cfg.max_io_bytes = mdts_bytes ? mdts_bytes : 128 * 1024;
        cfg.in_capsule_bytes = ioccsz ? ioccsz * 16 - 64 : 8192;
        cfg.max_io_depth = 128;
        std::string err;
        t = Target::create(cfg, err);
        ASSERT_TRUE(t) << err;
    }

    void check_identify(const Command &cmd, const std::vector<uint8_t> &ours,
                        const std::vector<uint8_t> &kern) {
        ASSERT_EQ(ours.size(), kern.size());
        const uint8_t *o = ours.data(), *k = kern.data();
        SCOPED_TRACE(describe(cmd, 0));
        switch (cmd.cdw10 & 0xFF) {
        case kCnsController:
            EXPECT_EQ(o[111], k[111]) << "CNTRLTYPE";
            EXPECT_EQ(cstr(o + 768, 256), cstr(k + 768, 256)) << "SUBNQN";
            if (k[111] == 2) /* nvmet leaves the I/O queue fields of a discovery controller 0 */
                break;
            EXPECT_EQ(o[512], k[512]) << "SQES";
            EXPECT_EQ(o[513], k[513]) << "CQES";
            EXPECT_EQ(o[77], k[77]) << "MDTS";
            EXPECT_EQ(ld32(o + 536) & 0x7, ld32(k + 536) & 0x7) << "SGLS: SGL + keyed";
            EXPECT_EQ(ld32(o + 536) >> 20 & 1, ld32(k + 536) >> 20 & 1) << "SGLS: offsets";
            EXPECT_EQ(ld32(o + 1792), ld32(k + 1792)) << "IOCCSZ";
            EXPECT_EQ(ld32(o + 1796), ld32(k + 1796)) << "IORCSZ";
            EXPECT_EQ(ld16(o + 1800), ld16(k + 1800)) << "ICDOFF";
            EXPECT_EQ(o[1803], k[1803]) << "MSDBD";
            /* NN is the highest valid nsid: nvmet says 1024 (namespaces can be added at
             * run time), we say the highest configured one; both cover the active list. */
            EXPECT_GE(ld32(o + 516), 1u);
            EXPECT_EQ(ld16(o + 520) & 0x0C, ld16(k + 520) & 0x0C) << "ONCS DSM, WZ";
            break;
        case kCnsNamespace:
            EXPECT_EQ(ld64(o), ld64(k)) << "NSZE";
            EXPECT_EQ(ld64(o + 8), ld64(k + 8)) << "NCAP";
            EXPECT_EQ(o[130], k[128 + (k[26] & 0xF) * 4 + 2]) << "LBADS";
            break;
        case kCnsActiveNsList:
            EXPECT_EQ(0, std::memcmp(o, k, kIdentifyLen)) << "active namespace list";
            break;
        case kCnsNsDescList:
            /* Both describe the namespace; the identifiers themselves are configuration. */
            EXPECT_NE(o[0], 0);
            EXPECT_NE(k[0], 0);
            break;
        }
        ++identify_checked;
    }

    void check_discovery(const std::vector<uint8_t> &ours, const std::vector<uint8_t> &kern) {
        const uint8_t *o = ours.data(), *k = kern.data();
        EXPECT_EQ(ld64(o + 8), ld64(k + 8)) << "NUMREC";
        EXPECT_EQ(ld16(o + 16), ld16(k + 16)) << "RECFMT";
        for (size_t e = 1024; e + 1024 <= std::min(ours.size(), kern.size()); e += 1024) {
            SCOPED_TRACE("discovery entry at " + std::to_string(e));
            EXPECT_EQ(o[e + 0], k[e + 0]) << "TRTYPE";
            EXPECT_EQ(o[e + 1], k[e + 1]) << "ADRFAM";
            EXPECT_EQ(o[e + 2], k[e + 2]) << "SUBTYPE";
            EXPECT_EQ(ld16(o + e + 6), ld16(k + e + 6)) << "CNTLID";
            EXPECT_EQ(trimmed(o + e + 32, 32), trimmed(k + e + 32, 32)) << "TRSVCID";
            EXPECT_EQ(cstr(o + e + 256, 256), cstr(k + e + 256, 256)) << "SUBNQN";
            EXPECT_EQ(trimmed(o + e + 512, 256), trimmed(k + e + 512, 256)) << "TRADDR";
            EXPECT_EQ(ld16(o + e + 8), ld16(k + e + 8)) << "ASQSZ";
            EXPECT_EQ(o[e + 768], k[e + 768]) << "RDMA QPTYPE";
            EXPECT_EQ(o[e + 770], k[e + 770]) << "RDMA CMS";
        }
        ++disc_checked;
    }

    void run() {
        struct Conn {
            Queue *q = nullptr;
            std::unique_ptr<ReplayTx> tx;
        };
        std::map<uint32_t, Conn> conns;          /* by target QPN */
        std::map<uint16_t, uint16_t> cntlid_map; /* kernel's -> ours */
        std::deque<Queue *> pending;             /* accepted, waiting for the REP's QPN */
        std::unique_ptr<ReplayTx> pending_tx;
        size_t ci = 0, ki = 0;
        while (ci < cap.cm.size() || ki < cap.caps.size()) {
            const bool cm_next = ci < cap.cm.size() &&
                                 (ki >= cap.caps.size() || cap.cm[ci].frame < cap.caps[ki].frame);
            if (cm_next) {
                const CmEv &e = cap.cm[ci++];
                if (e.attr == static_cast<uint16_t>(cm::CmAttr::Req)) {
                    const uint8_t *priv = e.m.req.private_data + cm::kIpCmHdrLen;
                    pending_tx = std::make_unique<ReplayTx>(cap);
                    AcceptResult a =
                        t->accept(priv, cm::kReqPrivLen - cm::kIpCmHdrLen, *pending_tx);
                    ASSERT_NE(a.queue, nullptr) << "frame " << e.frame + 1;
                    pending.push_back(a.queue);
                    /* Keep our REP to compare with the kernel's. */
                    CmRepPriv ours;
                    ASSERT_EQ(parse_cm_rep_priv(a.priv, a.priv_len, ours), CmPrivError::Ok);
                    our_crqsize.push_back(ours.crqsize);
                    CmReqPriv r;
                    ASSERT_EQ(parse_cm_req_priv(priv, 32, r), CmPrivError::Ok);
                    seen.insert("cm req qid " + std::to_string(r.qid));
                } else if (e.attr == static_cast<uint16_t>(cm::CmAttr::Rep) && !pending.empty()) {
                    CmRepPriv k;
                    ASSERT_EQ(parse_cm_rep_priv(e.m.rep.private_data, cm::kRepPrivLen, k),
                              CmPrivError::Ok);
                    EXPECT_EQ(our_crqsize.front(), k.crqsize)
                        << "REP crqsize, frame " << e.frame + 1;
                    our_crqsize.pop_front();
                    ++compared;
                    Conn &c = conns[e.m.rep.local_qpn];
                    c.q = pending.front();
                    c.tx = std::move(pending_tx);
                    pending.pop_front();
                } else if (e.attr == static_cast<uint16_t>(cm::CmAttr::Dreq)) {
                    auto it = conns.find(e.m.dreq.remote_qpn);
                    if (it != conns.end() && it->second.q) {
                        it->second.q->on_disconnect();
                        t->destroy_queue(it->second.q);
                        conns.erase(it);
                    }
                }
                continue;
            }
            const Capsule &c = cap.caps[ki++];
            auto it = conns.find(c.tqpn);
            if (it == conns.end())
                continue; /* a connection set up before the capture started */
            Conn &cn = it->second;
            std::vector<uint8_t> bytes = c.bytes;
            Command cmd;
            ASSERT_TRUE(parse_command(bytes.data(), bytes.size(), cmd));
            const KCqe *k = kernel_cqe(cap, c, cmd.cid);
            /* The I/O queue Connect names the kernel's controller: name ours instead. */
            if (cmd.opc == kOpcFabrics && cmd.fctype == kFcConnect &&
                cmd.sgl.kind == Sgl::Kind::InCapsule && bytes.size() >= kSqeLen + 18) {
                const uint16_t kc = ld16(bytes.data() + kSqeLen + 16);
                if (cntlid_map.count(kc))
                    st16(bytes.data() + kSqeLen + 16, cntlid_map[kc]);
            }
            if (!k) {
                /* No answer in the capture: an AER (held) or a write cut off by the
                 * capture's end. */
                if (cmd.opc == kAdminAsyncEvent && cn.q->qid() == 0) {
                    const size_t n = cn.tx->cqes.size();
                    cn.q->on_capsule(bytes.data(), bytes.size(), 0);
                    cn.tx->pump(*cn.q);
                    EXPECT_EQ(cn.tx->cqes.size(), n) << "AER must be held";
                    ++held_both;
                }
                continue;
            }
            const size_t n = cn.tx->cqes.size(), nw = cn.tx->writes.size();
            EXPECT_EQ(cn.q->on_capsule(bytes.data(), bytes.size(), 0), CapsuleResult::Accepted);
            cn.tx->pump(*cn.q);
            ASSERT_EQ(cn.tx->cqes.size(), n + 1)
                << describe(cmd, cn.q->qid()) << " frame " << c.frame + 1;
            const Cqe ours = cn.tx->cqes.back();
            const std::string what = describe(cmd, cn.q->qid()) + " (frame " +
                                     std::to_string(c.frame + 1) + ", qid " +
                                     std::to_string(cn.q->qid()) + ")";
            seen.insert(describe(cmd, cn.q->qid()));
            ++compared;
            EXPECT_EQ(ours.cid, k->cqe.cid);
            EXPECT_EQ(ours.sqid, k->cqe.sqid) << what;
            EXPECT_EQ(cn.tx->invs.back(), k->inv) << "SEND with Invalidate: " << what;
            if (const Known *kn = known(cmd)) {
                EXPECT_EQ(k->cqe.status, 0) << what;
                EXPECT_EQ(status_sc(ours.status), kScInvalidField) << what << ": " << kn->why;
                continue;
            }
            EXPECT_EQ(ours.status, k->cqe.status) << what;
            if (ours.status == k->cqe.status)
                ++agreed;
            if (cmd.opc == kOpcFabrics && cmd.fctype == kFcConnect && !k->cqe.status) {
                cntlid_map[static_cast<uint16_t>(k->cqe.dw0)] = static_cast<uint16_t>(ours.dw0);
            } else if (cmd.opc == kOpcFabrics && cmd.fctype == kFcPropertyGet) {
                const uint32_t ofst = ld32(bytes.data() + 44);
                if (ofst == kPropCsts || ofst == kPropCc) {
                    EXPECT_EQ(ours.dw0, k->cqe.dw0) << what;
                }
                if (ofst == kPropCap) { /* CSS NVM, MPSMIN; MQES, TO are configuration */
                    EXPECT_EQ(ours.dw1 & 0x000F0020u, k->cqe.dw1 & 0x000F0020u) << what;
                }
            } else if (cmd.opc == kAdminSetFeatures && (cmd.cdw10 & 0xFF) == kFidNumQueues) {
                /* nvmet grants its maximum whatever is asked (allowed: "may allocate more
                 * or fewer"); we grant what is asked, capped. The host uses the smaller. */
                const uint32_t asked = cmd.cdw11 & 0xFFFF;
                EXPECT_EQ(ours.dw0 & 0xFFFF, std::min(asked, k->cqe.dw0 & 0xFFFF)) << what;
            }
            if (ours.status || k->cqe.status)
                continue;
            if (cn.q->qid() && cmd.opc == kNvmWrite)
                writes_done.push_back(cmd);
            const Blob *kb = kernel_bytes(cap, c.frame, cmd);
            if (kb && cn.tx->writes.size() == nw + 1) {
                const auto &ob = cn.tx->writes.back();
                if (cmd.opc == kAdminIdentify)
                    check_identify(cmd, ob, kb->data);
                else if (cmd.opc == kAdminGetLogPage && (cmd.cdw10 & 0xFF) == kLidDiscovery)
                    check_discovery(ob, kb->data);
            }
        }
    }
    std::deque<uint16_t> our_crqsize;
    std::vector<Command> writes_done; /* sqe pointers not kept: fields only */

    /* The data of every write both targets completed is on our RAM disk, as the host sent
     * it. Returns how many bytes were checked. */
    uint64_t verify_writes() {
        uint64_t checked = 0;
        for (const auto &w : writes_done) {
            Bdev *b = nullptr;
            size_t i = 0;
            for (const auto &c : t->config().subsystems[0].namespaces) {
                if (c.nsid == w.nsid)
                    b = bdevs[i].get();
                ++i;
            }
            EXPECT_NE(b, nullptr);
            if (!b)
                continue;
            const uint64_t slba = (uint64_t{w.cdw11} << 32) | w.cdw10;
            const uint32_t len = ((w.cdw12 & 0xFFFF) + 1u) * b->block_size();
            std::vector<uint8_t> disk(len), host(len);
            BdevIo io;
            io.op = BdevOp::Read;
            io.offset = slba * b->block_size();
            io.len = len;
            io.buf = disk.data();
            EXPECT_EQ(b->submit(io), Submit::Done);
            EXPECT_TRUE(host_bytes(cap, w.sgl.key, w.sgl.addr, len, host.data()));
            EXPECT_EQ(disk, host) << "write at LBA " << slba;
            checked += len;
        }
        return checked;
    }
};

TEST(NvmfVectors, ConnectIdentifyDiscoveryAndWritesAgreeWithNvmet) {
    Replay r;
    load("nvmf_rdma_connect_io.pcap", r.cap);
    ASSERT_GE(r.cap.cm.size(), 9u);
    ASSERT_GE(r.cap.caps.size(), 40u);
    r.configure({});
    ASSERT_FALSE(r.subnqn.empty());
    ASSERT_NE(r.mdts_bytes, 0u);
    r.run();
    printf("compared %d answers (%d statuses agree), %d Identify, %d discovery logs, %d AERs "
           "held by both; subsystem %s, MDTS %u, IOCCSZ %u\n",
           r.compared, r.agreed, r.identify_checked, r.disc_checked, r.held_both, r.subnqn.c_str(),
           r.mdts_bytes, r.ioccsz);
    for (const auto &s : r.seen)
        printf("  seen: %s\n", s.c_str());
    EXPECT_GE(r.compared, 40);
    EXPECT_GE(r.identify_checked, 6);
    EXPECT_EQ(r.disc_checked, 2);
    EXPECT_GE(r.held_both, 2);
    /* The host's 1 MiB writes (carried by our RDMA READs from the capture's data) are on
     * our RAM disk byte for byte. */
    const uint64_t checked = r.verify_writes();
    printf("verified %llu bytes written\n", static_cast<unsigned long long>(checked));
    EXPECT_GE(checked, 2u << 20);
}

TEST(NvmfVectors, StrangerHostRefusedAsNvmetRefusedIt) {
    /* The allow list holds the first capture's host; the second capture ends with another
     * host's Connect, which nvmet refused. */
    Replay first;
    load("nvmf_rdma_connect_io.pcap", first.cap);
    first.configure({});
    Replay r;
    load("nvmf_rdma_disconnect_stranger.pcap", r.cap);
    r.subnqn = first.subnqn;
    r.mdts_bytes = first.mdts_bytes;
    r.ioccsz = first.ioccsz;
    r.configure({first.hostnqn});
    r.run();
    EXPECT_GE(r.compared, 2); /* REP + the Connect */
    EXPECT_EQ(r.t->counters().st_connect_host, 1u);
    EXPECT_EQ(r.agreed, 1); /* that Connect's status is the kernel's: Connect Invalid Host */
    printf("stranger: compared %d, %d agree\n", r.compared, r.agreed);
}

} // namespace
