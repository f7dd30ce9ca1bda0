/* SPDX-License-Identifier: BSD-3-Clause */
/* Devices and contexts: listing, opening, and every query of a device, its port, GIDs and
 * P_Keys. The attributes are droce's real limits (the API's checks enforce them). */
#include <arpa/inet.h>
#include <rte_ethdev.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "verbs_objects.h"
#include "verbs_process.h"

#undef ibv_query_port

namespace droce::verbs {
namespace {

/* Limits the droce API enforces (lib/api: create_qp, create_srq, create_cq; the
 * device's QPN space 0x11..max_qps-1 with DeviceConfig's default). */
constexpr uint32_t kMaxQpWr = 16384;
constexpr uint32_t kMaxCqe = 1048576;
constexpr uint32_t kMaxQp = 65536 - 0x11;
constexpr uint32_t kRdAtomic = 16;      /* responder resources per QP (lib/rc) */
constexpr uint32_t kInitRdAtomic = 128; /* READs/atomics in flight per QP, as rxe */
/* Not limited by droce beyond memory; what the device reports. */
constexpr uint32_t kMaxObjects = 65536;
/* The CA's ACK delay, in the IB spec's 4.096 us * 2^n (rxe's value). */
constexpr uint8_t kLocalCaAckDelay = 15;
constexpr const char *kFwVer = "droce 0.1.0";

DeviceEntry *entry_of(ibv_context *ctx) { return context_of(ctx)->entry; }

void fill_device_attr(const DeviceEntry &e, ibv_device_attr &a) {
    std::memset(&a, 0, sizeof(a));
    std::snprintf(a.fw_ver, sizeof(a.fw_ver), "%s", kFwVer);
    a.node_guid = e.guid_be;
    a.sys_image_guid = e.guid_be;
    a.max_mr_size = ~0ull;
    a.page_size_cap = 0xfffff000u;
    a.max_qp = kMaxQp;
    a.max_qp_wr = kMaxQpWr;
    a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID;
    a.max_sge = kMaxSge;
    a.max_sge_rd = kMaxSge;
    a.max_cq = kMaxObjects;
    a.max_cqe = kMaxCqe;
    a.max_mr = kMaxObjects;
    a.max_pd = kMaxObjects;
    a.max_qp_rd_atom = kRdAtomic;
    a.max_res_rd_atom = kMaxQp * kRdAtomic;
    a.max_qp_init_rd_atom = kInitRdAtomic;
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_ah = kMaxObjects;
    a.max_srq = kMaxObjects;
    a.max_srq_wr = kMaxQpWr;
    a.max_srq_sge = kMaxSge;
    a.max_pkeys = 1;
    a.local_ca_ack_delay = kLocalCaAckDelay;
    a.phys_port_cnt = 1;
}

ibv_mtu mtu_enum(uint32_t bytes) {
    if (bytes >= 4096)
        return IBV_MTU_4096;
    if (bytes >= 2048)
        return IBV_MTU_2048;
    if (bytes >= 1024)
        return IBV_MTU_1024;
    if (bytes >= 512)
        return IBV_MTU_512;
    return IBV_MTU_256;
}

/* The IB spec's link width and speed codes (PortInfo; ibv_devinfo decodes them): the
 * installed verbs.h names no constants for them. */
enum : uint8_t { kWidth1X = 1, kWidth4X = 2 };
enum : uint8_t { kSpeedSdr = 1, kSpeedQdr = 4, kSpeedEdr = 32, kSpeedHdr = 64, kSpeedNdr = 128 };

/* An Ethernet speed as IB width and speed. A port that reports none (memif, net_ring) is
 * taken as 100 Gb/s, as DeviceConfig::line_rate_bps takes it. */
void speed_codes(uint32_t mbps, uint8_t &width, uint8_t &speed) {
    struct Row {
        uint32_t max_mbps;
        uint8_t width, speed;
    };
    static const Row rows[] = {
        {2500, kWidth1X, kSpeedSdr},   {10000, kWidth1X, kSpeedQdr}, {25000, kWidth1X, kSpeedEdr},
        {40000, kWidth4X, kSpeedQdr},  {50000, kWidth1X, kSpeedHdr}, {100000, kWidth4X, kSpeedEdr},
        {200000, kWidth4X, kSpeedHdr},
    };
    if (mbps == 0 || mbps == RTE_ETH_SPEED_NUM_UNKNOWN)
        mbps = 100000;
    for (const Row &r : rows)
        if (mbps <= r.max_mbps) {
            width = r.width;
            speed = r.speed;
            return;
        }
    width = kWidth4X;
    speed = kSpeedNdr;
}

void fill_port_attr(const DeviceEntry &e, ibv_port_attr &a) {
    std::memset(&a, 0, sizeof(a));
    rte_eth_link link{};
    const bool up = rte_eth_link_get_nowait(e.dev->port_id(), &link) == 0 &&
                    link.link_status == RTE_ETH_LINK_UP;
    a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a.phys_state = up ? 5 /* LinkUp */ : 3 /* Disabled */;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = mtu_enum(e.dev->active_mtu());
    a.gid_tbl_len = static_cast<int>(e.dev->gids().size());
    a.port_cap_flags = IBV_PORT_CM_SUP; /* droce's CM answers on QP1 */
    a.max_msg_sz = 1u << 31;
    a.pkey_tbl_len = 1;
    a.max_vl_num = 1;
    speed_codes(up ? link.link_speed : 0, a.active_width, a.active_speed);
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
}

bool valid_port(ibv_context *ctx, uint32_t port_num) { return ctx != nullptr && port_num == 1; }

/* GID entry index of the port's table (Device::gids()), with its verbs type. */
bool gid_entry(ibv_context *ctx, uint32_t index, ibv_gid_entry &out) {
    const auto gids = entry_of(ctx)->dev->gids();
    if (index >= gids.size())
        return false;
    std::memset(&out, 0, sizeof(out));
    std::memcpy(out.gid.raw, gids[index].gid.raw, sizeof(out.gid.raw));
    out.gid_index = index;
    out.port_num = 1;
    out.gid_type =
        std::strcmp(gids[index].type, "RoCE v2") == 0 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    return true;
}

} // namespace

int query_port_ex(ibv_context *ctx, uint8_t port_num, ibv_port_attr *attr, size_t len) {
    if (!valid_port(ctx, port_num) || attr == nullptr)
        return errno = EINVAL;
    ibv_port_attr full;
    fill_port_attr(*entry_of(ctx), full);
    std::memcpy(attr, &full, len < sizeof(full) ? len : sizeof(full));
    return 0;
}

int query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *input,
                    ibv_device_attr_ex *attr, size_t attr_size) {
    if (ctx == nullptr || attr == nullptr || (input != nullptr && input->comp_mask != 0))
        return errno = EINVAL;
    ibv_device_attr_ex full;
    std::memset(&full, 0, sizeof(full));
    fill_device_attr(*entry_of(ctx), full.orig_attr);
    full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
    full.phys_port_cnt_ex = 1;
    std::memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
    return 0;
}

} // namespace droce::verbs

