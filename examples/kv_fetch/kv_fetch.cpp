/* SPDX-License-Identifier: BSD-3-Clause */
/* kv_fetch: a key-value fetch over RDMA READ, using only the installed droce API.
 *
 * A "server" registers a table of fixed-size values (value k at offset k * value_size)
 * for remote read; a "client" READs values by key offset, several in flight, and checks
 * every byte. Both ends run in this process on two droce devices over a back-to-back
 * net_ring pair (Engine::create_ring_pair), so no NIC and no hugepages are needed.
 *
 *   kv_fetch [EAL args --] [--worker | --embedded] [--keys N] [--value-size B]
 *            [--fetches N] [--depth D]
 *
 * --embedded (default): no worker lcore; this thread calls Engine::poll() in its loop.
 * --worker: the engine polls on a DPDK worker lcore; this thread only posts and polls
 *           its CQ (needs two EAL lcores: the default EAL arguments give -l 0,1).
 * Prints "kv_fetch: OK ..." and exits 0 when every fetched value was right. */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <droce/droce.h>

using namespace droce;

namespace {

struct Args {
    bool worker = false;
    uint32_t keys = 1024;
    uint32_t value_size = 256;
    uint32_t fetches = 20000;
    uint32_t depth = 16;
    std::vector<std::string> eal;
};

/* The byte at offset i of key k's value: recognisable and different per key. */
uint8_t value_byte(uint32_t key, uint32_t i) {
    return static_cast<uint8_t>((key * 131u) ^ (i * 7u) ^ (key >> 8));
}

bool die(const char *what, const Status &s) {
    std::fprintf(stderr, "kv_fetch: %s: %s\n", what, s.message().c_str());
    return false;
}

/* One side's verbs objects. Declaration order = reverse destruction order: the QP goes
 * before its CQ, MR and PD (children before parents, as with ibverbs). */
struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;

    bool setup(Device *d, void *buf, size_t len, uint32_t access, uint32_t depth) {
        dev = d;
        auto p = dev->alloc_pd();
        if (!p)
            return die("alloc_pd", p.status());
        pd = std::move(*p);
        auto c = dev->create_cq(depth * 2);
        if (!c)
            return die("create_cq", c.status());
        cq = std::move(*c);
        auto m = pd->reg_mr(buf, len, access);
        if (!m)
            return die("reg_mr", m.status());
        mr = std::move(*m);
        QpInitAttr qa;
        qa.send_cq = cq.get();
        qa.recv_cq = cq.get();
        qa.cap.max_send_wr = depth;
        qa.cap.max_recv_wr = 1;
        auto q = pd->create_qp(qa);
        if (!q)
            return die("create_qp", q.status());
        qp = std::move(*q);
        return true;
    }

    /* RESET -> INIT -> RTR -> RTS toward the peer; remote: the rights the peer may use on
     * this QP (kAccessRemote*). */
    bool connect(const Side &peer, uint32_t my_psn, uint32_t peer_psn, uint32_t remote) {
        QpAttr a;
        a.qp_state = QpState::Init;
        a.port_num = 1;
        a.qp_access_flags = remote;
        if (Status s = qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags); !s)
            return die("modify to INIT", s);
        a.qp_state = QpState::Rtr;
        a.path_mtu = Mtu::Mtu1024;
        a.dest_qp_num = peer.qp->qp_num();
        a.rq_psn = peer_psn;
        a.max_dest_rd_atomic = 16;
        a.min_rnr_timer = 12;
        a.ah_attr.dgid = peer.dev->gids().at(1).gid; /* the peer's IPv4-mapped GID */
        a.ah_attr.sgid_index = 1;
        a.ah_attr.hop_limit = 1;
        if (Status s = qp->modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                         kQpMaxDestRdAtomic | kQpMinRnrTimer);
            !s)
            return die("modify to RTR", s);
        a.qp_state = QpState::Rts;
        a.sq_psn = my_psn;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 16;
        if (Status s = qp->modify(a, kQpState | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                         kQpSqPsn | kQpMaxQpRdAtomic);
            !s)
            return die("modify to RTS", s);
        return true;
    }
};

bool parse(int argc, char **argv, Args &a) {
    int first = 1;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            a.eal.assign(argv + 1, argv + i);
            first = i + 1;
            break;
        }
    for (int i = first; i < argc; ++i) {
        const std::string o = argv[i];
        auto num = [&](uint32_t &out) {
            if (i + 1 >= argc)
                return false;
            out = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 0));
            return out != 0;
        };
        if (o == "--worker")
            a.worker = true;
        else if (o == "--embedded")
            a.worker = false;
        else if ((o == "--keys" && num(a.keys)) || (o == "--value-size" && num(a.value_size)) ||
                 (o == "--fetches" && num(a.fetches)) || (o == "--depth" && num(a.depth)))
            continue;
        else {
            std::fprintf(stderr,
                         "usage: kv_fetch [EAL args --] [--worker|--embedded] [--keys N] "
                         "[--value-size B] [--fetches N] [--depth D]\n");
            return false;
        }
    }
    if (a.eal.empty())
        a.eal = {"-l", a.worker ? "0,1" : "0", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--no-telemetry", "--log-level=*:warning"};
    return true;
}

