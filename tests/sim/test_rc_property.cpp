/* SPDX-License-Identifier: BSD-3-Clause */
/* Property tests of the RC transport on the simulator, one per fault profile: random
 * work requests (all eight operations, 0 B..1 MiB, 1-4 SGEs, signaled or not) on several
 * QP pairs in both directions. Checked: every WR completes exactly once, in order, with
 * success; receives match; target memory equals a shadow model byte for byte; atomics
 * return what the model predicts; nothing hangs (virtual-time bound).
 *
 * DROCE_SIM_WRS   work requests per profile (default 100000; CI default)
 * DROCE_SIM_SEED  seed (default 1); a failure prints it and the same seed replays it.
 */
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "sim_fabric.h"

using namespace droce;
using namespace droce::sim;

namespace {

uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

constexpr int kPairs = 4;
/* Per endpoint memory layout (one MR over all of it). */
constexpr uint64_t kSrcSize = 4u << 20;      /* immutable random bytes: SEND/WRITE sources */
constexpr uint64_t kReadAreaSize = 2u << 20; /* immutable random bytes: READ sources */
constexpr uint64_t kWriteArea = 1u << 20;    /* per pair: WRITE targets */
constexpr uint64_t kAtomicSlots = 64;        /* per pair: 8-byte atomic targets */
constexpr uint64_t kLanding = 2u << 20;      /* per pair: READ/atomic results and receives */

struct Layout {
    uint64_t src = 0;
    uint64_t read_area = src + kSrcSize;
    uint64_t write_area = read_area + kReadAreaSize;        /* + pair * kWriteArea */
    uint64_t atomics = write_area + kPairs * kWriteArea;    /* + pair * slots * 8 */
    uint64_t landing = atomics + kPairs * kAtomicSlots * 8; /* + pair * kLanding */
    uint64_t total = landing + kPairs * kLanding;
};
const Layout L;

struct Side; /* one endpoint's half of the test */

/* What a posted send WR must produce. */
struct Expect {
    uint64_t wr_id;
    bool signaled;
    WrOpcode op;
    uint64_t local_off; /* READ/atomic landing */
    uint32_t len;
    std::vector<uint8_t> data; /* READ: expected bytes; atomic: expected original */
};
struct ExpectRecv {
    uint64_t wr_id;
    uint64_t off;
    uint32_t len;
    uint64_t src_off; /* in the sender's immutable source */
    bool imm;
    uint32_t imm_data;
    bool write_imm;
};

struct QpModel {
    rc::Qp *qp;
    SimCq scq, rcq;
    std::deque<Expect> sends;
    std::deque<ExpectRecv> recvs; /* receives expected, in order */
    std::deque<uint64_t> posted_recv_offs;
    uint64_t landing_next = 0; /* ring cursor in this pair's landing area */
    uint64_t recv_next = 0;
    int pair;
};

struct Side {
    Endpoint *ep;
    std::vector<uint8_t> mem;
    std::vector<uint8_t> shadow; /* what mem must hold */
    mem::MemoryRegion mr;
    QpModel qps[kPairs];
};

class Property {
  public:
    Property(uint64_t seed, const Faults &f)
        : seed_(seed), rng_(seed * 0x9E3779B97F4A7C15ull + 7), fab_(seed, f),
          a_ep_(fab_, 0x0A000001, 1), b_ep_(fab_, 0x0A000002, 2) {
        a_.ep = &a_ep_;
        b_.ep = &b_ep_;
        for (Side *s : {&a_, &b_}) {
            s->mem.resize(L.total);
            for (auto &byte : s->mem)
                byte = static_cast<uint8_t>(rng_());
            s->shadow = s->mem;
            s->mr = s->ep->mrs
                        .reg(1, s->mem.data(), s->mem.size(),
                             kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                                 kAccessRemoteAtomic)
                        .value();
        }
        QpCap cap;
        cap.max_send_wr = 256;
        cap.max_recv_wr = 256;
        for (int k = 0; k < kPairs; ++k) {
            auto &qa = a_.qps[k];
            auto &qb = b_.qps[k];
            qa.pair = qb.pair = k;
            qa.qp = &a_ep_.create_qp(0x100 + k, &qa.scq, &qa.rcq, cap);
            qb.qp = &b_ep_.create_qp(0x200 + k, &qb.scq, &qb.rcq, cap);
            QpAttr attr;
            attr.timeout = 12; /* 16.8 ms: outlasts a 100 ms blackout within retry_cnt 7 */
            attr.retry_cnt = 7;
            attr.rnr_retry = 7;
            attr.min_rnr_timer = 1;
            attr.max_rd_atomic = 8;
            attr.max_dest_rd_atomic = 8;
            /* the random workload uses every op both ways */
            attr.qp_access_flags =
                kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
            const Mtu mtu = (k % 2) ? Mtu::Mtu4096 : Mtu::Mtu1024;
            const uint32_t pa = static_cast<uint32_t>(rng_()) & 0xFFFFFF;
            const uint32_t pb = static_cast<uint32_t>(rng_()) & 0xFFFFFF;
            a_ep_.connect(*qa.qp, b_ep_, *qb.qp, pa, pb, attr, mtu);
            b_ep_.connect(*qb.qp, a_ep_, *qa.qp, pb, pa, attr, mtu);
        }
    }