using namespace droce::verbs;

extern "C" {

ibv_device **ibv_get_device_list(int *num_devices) {
    const auto &devs = devices();
    auto **list = static_cast<ibv_device **>(std::calloc(devs.size() + 1, sizeof(ibv_device *)));
    if (list == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    for (size_t i = 0; i < devs.size(); ++i)
        list[i] = &devs[i]->ibdev;
    if (num_devices != nullptr)
        *num_devices = static_cast<int>(devs.size());
    return list;
}

void ibv_free_device_list(ibv_device **list) { std::free(list); }

const char *ibv_get_device_name(ibv_device *device) {
    return device != nullptr ? device->name : nullptr;
}

__be64 ibv_get_device_guid(ibv_device *device) {
    return device != nullptr ? outer_of<DeviceEntry>(device)->guid_be : 0;
}

int ibv_get_device_index(ibv_device *device) {
    return device != nullptr ? static_cast<int>(outer_of<DeviceEntry>(device)->index) : -1;
}

ibv_context *ibv_open_device(ibv_device *device) {
    if (device == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    if (forked_after_start())
        return nullptr;
    auto *c = static_cast<Context *>(std::calloc(1, sizeof(Context)));
    if (c == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    c->entry = outer_of<DeviceEntry>(device);
    verbs_context &v = c->vctx;
    v.sz = sizeof(verbs_context);
    v.context.device = device;
    v.context.cmd_fd = -1;
    /* The device's event queue (one per device: every context of it reads the same). */
    v.context.async_fd = c->entry->dev->async_fd();
    v.context.num_comp_vectors = 1;
    v.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    pthread_mutex_init(&v.context.mutex, nullptr);
    fill_context_ops(v);
    return &v.context;
}

int ibv_close_device(ibv_context *context) {
    if (context == nullptr)
        return errno = EINVAL;
    Context *c = context_of(context);
    pthread_mutex_destroy(&c->vctx.context.mutex);
    std::free(c);
    return 0;
}

int ibv_query_device(ibv_context *context, ibv_device_attr *device_attr) {
    if (context == nullptr || device_attr == nullptr)
        return errno = EINVAL;
    fill_device_attr(*context_of(context)->entry, *device_attr);
    return 0;
}

/* The exported symbol serves binaries built before ibv_port_attr grew port_cap_flags2:
 * their structure ends there. */
int ibv_query_port(ibv_context *context, uint8_t port_num, _compat_ibv_port_attr *port_attr) {
    return query_port_ex(context, port_num, reinterpret_cast<ibv_port_attr *>(port_attr),
                         offsetof(ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(ibv_context *context, uint8_t port_num, int index, ibv_gid *gid) {
    ibv_gid_entry e;
    if (!valid_port(context, port_num) || gid == nullptr || index < 0 ||
        !gid_entry(context, static_cast<uint32_t>(index), e)) {
        errno = EINVAL;
        return -1;
    }
    *gid = e.gid;
    return 0;
}

int _ibv_query_gid_ex(ibv_context *context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry *entry, uint32_t flags, size_t entry_size) {
    if (!valid_port(context, port_num) || entry == nullptr || flags != 0 ||
        entry_size < sizeof(*entry))
        return errno = EINVAL;
    if (!gid_entry(context, gid_index, *entry))
        return errno = ENODATA;
    return 0;
}

ssize_t _ibv_query_gid_table(ibv_context *context, ibv_gid_entry *entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
    if (context == nullptr || (entries == nullptr && max_entries != 0) || flags != 0 ||
        entry_size < sizeof(ibv_gid_entry)) {
        errno = EINVAL;
        return -EINVAL;
    }
    size_t n = 0;
    auto *out = reinterpret_cast<uint8_t *>(entries);
    for (uint32_t i = 0; n < max_entries; ++i, ++n) {
        ibv_gid_entry e;
        if (!gid_entry(context, i, e))
            break;
        std::memcpy(out + n * entry_size, &e, sizeof(e));
    }
    return static_cast<ssize_t>(n);
}

/* libibverbs' private interface (driver.h, not installed): sysfs's GID types. */
enum droce_gid_type_sysfs { kSysfsIbRoceV1 = 0, kSysfsRoceV2 = 1 };
int ibv_query_gid_type(ibv_context *context, uint8_t port_num, unsigned int index,
                       droce_gid_type_sysfs *type) {
    ibv_gid_entry e;
    if (!valid_port(context, port_num) || type == nullptr || !gid_entry(context, index, e)) {
        errno = EINVAL;
        return -1;
    }
    *type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? kSysfsRoceV2 : kSysfsIbRoceV1;
    return 0;
}

int ibv_query_pkey(ibv_context *context, uint8_t port_num, int index, __be16 *pkey) {
    if (!valid_port(context, port_num) || pkey == nullptr || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htons(0xffff); /* the default partition: droce's one-entry table */
    return 0;
}

int ibv_get_pkey_index(ibv_context *context, uint8_t port_num, __be16 pkey) {
    if (!valid_port(context, port_num) || (ntohs(pkey) & 0x7fff) != 0x7fff) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

} // extern "C"