int run(Engine &engine, const Args &args) {
    auto ports = engine.create_ring_pair();
    if (!ports)
        return die("create_ring_pair", ports.status()), 1;
    DeviceConfig cs, cc;
    cs.port = ports->first;
    cs.ipv4_cidr = "10.0.0.1/24";
    cs.mac = "02:00:0a:00:00:01";
    cc.port = ports->second;
    cc.ipv4_cidr = "10.0.0.2/24";
    cc.mac = "02:00:0a:00:00:02";
    auto ds = engine.open_device(cs);
    if (!ds)
        return die("open_device (server)", ds.status()), 1;
    auto dc = engine.open_device(cc);
    if (!dc)
        return die("open_device (client)", dc.status()), 1;
    if (Status s = engine.start(); !s)
        return die("start", s), 1;

    /* The server's table and the client's landing slots (one per WR in flight). */
    const size_t vs = args.value_size;
    std::vector<uint8_t> table(size_t{args.keys} * vs);
    for (uint32_t k = 0; k < args.keys; ++k)
        for (uint32_t i = 0; i < vs; ++i)
            table[k * vs + i] = value_byte(k, i);
    std::vector<uint8_t> slots(size_t{args.depth} * vs);

    Side server, client;
    if (!server.setup(*ds, table.data(), table.size(), kAccessRemoteRead | kAccessLocalWrite,
                      args.depth) ||
        !client.setup(*dc, slots.data(), slots.size(), kAccessLocalWrite, args.depth))
        return 1;
    /* Least privilege: the client only READs the table, so the server's QP and MR allow
     * remote READ and nothing else; the client's allow nothing remote (READ responses
     * are local writes). */
    if (!server.connect(client, 0x100, 0x200, kAccessRemoteRead) ||
        !client.connect(server, 0x200, 0x100, 0))
        return 1;

    /* What the client knows of the server: the table's address, rkey and key count
     * (a real client would get them over the network, like the QPN and GID). */
    const uint64_t remote_base = reinterpret_cast<uint64_t>(server.mr->addr());
    const uint32_t rkey = server.mr->rkey();

    std::vector<uint32_t> slot_key(args.depth);
    std::vector<uint32_t> free_slots;
    for (uint32_t s = 0; s < args.depth; ++s)
        free_slots.push_back(args.depth - 1 - s);
    uint32_t posted = 0, done = 0, bad = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + std::chrono::seconds(60);
    while (done < args.fetches) {
        while (posted < args.fetches && !free_slots.empty()) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            const uint32_t key = static_cast<uint32_t>(rng % args.keys);
            const uint32_t slot = free_slots.back();
            SendWr wr;
            wr.wr_id = slot;
            wr.opcode = WrOpcode::RdmaRead;
            wr.send_flags = kSendSignaled;
            wr.num_sge = 1;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(&slots[slot * vs]),
                             static_cast<uint32_t>(vs), client.mr->lkey()};
            wr.remote_addr = remote_base + uint64_t{key} * vs;
            wr.rkey = rkey;
            if (Status s = client.qp->post_send(wr); !s)
                return die("post_send", s), 1;
            free_slots.pop_back();
            slot_key[slot] = key;
            ++posted;
        }
        if (engine.embedded())
            engine.poll();
        Wc wc[16];
        const int n = client.cq->poll(wc, 16);
        for (int i = 0; i < n; ++i) {
            if (wc[i].status != WcStatus::Success) {
                std::fprintf(stderr, "kv_fetch: READ completion: %s\n",
                             wc_status_str(wc[i].status));
                return 1;
            }
            const uint32_t slot = static_cast<uint32_t>(wc[i].wr_id);
            const uint32_t key = slot_key[slot];
            for (uint32_t b = 0; b < vs; ++b)
                if (slots[slot * vs + b] != value_byte(key, b)) {
                    ++bad;
                    break;
                }
            std::memset(&slots[slot * vs], 0, vs); /* a stale value must not pass next time */
            free_slots.push_back(slot);
            ++done;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "kv_fetch: timed out: %u/%u fetches completed\n", done,
                         args.fetches);
            return 1;
        }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (bad != 0) {
        std::fprintf(stderr, "kv_fetch: %u of %u fetched values were wrong\n", bad, done);
        return 1;
    }
    std::printf("kv_fetch: OK: %u values of %u bytes fetched by RDMA READ and verified "
                "(%s mode, %.2f s, %.0f fetches/s)\n",
                done, args.value_size, engine.embedded() ? "embedded" : "worker", secs,
                done / secs);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Args args;
    if (!parse(argc, argv, args))
        return 2;
    std::vector<std::string> eal_s{argv[0]};
    eal_s.insert(eal_s.end(), args.eal.begin(), args.eal.end());
    std::vector<char *> eal;
    for (auto &s : eal_s)
        eal.push_back(s.data());
    eal.push_back(nullptr);

    EngineOptions eo;
    eo.embedded = !args.worker;
    eo.idle_polls_before_sleep = 1000; /* a shared machine: let the worker doze when idle */
    eo.idle_sleep_us = 20;
    int consumed = 0;
    auto engine = Engine::create(static_cast<int>(eal.size()) - 1, eal.data(), &consumed, eo);
    if (!engine) {
        std::fprintf(stderr, "kv_fetch: Engine::create: %s\n", engine.status().message().c_str());
        return 1;
    }
    const int rc = run(**engine, args);
    (*engine)->stop();
    return rc;
}