    /* Returns an empty string on success, else what went wrong (with the seed). */
    std::string run(uint64_t n_wrs) {
        uint64_t posted = 0;
        while (posted < n_wrs) {
            Side &from = (rng_() & 1) ? a_ : b_;
            Side &to = (&from == &a_) ? b_ : a_;
            const int k = static_cast<int>(rng_() % kPairs);
            QpModel &q = from.qps[k];
            if (q.qp->send_queue_depth() >= 200 || q.sends.size() >= 200) {
                if (!drain(false))
                    return fail("stalled with full queues");
                continue;
            }
            std::string err = post_one(from, to, q, to.qps[k], posted);
            if (!err.empty())
                return fail(err);
            ++posted;
            if ((posted & 63) == 0 && !drain(false))
                return fail("stalled");
            std::string e = reap();
            if (!e.empty())
                return fail(e);
        }
        if (!drain(true))
            return fail("did not finish: hung");
        std::string e = reap();
        if (!e.empty())
            return fail(e);
        for (Side *s : {&a_, &b_})
            for (auto &q : s->qps) {
                /* trailing unsignaled WRs complete silently */
                while (!q.sends.empty() && !q.sends.back().signaled)
                    q.sends.pop_back();
                if (!q.sends.empty() || !q.recvs.empty())
                    return fail("completions missing: " + std::to_string(q.sends.size()) +
                                " sends, " + std::to_string(q.recvs.size()) + " receives");
            }
        for (Side *s : {&a_, &b_})
            if (s->mem != s->shadow) {
                size_t i = 0;
                while (s->mem[i] == s->shadow[i])
                    ++i;
                return fail("memory differs from the model at offset " + std::to_string(i));
            }
        for (Side *s : {&a_, &b_})
            for (auto &q : s->qps)
                if (q.qp->state() != QpState::Rts)
                    return fail("QP left RTS");
        return {};
    }

    Fabric &fabric() { return fab_; }
    Endpoint &a() { return a_ep_; }
    Endpoint &b() { return b_ep_; }

  private:
    std::string fail(const std::string &what) {
        std::string state;
        for (Side *s : {&a_, &b_})
            for (auto &q : s->qps)
                state += "\n  " + q.qp->debug_string() + " sends_expected " +
                         std::to_string(q.sends.size()) + " recvs_expected " +
                         std::to_string(q.recvs.size());
        state += "\n  now " + std::to_string(fab_.now);
        return what + state + "\n (seed " + std::to_string(seed_) +
               ", replay with DROCE_SIM_SEED=" + std::to_string(seed_) + ")";
    }

    uint32_t pick_len() {
        /* Mostly small, sometimes large: keeps 10^5 WRs per profile affordable. */
        const uint64_t r = rng_() % 100;
        if (r < 70)
            return static_cast<uint32_t>(rng_() % 4097);
        if (r < 99)
            return static_cast<uint32_t>(rng_() % 65537);
        return static_cast<uint32_t>(rng_() % ((1u << 20) + 1));
    }

