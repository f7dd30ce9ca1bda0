/* SPDX-License-Identifier: BSD-3-Clause */
#include "verbs_process.h"

#include <getopt.h>
#include <pthread.h>
#include <rte_ethdev.h>
#include <sched.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "config_device.h"
#include "device_options.h"
#include "eal_args.h"
#include "port_config.h"
#include "verbs_exit.h"

namespace droce::verbs {
namespace {

enum class State { Idle, Starting, Up, Failed };

struct Process {
    std::mutex mu;
    State state = State::Idle;
    int error = 0;
    std::unique_ptr<app::EalArgv> eal; /* DPDK may keep pointers into argv */
    std::unique_ptr<Engine> engine;
    std::vector<DeviceEntry *> devices;
    std::mutex live_mu;
    std::array<std::unordered_set<void *>, static_cast<size_t>(Kind::Count_)> live;
    /* What events name, to the wrappers: droce's CQ, and (device, QPN). */
    std::unordered_map<const CompletionQueue *, Cq *> cq_by_dcq;
    std::map<std::pair<const Device *, uint32_t>, Qp *> qp_by_num;
    std::atomic<void (*)()> before_teardown{nullptr};
};

const Device *device_of(const Qp &q) { return context_of(q.qp.context)->entry->dev; }

/* Never destroyed: the teardown at exit runs before static destructors, and a verb called
 * by another thread during exit must not find freed state. */
Process &process() {
    static Process *p = new Process();
    return *p;
}

const std::vector<DeviceEntry *> kNoDevices;
thread_local bool t_starting = false;

/* A child forked after the engine started: the engine's threads (its worker, the EAL's)
 * stayed with the parent, so nothing would ever run the child's verbs. Set by the fork
 * handler in the child only; read without the lock (a fork may copy it held). */
std::atomic<bool> g_forked{false};
pid_t g_parent = 0;

void forked_child() { g_forked = true; }

/* The verbs of a forked child fail with this, once on stderr, instead of waiting forever. */
void say_forked() {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
        std::fprintf(stderr,
                     "droce libibverbs: this process was forked after droce started in its "
                     "parent (pid %d), whose threads run droce: no device here. Start "
                     "droce after the fork, or use threads (fio: thread=1)\n",
                     static_cast<int>(g_parent));
    errno = ENODEV;
}

uint64_t guid_from_mac(const std::string &mac) {
    unsigned m[6] = {};
    if (std::sscanf(mac.c_str(), "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) !=
        6)
        return 0;
    /* EUI-64 of the MAC with the universal/local bit flipped (what rxe and mlx5 do). */
    const uint8_t eui[8] = {static_cast<uint8_t>(m[0] ^ 0x02),
                            static_cast<uint8_t>(m[1]),
                            static_cast<uint8_t>(m[2]),
                            0xff,
                            0xfe,
                            static_cast<uint8_t>(m[3]),
                            static_cast<uint8_t>(m[4]),
                            static_cast<uint8_t>(m[5])};
    uint64_t be = 0;
    std::memcpy(&be, eui, sizeof(be));
    return be;
}

DeviceEntry *make_entry(Engine *engine, Device *dev, uint32_t index) {
    auto *e = new DeviceEntry{};
    e->dev = dev;
    e->engine = engine;
    e->index = index;
    e->guid_be = guid_from_mac(dev->mac());
    e->before_teardown = &process().before_teardown;
    e->ibdev.node_type = IBV_NODE_CA;
    e->ibdev.transport_type = IBV_TRANSPORT_IB; /* RoCE reports InfiniBand, as rxe does */
    std::snprintf(e->ibdev.name, sizeof(e->ibdev.name), "droce%u", index);
    std::snprintf(e->ibdev.dev_name, sizeof(e->ibdev.dev_name), "uverbs-droce%u", index);
    /* No sysfs: paths that name nothing, so sysfs reads fail cleanly. */
    std::snprintf(e->ibdev.dev_path, sizeof(e->ibdev.dev_path), "/nonexistent/droce%u", index);
    std::snprintf(e->ibdev.ibdev_path, sizeof(e->ibdev.ibdev_path), "/nonexistent/droce%u", index);
    return e;
}

/* Objects the application left behind, children first, then the engine: its worker
 * stops and the port closes (a memif socket, the EAL's runtime directory go). */
void teardown_at_exit() {
    if (g_forked)
        return; /* the parent's engine: not this process's to tear down */
    Process &p = process();
    if (void (*hook)() = p.before_teardown.load())
        hook(); /* outside the locks: it waits for a thread that may take them */
    std::lock_guard<std::mutex> lk(p.mu);
    {
        std::lock_guard<std::mutex> ll(p.live_mu);
        for (void *w : p.live[static_cast<int>(Kind::Qp)])
            delete static_cast<Qp *>(w)->dqp;
        for (void *w : p.live[static_cast<int>(Kind::Ah)])
            delete static_cast<Ah *>(w)->dah;
        for (void *w : p.live[static_cast<int>(Kind::Srq)])
            delete static_cast<Srq *>(w)->dsrq;
        for (void *w : p.live[static_cast<int>(Kind::Mr)])
            delete static_cast<Mr *>(w)->dmr;
        for (void *w : p.live[static_cast<int>(Kind::Cq)])
            delete static_cast<Cq *>(w)->dcq;
        for (void *w : p.live[static_cast<int>(Kind::Channel)])
            delete static_cast<Channel *>(w)->dch;
        for (void *w : p.live[static_cast<int>(Kind::Pd)])
            delete static_cast<Pd *>(w)->dpd;
        for (auto &set : p.live)
            set.clear();
        p.cq_by_dcq.clear();
        p.qp_by_num.clear();
    }
    p.engine.reset();
    p.state = State::Failed;
    p.error = ENODEV;
}

/* The options the configuration file gives, checked as the tools check theirs; "" or why
 * not. libibverbs needs worker mode: the application's verbs never drive the engine, so
 * only a worker answers ARP, ACKs and retransmits while the program waits elsewhere. */
std::string read_config(const char *path, app::DeviceOptions &o) {
    std::string err = app::apply_device_config(path, o, "libibverbs");
    if (!err.empty())
        return err;
    if (o.loopback)
        return std::string(path) + ": [port] loopback: not for libibverbs (name a port)";
    if (o.embedded)
        return std::string(path) +
               ": [engine] mode = embedded: libibverbs runs droce on a worker lcore";
    o.worker = true;
    err = app::finish_device_options(o, false, app::DeviceOptionRules{});
    return err.empty() ? "" : std::string(path) + ": " + err;
}

/* rte_eal_init pins the calling thread to the main lcore: give the application's thread
 * its own affinity back (its later threads inherit it). It also parses its arguments with
 * getopt: the application's getopt state is put back as well. */
Status create_engine(Process &p, const app::DeviceOptions &o) {
    cpu_set_t saved;
    const bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
    const int saved_optind = optind, saved_opterr = opterr, saved_optopt = optopt;
    char *const saved_optarg = optarg;
    p.eal = std::make_unique<app::EalArgv>("libibverbs-droce", o.eal_args);
    EngineOptions eo;
    eo.embedded = false;
    eo.workers = 1;
    eo.idle_polls_before_sleep = o.busy_poll ? 0 : 1000;
    eo.idle_sleep_us = 20;
    eo.log_level = o.log_level;
    int consumed = 0;
    auto engine = Engine::create(p.eal->argc(), p.eal->argv(), &consumed, eo);
    if (have_saved)
        pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    optind = saved_optind;
    opterr = saved_opterr;
    optopt = saved_optopt;
    optarg = saved_optarg;
    if (!engine)
        return engine.status();
    p.engine = std::move(engine.value());
    return {};
}

/* How long the first ibv_get_device_list waits for the port's link. A NIC's port is up
 * before a program starts, and programs check (perftest refuses a port that is not
 * active); a memif client's link comes up only once its server has answered, some
 * milliseconds after the port starts. A port still down then is listed down. */
constexpr int kLinkWaitMs = 2000;

void wait_for_link(uint16_t port_id) {
    for (int waited = 0; waited < kLinkWaitMs; waited += 10) {
        rte_eth_link link{};
        if (rte_eth_link_get_nowait(port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

Status start(Process &p) {
    const char *path = std::getenv(kConfigEnv);
    if (path == nullptr || *path == '\0')
        return Status(ENODEV, std::string(kConfigEnv) +
                                  " is not set: no droce device (run the program with "
                                  "droce-run --config FILE)");
    app::DeviceOptions o(0);
    if (std::string err = read_config(path, o); !err.empty())
        return Status(EINVAL, err);
    if (Status st = create_engine(p, o); !st)
        return st;
    auto dev = p.engine->open_device(app::port_device_config(o));
    if (!dev)
        return Status(dev.status().code(), "port '" + o.dpdk_port + "': " + dev.status().message());
    if (Status st = p.engine->start(); !st)
        return st;
    wait_for_link(dev.value()->port_id());
    p.devices.push_back(make_entry(p.engine.get(), dev.value(), 0));
    register_exit_teardown(teardown_at_exit);
    g_parent = getpid();
    pthread_atfork(nullptr, nullptr, forked_child);
    return {};
}

} // namespace

bool forked_after_start() {
    if (!g_forked)
        return false;
    say_forked();
    return true;
}

const std::vector<DeviceEntry *> &devices() {
    if (forked_after_start())
        return kNoDevices;
    Process &p = process();
    if (t_starting) {
        errno = EAGAIN;
        return kNoDevices;
    }
    std::lock_guard<std::mutex> lk(p.mu);
    if (p.state == State::Idle) {
        p.state = State::Starting;
        t_starting = true;
        const Status st = start(p);
        t_starting = false;
        if (st) {
            p.state = State::Up;
        } else {
            p.engine.reset();
            p.state = State::Failed;
            p.error = st.code() != 0 ? st.code() : EIO;
            std::fprintf(stderr, "droce libibverbs: %s\n", st.message().c_str());
        }
    }
    if (p.state != State::Up) {
        errno = p.error;
        return kNoDevices;
    }
    return p.devices;
}

void live_add(Kind k, void *wrapper) {
    Process &p = process();
    std::lock_guard<std::mutex> lk(p.live_mu);
    p.live[static_cast<int>(k)].insert(wrapper);
    if (k == Kind::Cq) {
        auto *c = static_cast<Cq *>(wrapper);
        p.cq_by_dcq[c->dcq] = c;
    } else if (k == Kind::Qp) {
        auto *q = static_cast<Qp *>(wrapper);
        p.qp_by_num[{device_of(*q), q->qp.qp_num}] = q;
    }
}

void live_remove(Kind k, void *wrapper) {
    Process &p = process();
    std::lock_guard<std::mutex> lk(p.live_mu);
    p.live[static_cast<int>(k)].erase(wrapper);
    if (k == Kind::Cq) {
        p.cq_by_dcq.erase(static_cast<Cq *>(wrapper)->dcq);
    } else if (k == Kind::Qp) {
        auto *q = static_cast<Qp *>(wrapper);
        p.qp_by_num.erase({device_of(*q), q->qp.qp_num});
    }
}

Cq *deliver_comp_event(const CompletionQueue *dcq) {
    Process &p = process();
    std::lock_guard<std::mutex> lk(p.live_mu);
    auto it = p.cq_by_dcq.find(dcq);
    if (it == p.cq_by_dcq.end())
        return nullptr;
    ++it->second->comp_events_delivered;
    return it->second;
}

Cq *deliver_cq_async_event(const CompletionQueue *dcq) {
    Process &p = process();
    std::lock_guard<std::mutex> lk(p.live_mu);
    auto it = p.cq_by_dcq.find(dcq);
    if (it == p.cq_by_dcq.end())
        return nullptr;
    ++it->second->async_events_delivered;
    return it->second;
}

Qp *deliver_qp_async_event(const Device *dev, uint32_t qp_num) {
    Process &p = process();
    std::lock_guard<std::mutex> lk(p.live_mu);
    auto it = p.qp_by_num.find({dev, qp_num});
    if (it == p.qp_by_num.end())
        return nullptr;
    ++it->second->events_delivered;
    return it->second;
}

} // namespace droce::verbs
