/* SPDX-License-Identifier: BSD-3-Clause */
/* Test harness for lib/nvmf: a fake RDMA transport (host memory keyed by rkey, RDMA READ
 * and SEND completions delivered by pump()) and a small NVMe-oF host that builds capsules
 * the way Linux's nvme-rdma does. Tests only. */
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "nvmf.h"
#include "nvmf_capsule.h"
#include "nvmf_spec.h"

namespace droce::nvmf::test {

struct Action {
    enum Kind { Read, Write, Send } kind;
    uint16_t tag;
    uint64_t raddr;
    uint32_t rkey, len;
    bool invalidate;
    Cqe cqe;
};

/* Host memory: one buffer per rkey, its address 0x1000'0000 * rkey. */
struct HostMem {
    std::map<uint32_t, std::vector<uint8_t>> mr;
    uint8_t *at(uint64_t addr, uint32_t rkey, uint32_t len) {
        auto it = mr.find(rkey);
        if (it == mr.end())
            return nullptr;
        const uint64_t base = 0x10000000ull * rkey;
        if (addr < base || addr - base + len > it->second.size())
            return nullptr;
        return it->second.data() + (addr - base);
    }
};

class FakeTx : public TransportActions {
  public:
    explicit FakeTx(HostMem &m) : mem(m) {}
    HostMem &mem;
    Queue *q = nullptr;
    std::vector<Action> log;
    std::deque<std::pair<uint16_t, bool>> reads;
    std::deque<uint16_t> sends;
    std::vector<Cqe> cqes;
    int disconnects = 0;
    bool fail_reads = false;
    std::map<uint32_t, int> invalidated;

    bool rdma_read(uint16_t tag, void *local, uint32_t len, uint64_t raddr,
                   uint32_t rkey) override {
        log.push_back({Action::Read, tag, raddr, rkey, len, false, {}});
        uint8_t *src = mem.at(raddr, rkey, len);
        bool ok = src && !fail_reads;
        if (ok)
            std::memcpy(local, src, len);
        reads.emplace_back(tag, ok);
        return true;
    }
    bool rdma_write(uint16_t tag, const void *local, uint32_t len, uint64_t raddr,
                    uint32_t rkey) override {
        log.push_back({Action::Write, tag, raddr, rkey, len, false, {}});
        uint8_t *dst = mem.at(raddr, rkey, len);
        EXPECT_NE(dst, nullptr) << "RDMA WRITE outside the host's MR";
        if (dst)
            std::memcpy(dst, local, len);
        return true;
    }
    bool send(uint16_t tag, const uint8_t *cqe, bool invalidate, uint32_t rkey) override {
        Cqe c = decode_cqe(cqe);
        log.push_back({Action::Send, tag, 0, rkey, kCqeLen, invalidate, c});
        if (invalidate)
            ++invalidated[rkey];
        cqes.push_back(c);
        sends.push_back(tag);
        return true;
    }
    void disconnect() override { ++disconnects; }

    /* Deliver completions until nothing is left. */
    void pump(uint64_t now = 0) {
        while (!reads.empty() || !sends.empty()) {
            if (!reads.empty()) {
                auto [t, ok] = reads.front();
                reads.pop_front();
                q->on_read_done(t, ok, now);
                continue;
            }
            uint16_t t = sends.front();
            sends.pop_front();
            q->on_send_done(t);
        }
    }
};

/* One host-side queue: accept, then commands. */
struct HostQueue {
    HostMem &mem;
    Target &t;
    FakeTx tx;
    Queue *q = nullptr;
    uint16_t cid = 1;
    uint32_t next_key = 1;
    uint64_t now = 0;

    HostQueue(HostMem &m, Target &tg) : mem(m), t(tg), tx(m) {}

    bool accept(uint16_t qid, uint16_t hsqsize = 31) {
        CmReqPriv r;
        r.qid = qid;
        r.hsqsize = hsqsize;
        r.hrqsize = static_cast<uint16_t>(hsqsize + 1);
        uint8_t p[kCmReqPrivLen];
        encode_cm_req_priv(r, p, sizeof p);
        AcceptResult a = t.accept(p, sizeof p, tx);
        q = a.queue;
        tx.q = q;
        return q != nullptr;
    }

    /* A host buffer of len bytes under a fresh rkey; returns its address. */
    uint64_t mr(uint32_t len, uint32_t &key) {
        key = next_key++ + (0x100u * (tx.q ? tx.q->qid() + 1u : 1u));
        mem.mr[key].assign(len, 0);
        return 0x10000000ull * key;
    }
    std::vector<uint8_t> &buf(uint32_t key) { return mem.mr[key]; }

    /* Sends the SQE (with optional in-capsule bytes), pumps, returns the one new CQE. */
    Cqe run(uint8_t *sqe, const std::vector<uint8_t> &icd = {}) {
        st16(sqe + 2, cid++);
        std::vector<uint8_t> cap(sqe, sqe + kSqeLen);
        cap.insert(cap.end(), icd.begin(), icd.end());
        const size_t before = tx.cqes.size();
        EXPECT_EQ(q->on_capsule(cap.data(), cap.size(), now), CapsuleResult::Accepted);
        tx.pump(now);
        for (int i = 0; i < 1000 && tx.cqes.size() == before; ++i) { /* async backend */
            t.poll(now);
            tx.pump(now);
            if (tx.cqes.size() == before)
                usleep(100);
        }
        EXPECT_EQ(tx.cqes.size(), before + 1);
        return tx.cqes.size() > before ? tx.cqes.back() : Cqe{};
    }