    /* Splits [off, off+len) into 1-4 SGEs. */
    int split(const Side &s, uint64_t off, uint32_t len, Sge *sg) {
        const int n = 1 + static_cast<int>(rng_() % 4);
        uint32_t left = len;
        int used = 0;
        for (int i = 0; i < n; ++i) {
            const uint32_t take =
                (i == n - 1) ? left : static_cast<uint32_t>(left ? rng_() % (left + 1) : 0);
            sg[used++] = {s.mr.addr + off, take, s.mr.key};
            off += take;
            left -= take;
        }
        return used;
    }

    /* Runs everything to completion and checks it: before a landing ring wraps, so that
     * no slot is reused while a WR may still write it. */
    void sync() {
        if (!drain(true))
            sync_err_ = "stalled while draining";
        else if (sync_err_.empty())
            sync_err_ = reap();
    }

    uint64_t landing(Side &s, QpModel &q, uint32_t len) {
        /* READ/atomic results go to a ring in this pair's landing half. */
        const uint64_t half = kLanding / 2;
        if (q.landing_next + len > half) {
            sync();
            q.landing_next = 0;
        }
        const uint64_t off = L.landing + q.pair * kLanding + q.landing_next;
        q.landing_next += (len + 7) & ~7u;
        (void)s;
        return off;
    }

    std::string post_one(Side &from, Side &to, QpModel &q, QpModel &peer, uint64_t id) {
        SendWr wr;
        wr.wr_id = id;
        const bool sig = (rng_() % 4) != 0;
        wr.send_flags = sig ? uint32_t{kSendSignaled} : 0u;
        const int kind = static_cast<int>(rng_() % 8);
        Expect ex{id, sig, WrOpcode::Send, 0, 0, {}};
        uint32_t len = pick_len();
        const uint64_t src = rng_() % (kSrcSize - len + 1);
        switch (kind) {
        case 0:
        case 1:
        case 2: { /* SEND, SEND_WITH_IMM (SEND_WITH_INV: droce refuses to receive it,
                   * test_rc_sim's SendWithInvalidateIsRefused) */
            wr.opcode = kind == 1 ? WrOpcode::SendWithImm : WrOpcode::Send;
            len = std::min<uint32_t>(len, 256 * 1024);
            wr.num_sge = split(from, src, len, wr.sg_list);
            wr.imm_data = static_cast<uint32_t>(rng_());
            /* the receiver posts a buffer big enough, in its own landing second half */
            const uint64_t rlen = len + rng_() % 100;
            if (peer.recv_next + rlen > kLanding / 2) {
                sync();
                peer.recv_next = 0;
            }
            const uint64_t roff = L.landing + peer.pair * kLanding + kLanding / 2 + peer.recv_next;
            peer.recv_next += (rlen + 63) & ~63ull;
            RecvWr r;
            r.wr_id = id;
            r.num_sge = split(to, roff, static_cast<uint32_t>(rlen), r.sg_list);
            Status s = peer.qp->post_recv(r);
            if (!s)
                return "post_recv: " + s.message();
            peer.recvs.push_back({id, roff, len, src, kind == 1, wr.imm_data, false});
            std::memcpy(to.shadow.data() + roff, from.mem.data() + src, len);
            break;
        }
        case 3:
        case 4: { /* RDMA WRITE (+imm) */
            wr.opcode = kind == 3 ? WrOpcode::RdmaWrite : WrOpcode::RdmaWriteWithImm;
            len = std::min<uint32_t>(len, kWriteArea);
            const uint64_t dst =
                L.write_area + q.pair * kWriteArea + rng_() % (kWriteArea - len + 1);
            wr.num_sge = split(from, src, len, wr.sg_list);
            wr.remote_addr = to.mr.addr + dst;
            wr.rkey = to.mr.key;
            wr.imm_data = static_cast<uint32_t>(rng_());
            std::memcpy(to.shadow.data() + dst, from.mem.data() + src, len);
            if (kind == 4) {
                RecvWr r;
                r.wr_id = id;
                r.num_sge = 0;
                Status s = peer.qp->post_recv(r);
                if (!s)
                    return "post_recv: " + s.message();
                peer.recvs.push_back({id, 0, len, src, true, wr.imm_data, true});
            }
            break;
        }
        case 5: { /* RDMA READ from the immutable read area */
            wr.opcode = WrOpcode::RdmaRead;
            len = std::min<uint32_t>(len, kLanding / 2);
            const uint64_t from_off = L.read_area + rng_() % (kReadAreaSize - len + 1);
            const uint64_t land = landing(from, q, len);
            wr.num_sge = split(from, land, len, wr.sg_list);
            wr.remote_addr = to.mr.addr + from_off;
            wr.rkey = to.mr.key;
            ex.local_off = land;
            ex.data.assign(to.shadow.begin() + from_off, to.shadow.begin() + from_off + len);
            std::memcpy(from.shadow.data() + land, ex.data.data(), len);
            break;
        }
        default: { /* atomics on this pair's slots; the model executes them in order */
            wr.opcode = kind == 6 ? WrOpcode::AtomicFetchAndAdd : WrOpcode::AtomicCmpAndSwp;
            const uint64_t slot = L.atomics + (q.pair * kAtomicSlots + rng_() % kAtomicSlots) * 8;
            const uint64_t land = landing(from, q, 8);
            len = 8;
            wr.num_sge = 1;
            wr.sg_list[0] = {from.mr.addr + land, 8, from.mr.key};
            wr.remote_addr = to.mr.addr + slot;
            wr.rkey = to.mr.key;
            uint64_t cur;
            std::memcpy(&cur, to.shadow.data() + slot, 8);
            uint64_t next = cur;
            if (kind == 6) {
                wr.compare_add = rng_() % 1000;
                next = cur + wr.compare_add;
            } else {
                wr.compare_add = (rng_() & 1) ? cur : rng_();
                wr.swap = rng_();
                if (cur == wr.compare_add)
                    next = wr.swap;
            }
            std::memcpy(to.shadow.data() + slot, &next, 8);
            std::memcpy(from.shadow.data() + land, &cur, 8);
            ex.local_off = land;
            ex.data.assign(reinterpret_cast<uint8_t *>(&cur),
                           reinterpret_cast<uint8_t *>(&cur) + 8);
            break;
        }
        }
        if (!sync_err_.empty())
            return sync_err_;
        ex.op = wr.opcode;
        ex.len = len;
        Status s = q.qp->post_send(wr);
        if (!s)
            return "post_send: " + s.message();
        q.sends.push_back(std::move(ex));
        return {};
    }

