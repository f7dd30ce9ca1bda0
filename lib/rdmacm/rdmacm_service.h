/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The process's RDMA-CM: one droce CmDevice per device of droce's libibverbs (QP1, the
 * CM's state machine, its timers), run by a service thread that polls them and turns
 * their events into rdma_cm events on the ids' channels. The kernel's rdma_cm plays this
 * part for rdma-core's librdmacm; here it lives in the application's process and stops
 * at exit (after lingering briefly, so that a last DREP or RTU still leaves). One lock
 * serialises the CM between the service thread and the application's calls: the control
 * path only (the data path is the verbs library's). */
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "rdmacm_addr.h"
#include "rdmacm_objects.h"
#include "verbs_objects.h"

namespace droce::rdmacm {

struct ServiceDev {
    verbs::DeviceEntry *entry = nullptr;
    ibv_context *ctx = nullptr; /**< id->verbs of the ids on this device */
    ibv_pd *pd = nullptr;       /**< id->pd: rdma_create_qp's PD when none is given */
    std::unique_ptr<CmDevice> cm;
    uint32_t ip = 0;          /**< our IPv4 address, host order */
    uint8_t ip_gid_index = 0; /**< the GID table's entry of ip (the UD events' sgid_index) */
    /** Our IPv6 addresses: the RoCE v2 GIDs that are not IPv4-mapped, in table order
     * (the link-local one first where the table has it). */
    std::vector<std::array<uint8_t, 16>> ip6;
    uint8_t path_mtu = 3;
};

class Service {
  public:
    /** The service, started on the first call; nullptr (errno set) without a device. */
    static Service *get();

    /** Held by every caller of the CM and of the tables below. */
    std::mutex mu;
    std::vector<std::unique_ptr<ServiceDev>> devs;
    /** The device to reach dst from: nullptr when droce has none. */
    ServiceDev *route_to(const CmAddr &dst);
    /** The device whose address is local (IPv4 or IPv6), nullptr if none. */
    ServiceDev *owner_of(const CmAddr &local);
    /** d's address that reaches peer, in peer's family, port 0: its IPv4 address, or
     * for IPv6 its link-local GID (a link-local peer) or its first other one (as the CM
     * picks them for connect6). False when d has none. */
    static bool local_for(const ServiceDev &d, const CmAddr &peer, CmAddr &local);
    /** Connection ids of the CM to their rdma_cm_id. */
    void add_conn(ServiceDev *d, uint32_t conn, Id *id) { conns_[{d, conn}] = id; }
    void drop_conn(ServiceDev *d, uint32_t conn) { conns_.erase({d, conn}); }
    Id *conn_id(ServiceDev *d, uint32_t conn);
    /** Listening ids by port space and port; false when the port is taken. */
    bool add_listener(rdma_port_space ps, uint16_t port, Id *id);
    void drop_listener(Id *id);
    /** A source port for an active id (host order). */
    uint16_t ephemeral_port();
    /** The CM's clock. */
    uint64_t now_ns() const;

  private:
    int start();
    void run();
    void dispatch(ServiceDev &d, const CmEventInfo &ev);
    void on_connect_request(ServiceDev &d, const CmEventInfo &ev);
    /** The passive id of a connection request (a REQ or a SIDR_REQ), or nullptr when
     * nothing listens for it (the caller refuses the request). */
    Id *passive_id(ServiceDev &d, const CmEventInfo &ev, rdma_port_space ps);
    void on_sidr_request(ServiceDev &d, const CmEventInfo &ev);
    void on_sidr_result(ServiceDev &d, const CmEventInfo &ev);
    static void stop_at_exit();
    static void stop_once();

    std::map<std::pair<ServiceDev *, uint32_t>, Id *> conns_;
    std::map<std::pair<rdma_port_space, uint16_t>, Id *> listeners_;
    uint16_t next_port_ = 0;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> used_{false}; /* a connection was asked for: linger at exit */
    int pid_ = 0;                   /* the process that started the thread */
};

/** The Id of an rdma_cm_id, its state, the droce QP of its ibv_qp. */
inline Id *id_of(rdma_cm_id *id) { return reinterpret_cast<Id *>(id); }
QueuePair *droce_qp(ibv_qp *qp);
/** A new id (rdma_create_id and the passive ids of connection requests). */
Id *new_id(EventChannel *channel, void *context, rdma_port_space ps, ibv_qp_type qp_type);
/** The address vector of a UD event (param.ud.ah_attr): the peer's GID from ours. */
void fill_ud_ah(const ServiceDev &d, const uint8_t peer_gid[16], ibv_ah_attr &ah);

} // namespace droce::rdmacm