    /* Fabrics Connect with its data by keyed SGL (as Linux does on the admin queue). */
    Cqe connect(const std::string &subnqn, const std::string &hostnqn, uint16_t cntlid = 0xFFFF,
                uint16_t sqsize = 31, uint32_t kato = 0, const uint8_t *hostid = nullptr) {
        uint8_t s[kSqeLen];
        connect_sqe(s, subnqn, hostnqn, cntlid, sqsize, kato, hostid);
        return run(s);
    }
    /* The Connect SQE (and its data in a fresh host buffer), not sent. */
    void connect_sqe(uint8_t *s, const std::string &subnqn, const std::string &hostnqn,
                     uint16_t cntlid = 0xFFFF, uint16_t sqsize = 31, uint32_t kato = 0,
                     const uint8_t *hostid = nullptr) {
        uint32_t key;
        const uint64_t a = mr(kConnectDataLen, key);
        uint8_t *d = buf(key).data();
        static const uint8_t kHostId[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        std::memcpy(d, hostid ? hostid : kHostId, 16);
        st16(d + 16, cntlid);
        std::memcpy(d + 256, subnqn.data(), subnqn.size());
        std::memcpy(d + 512, hostnqn.data(), hostnqn.size());
        build_sqe(s, kOpcFabrics, 0, 0);
        s[4] = kFcConnect;
        st16(s + 42, q->qid());
        st16(s + 44, sqsize);
        st32(s + 48, kato);
        set_keyed_sgl(s, a, kConnectDataLen, key, true);
    }
    /* Hands the capsule to the queue without delivering any completion (a host that
     * holds its RDMA READ responses back). */
    CapsuleResult send_only(uint8_t *sqe) {
        st16(sqe + 2, cid++);
        return q->on_capsule(sqe, kSqeLen, now);
    }
    Cqe prop_get(uint32_t ofst, bool eight) {
        uint8_t s[kSqeLen];
        build_sqe(s, kOpcFabrics, 0, 0);
        s[4] = kFcPropertyGet;
        s[40] = eight ? 1 : 0;
        st32(s + 44, ofst);
        set_keyed_sgl(s, 0, 0, 0, false);
        return run(s);
    }
    Cqe prop_set(uint32_t ofst, uint64_t v, bool eight = false) {
        uint8_t s[kSqeLen];
        build_sqe(s, kOpcFabrics, 0, 0);
        s[4] = kFcPropertySet;
        s[40] = eight ? 1 : 0;
        st32(s + 44, ofst);
        st64(s + 48, v);
        set_keyed_sgl(s, 0, 0, 0, false);
        return run(s);
    }
    Cqe enable() { return prop_set(kPropCc, 1u | (6u << 16) | (4u << 20)); }

    /* An admin/IO command whose data comes back to a fresh host buffer (returned in key). */
    Cqe cmd_in(uint8_t opc, uint32_t nsid, uint32_t len, uint32_t &key, uint32_t cdw10,
               uint32_t cdw11 = 0, uint32_t cdw12 = 0, uint32_t cdw13 = 0) {
        const uint64_t a = mr(len ? len : 1, key);
        uint8_t s[kSqeLen];
        build_sqe(s, opc, 0, nsid);
        st32(s + 40, cdw10);
        st32(s + 44, cdw11);
        st32(s + 48, cdw12);
        st32(s + 52, cdw13);
        set_keyed_sgl(s, a, len, key, true);
        return run(s);
    }
    Cqe nodata(uint8_t opc, uint32_t nsid, uint32_t cdw10 = 0, uint32_t cdw11 = 0,
               uint32_t cdw12 = 0) {
        uint8_t s[kSqeLen];
        build_sqe(s, opc, 0, nsid);
        st32(s + 40, cdw10);
        st32(s + 44, cdw11);
        st32(s + 48, cdw12);
        set_keyed_sgl(s, 0, 0, 0, false);
        return run(s);
    }
    Cqe identify(uint8_t cns, uint32_t nsid, uint32_t &key) {
        return cmd_in(kAdminIdentify, nsid, kIdentifyLen, key, cns);
    }
    Cqe get_log(uint8_t lid, uint32_t len, uint32_t &key, uint64_t off = 0) {
        const uint32_t numd = len / 4 - 1;
        return cmd_in(kAdminGetLogPage, 0xFFFFFFFF, len, key, lid | ((numd & 0xFFFF) << 16),
                      numd >> 16, static_cast<uint32_t>(off), static_cast<uint32_t>(off >> 32));
    }
    /* Read/Write with a keyed SGL of sgl_len (default: exact). */
    Cqe rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t bs, uint32_t &key,
           int64_t sgl_len = -1) {
        const uint32_t len = sgl_len < 0 ? nlb * bs : static_cast<uint32_t>(sgl_len);
        return cmd_in(opc, nsid, len, key, static_cast<uint32_t>(slba),
                      static_cast<uint32_t>(slba >> 32), nlb - 1);
    }
};

inline uint16_t sc_of(const Cqe &c) { return status_sc(c.status); }
inline uint16_t sct_of(const Cqe &c) { return status_sct(c.status); }

} // namespace droce::nvmf::test