    bool drain(bool all) {
        auto idle = [&] {
            for (Side *s : {&a_, &b_})
                for (auto &q : s->qps)
                    if (q.qp->send_queue_depth() > (all ? 0u : 64u))
                        return false;
            if (!all)
                return true;
            for (Side *s : {&a_, &b_})
                for (auto &q : s->qps)
                    if (q.rcq.q.size() < q.recvs.size())
                        return false;
            return true;
        };
        /* 60 s of virtual time is far beyond any legitimate recovery here. */
        return fab_.run_until(idle, fab_.now + 60'000'000'000ull);
    }

    std::string reap() {
        for (Side *s : {&a_, &b_}) {
            Side &peer_side = (s == &a_) ? b_ : a_;
            for (auto &q : s->qps) {
                Wc wc;
                while (q.scq.pop(wc)) {
                    while (!q.sends.empty() && !q.sends.front().signaled) {
                        /* unsignaled WRs before a signaled one completed silently */
                        q.sends.pop_front();
                    }
                    if (q.sends.empty())
                        return "unexpected send completion " + std::to_string(wc.wr_id);
                    Expect &e = q.sends.front();
                    if (wc.wr_id != e.wr_id)
                        return "send completion out of order: got " + std::to_string(wc.wr_id) +
                               " expected " + std::to_string(e.wr_id);
                    if (wc.status != WcStatus::Success)
                        return std::string("send completion status ") + wc_status_str(wc.status) +
                               " for " + std::to_string(wc.wr_id);
                    if (!e.data.empty() &&
                        std::memcmp(s->mem.data() + e.local_off, e.data.data(), e.len) != 0)
                        return "READ/atomic result differs for wr " + std::to_string(e.wr_id);
                    q.sends.pop_front();
                }
                while (q.rcq.pop(wc)) {
                    if (q.recvs.empty())
                        return "unexpected receive completion";
                    ExpectRecv &r = q.recvs.front();
                    if (wc.wr_id != r.wr_id || wc.status != WcStatus::Success ||
                        wc.byte_len != r.len)
                        return "receive completion wrong: wr " + std::to_string(wc.wr_id) +
                               " want " + std::to_string(r.wr_id) + " len " +
                               std::to_string(wc.byte_len) + "/" + std::to_string(r.len) +
                               " status " + wc_status_str(wc.status);
                    if (r.imm && (!(wc.wc_flags & kWcWithImm) || wc.imm_data != r.imm_data))
                        return "immediate data wrong for wr " + std::to_string(r.wr_id);
                    if (r.write_imm != (wc.opcode == WcOpcode::RecvRdmaWithImm))
                        return "receive opcode wrong for wr " + std::to_string(r.wr_id);
                    if (!r.write_imm && std::memcmp(s->mem.data() + r.off,
                                                    peer_side.mem.data() + r.src_off, r.len) != 0)
                        return "received bytes differ for wr " + std::to_string(r.wr_id);
                    q.recvs.pop_front();
                }
            }
        }
        return {};
    }

    uint64_t seed_;
    std::string sync_err_;
    std::mt19937_64 rng_;
    Fabric fab_;
    Endpoint a_ep_, b_ep_;
    Side a_, b_;
};

struct Profile {
    const char *name;
    Faults f;
};
void PrintTo(const Profile &p, std::ostream *os) { *os << p.name; }

Faults mk(double loss, double dup, double reorder, double corrupt, bool blackout = false) {
    Faults f;
    f.loss = loss;
    f.dup = dup;
    f.reorder = reorder;
    f.corrupt = corrupt;
    if (blackout) {
        f.blackout_from = 50'000;    /* at 50 us (early: the runs are short in virtual time) */
        f.blackout_to = 100'050'000; /* for 100 ms */
    }
    return f;
}

class RcProperty : public ::testing::TestWithParam<Profile> {};

TEST_P(RcProperty, ExactlyOnceInOrderMatchesModel) {
    const uint64_t seed = env_u64("DROCE_SIM_SEED", 1);
    const uint64_t n = env_u64("DROCE_SIM_WRS", 100000);
    Property prop(seed, GetParam().f);
    prop.fabric().check_invariants = env_u64("DROCE_SIM_CHECK", 0) != 0;
    const std::string err = prop.run(n);
    EXPECT_EQ(err, "") << GetParam().name;
    EXPECT_EQ(prop.fabric().violation, "");
    const auto &ca = prop.a().counters, &cb = prop.b().counters;
    std::printf(
        "[ %s ] %llu WRs, virtual %.3f s, frames %llu lost %llu dup %llu corrupt %llu; "
        "retransmitted %llu, seq NAKs %llu, timeouts %llu, duplicates %llu\n",
        GetParam().name, static_cast<unsigned long long>(n), prop.fabric().now / 1e9,
        static_cast<unsigned long long>(prop.fabric().frames_sent),
        static_cast<unsigned long long>(prop.fabric().frames_lost),
        static_cast<unsigned long long>(prop.fabric().frames_duplicated),
        static_cast<unsigned long long>(prop.fabric().frames_corrupted),
        static_cast<unsigned long long>(ca.retransmitted_packets + cb.retransmitted_packets),
        static_cast<unsigned long long>(ca.packet_seq_err + cb.packet_seq_err),
        static_cast<unsigned long long>(ca.local_ack_timeout_err + cb.local_ack_timeout_err),
        static_cast<unsigned long long>(ca.duplicate_request + cb.duplicate_request));
    const Faults &f = GetParam().f;
    if (f.loss > 0 || f.blackout_to > 0) {
        EXPECT_GT(ca.retransmitted_packets + cb.retransmitted_packets, 0u);
    }
    if (f.dup > 0) {
        EXPECT_GT(prop.fabric().frames_duplicated, 0u);
    }
    if (f.corrupt > 0) {
        EXPECT_GT(prop.a().rx_drop_bad + prop.b().rx_drop_bad, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Profiles, RcProperty,
    ::testing::Values(Profile{"clean", mk(0, 0, 0, 0)}, Profile{"loss1", mk(0.01, 0, 0, 0)},
                      Profile{"loss10", mk(0.10, 0, 0, 0)}, Profile{"reorder2", mk(0, 0, 0.02, 0)},
                      Profile{"dup2", mk(0, 0.02, 0, 0)}, Profile{"corrupt05", mk(0, 0, 0, 0.005)},
                      Profile{"all", mk(0.01, 0.02, 0.02, 0.005)},
                      Profile{"blackout100ms", mk(0, 0, 0, 0, true)}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
