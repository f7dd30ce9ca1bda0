/* SPDX-License-Identifier: BSD-3-Clause */
/* The adapter table: one adapter per PMD family, a generic one for the rest. */
#include <algorithm>
#include <cstring>

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_ether.h>

#include "drivers.h"

namespace droce::drivers {

namespace {

const char *args_of(const rte_eth_dev_info &info) {
    const rte_devargs *da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
    return da != nullptr ? da->args : nullptr;
}

bool on_bus(const rte_eth_dev_info &info, const char *bus) {
    const char *b = info.device != nullptr ? rte_bus_name(rte_dev_bus(info.device)) : nullptr;
    return b != nullptr && std::strcmp(b, bus) == 0;
}

/* The kernel interface behind the port: the PMD's if_index where it reports one
 * (af_packet, af_xdp, tap, mlx5), else the iface= devarg. */
void find_kernel_if(const rte_eth_dev_info &info, Caps &c) {
    char name[IF_NAMESIZE] = {};
    if (info.if_index != 0 && if_indextoname(info.if_index, name) != nullptr)
        c.kernel_if = name;
    else
        c.kernel_if = devarg(args_of(info), "iface");
    if (!c.kernel_if.empty())
        c.kernel_mtu = kernel_mtu(c.kernel_if);
}

/* mlx5 and mlx4: bifurcated PCI NICs. The kernel netdev stays up on the same port;
 * rte_flow isolation hands droce only what its rules match. */
class Mlx final : public Adapter {
  public:
    explicit Mlx(const char *n) : n_(n) {}
    const char *name() const override { return n_; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = Reach::DmaMapped; /* PCI or auxiliary (SF) device, IOVA as VA */
        c.can_steer = c.steer_default = true;
        find_kernel_if(info, c);
        c.notes.emplace_back("bifurcated: the kernel netdev " +
                             (c.kernel_if.empty() ? std::string("(unknown)") : c.kernel_if) +
                             " keeps every frame droce's rte_flow rules do not take");
        c.notes.emplace_back("give droce an IPv4 address of its own: its ARP rule takes ARP "
                             "for that address from the kernel");
        if (std::strcmp(n_, "mlx4") == 0)
            c.notes.emplace_back("mlx4 matches no ARP fields: ARP is steered by ethertype "
                                 "(every ARP frame to droce) if the target-address rule is "
                                 "refused");
    }

  private:
    const char *n_;
};

/* virtio over PCI (a VM's NIC): queues and offloads are what the device negotiated. */
class VirtioPci final : public Adapter {
  public:
    const char *name() const override { return "virtio"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = on_bus(info, "pci") ? Reach::DmaMapped : Reach::Copy;
        c.notes.emplace_back("queues are the device's max_queue_pairs (-smp/queues= on the "
                             "host side); RSS only with VIRTIO_NET_F_RSS");
    }
};

/* virtio_user: a vhost-user (or vhost-kernel) backend reads frames through the memory
 * table the EAL sent it, which lists only DPDK's fd-backed memory segments. */
class VirtioUser final : public Adapter {
  public:
    const char *name() const override { return "virtio_user"; }
    void refine(uint16_t, const rte_eth_dev_info &, Caps &c) const override {
        c.reach = Reach::DpdkFd;
        c.peer_reads_tx = true;
        /* Measured virtio_user -> vhost (droce-perf write_bw, one packet per message, path
         * MTU 4096, alloc_buf memory vs --buf-malloc, 3 alternating rounds, bench/README.md
         * "virtio_user TX zero-copy"): a three-descriptor chain costs the backend more than
         * droce's copy below 2 KiB (0.77x at 1024 B), even at 2048 B, 1.27x at 4096 B. */
        c.zc_min_bytes = 2048;
        c.notes.emplace_back("the backend reaches only the EAL's hugepage/memfd memory: "
                             "application buffers (malloc, rte_extmem) are copied");
    }
};

class Vhost final : public Adapter {
  public:
    const char *name() const override { return "vhost"; }
    void refine(uint16_t, const rte_eth_dev_info &, Caps &c) const override {
        c.reach = Reach::VirtAddr; /* copies each segment into the guest's buffers */
        c.notes.emplace_back("queues: the queues= devarg; the guest decides how many it uses");
    }
};

class Memif final : public Adapter {
  public:
    const char *name() const override { return "memif"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        /* Copy mode copies each segment from its virtual address into the shared rings;
         * zero-copy mode hands the peer offsets into its own mempool's memory, which an
         * attached application buffer is not. */
        const bool zc = devarg(args_of(info), "zero-copy") == "yes";
        c.reach = zc ? Reach::Copy : Reach::VirtAddr;
        /* Measured over memif (droce-perf write_bw, one packet per message, 3 alternating
         * rounds, bench/README.md "Parse, template, zero-copy crossover"): zero-copy
         * delivers 0.78x / 0.73x / 0.87x of copy at 256 / 512 / 1024 B, 1.00x at 2048 B,
         * 1.01x at 4096 B. */
        c.zc_min_bytes = 2048;
        c.control_on_intr_thread = true;
        /* memif's role devarg: "client" (or the deprecated "slave"); server by default. */
        const std::string role = devarg(args_of(info), "role");
        c.reconnect_by_restart =
            role.find("client") != std::string::npos || role.find("slave") != std::string::npos;
        if (zc)
            c.notes.emplace_back("zero-copy=yes: the peer sees only this mempool's memory");
    }
};

/* af_packet: TPACKET_V2 rings on a kernel interface. The PMD reports MTU 1500 and a max
 * of 1500 whatever the interface has; the real limits are the interface's MTU and the
 * ring's frame size. */
class AfPacket final : public Adapter {
  public:
    const char *name() const override { return "af_packet"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = Reach::VirtAddr;
        c.mtu_hidden = true;
        c.max_mtu = 0; /* the reported one is not enforced */
        find_kernel_if(info, c);
        /* The kernel writes a received frame at tp_mac, 66 bytes into a TPACKET_V2 slot
         * (TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - 14), and truncates what does not fit
         * in framesz (default 2048). */
        uint32_t framesz = 2048;
        if (const std::string f = devarg(args_of(info), "framesz"); !f.empty())
            framesz = static_cast<uint32_t>(std::strtoul(f.c_str(), nullptr, 0));
        c.max_frame = framesz > 66 ? framesz - 66 : 0;
        c.notes.emplace_back("MTU read from the kernel interface at set-up (the PMD says "
                             "1500); frames above framesz-66 are truncated by the kernel");
    }
};

/* af_xdp: an XSK on queues start_queue..start_queue+queue_count-1 of an interface. */
class AfXdp final : public Adapter {
  public:
    const char *name() const override { return "af_xdp"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = Reach::VirtAddr; /* TX copies from the mbuf's address into the UMEM */
        c.mtu_hidden = true;
        find_kernel_if(info, c);
        const char *a = args_of(info);
        /* The PMD's defaults: queue 0, one queue. */
        const std::string sq = devarg(a, "start_queue"), qc = devarg(a, "queue_count");
        const std::string first = sq.empty() ? std::string("0") : sq;
        const std::string count = qc.empty() ? std::string("1") : qc;
        const std::string prog = devarg(a, "xdp_prog");
        c.notes.emplace_back("kernel queues " + first + "+" + count + " of " + c.kernel_if +
                             " (start_queue=, queue_count=): steer RoCE there (ethtool -N "
                             "... udp4 dst-port 4791 action Q)");
        c.notes.emplace_back(prog.empty()
                                 ? "default XDP program: every frame on those queues goes to droce "
                                   "(the kernel sees none of them); give xdp_prog= a program that "
                                   "redirects UDP/4791 and ARP only and passes the rest"
                                 : "XDP program " + prog + " decides what droce receives");
    }
};

class Tap final : public Adapter {
  public:
    const char *name() const override { return "tap"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = Reach::VirtAddr; /* writev from virtual addresses */
        c.mtu_hidden = true;       /* the PMD starts at 1500 whatever the tap has */
        c.can_steer = true;        /* rte_flow through TC flower (opt-in: not bifurcated) */
        /* It reports 1522-byte frames but reads whatever the kernel hands it into the
         * mbuf (scattered if need be): the tap's MTU is the limit, not the info's. */
        c.max_frame = 0;
        c.max_mtu = 0;
        find_kernel_if(info, c);
        c.notes.emplace_back("rte_flow needs TC flower in the kernel (opt-in steering)");
    }
};

class Ring final : public Adapter {
  public:
    const char *name() const override { return "ring"; }
    void refine(uint16_t, const rte_eth_dev_info &, Caps &c) const override {
        c.reach = Reach::VirtAddr;
        c.tx_passes_mbufs = true;
        c.queue_stride = kRingQueueStride;
        c.max_frame = 0; /* no limit of its own: droce's mbuf size is the limit */
        c.notes.emplace_back("mbufs go to the peer port in this process: its thread frees "
                             "them (zero-copy only with one worker)");
    }
};

class Pcap final : public Adapter {
  public:
    const char *name() const override { return "pcap"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = Reach::VirtAddr; /* copies chains into a linear buffer for libpcap */
        if (const std::string i = devarg(args_of(info), "iface"); !i.empty()) {
            c.kernel_if = i;
            c.kernel_mtu = kernel_mtu(i);
            c.mtu_hidden = true;
        }
    }
};

/* Any other PMD: only what its info says; external buffers only through a PCI device's
 * DMA mapping. */
class Generic final : public Adapter {
  public:
    const char *name() const override { return "generic"; }
    void refine(uint16_t, const rte_eth_dev_info &info, Caps &c) const override {
        c.reach = on_bus(info, "pci") ? Reach::DmaMapped : Reach::Copy;
        c.notes.emplace_back("no adapter for this PMD: rte_eth_dev_info only");
    }
};

struct Entry {
    const char *driver;
    const Adapter *adapter;
};

const Mlx g_mlx5("mlx5"), g_mlx4("mlx4");
const VirtioPci g_virtio;
const VirtioUser g_virtio_user;
const Vhost g_vhost;
const Memif g_memif;
const AfPacket g_af_packet;
const AfXdp g_af_xdp;
const Tap g_tap;
const Ring g_ring;
const Pcap g_pcap;
const Generic g_generic;

/* Driver names as the PMDs set rte_eth_dev_info::driver_name in DPDK 22.11. */
const Entry g_table[] = {
    {"mlx5_pci", &g_mlx5},     {"mlx5_auxiliary", &g_mlx5}, {"net_mlx5", &g_mlx5},
    {"net_mlx4", &g_mlx4},     {"net_virtio", &g_virtio},   {"net_virtio_user", &g_virtio_user},
    {"net_vhost", &g_vhost},   {"net_memif", &g_memif},     {"net_af_packet", &g_af_packet},
    {"net_af_xdp", &g_af_xdp}, {"net_tap", &g_tap},         {"net_ring", &g_ring},
    {"net_pcap", &g_pcap},
};

} // namespace

const char *reach_str(Reach r) {
    switch (r) {
    case Reach::Copy:
        return "none (copy)";
    case Reach::VirtAddr:
        return "any process memory";
    case Reach::DpdkFd:
        return "EAL fd-backed memory only";
    case Reach::DmaMapped:
        return "DMA-mapped regions";
    }
    return "?";
}

const Adapter &adapter_for(const std::string &driver) {
    for (const Entry &e : g_table)
        if (driver == e.driver)
            return *e.adapter;
    return g_generic;
}

std::vector<std::string> adapter_names() {
    std::vector<std::string> v;
    for (const Entry &e : g_table)
        if (std::find(v.begin(), v.end(), e.adapter->name()) == v.end())
            v.emplace_back(e.adapter->name());
    v.emplace_back(g_generic.name());
    return v;
}

Caps probe(uint16_t port, const rte_eth_dev_info &info) {
    Caps c;
    c.driver = info.driver_name != nullptr ? info.driver_name : "";
    const Adapter &a = adapter_for(c.driver);
    c.adapter = a.name();
    c.max_rx_queues = std::max<uint16_t>(1, info.max_rx_queues);
    c.max_tx_queues = std::max<uint16_t>(1, info.max_tx_queues);
    c.rss_udp = (info.flow_type_rss_offloads & RTE_ETH_RSS_NONFRAG_IPV4_UDP) != 0;
    c.multi_seg_tx = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
    c.tx_ipv4_cksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) != 0;
    c.tx_udp_cksum = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
    c.rx_ipv4_cksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) != 0;
    c.rx_udp_cksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM) != 0;
    c.max_frame =
        info.max_rx_pktlen > RTE_ETHER_CRC_LEN ? info.max_rx_pktlen - RTE_ETHER_CRC_LEN : 0;
    c.max_mtu = info.max_mtu;
    if (c.max_frame > RTE_ETHER_HDR_LEN)
        c.max_mtu =
            std::min<uint32_t>(c.max_mtu ? c.max_mtu : UINT16_MAX, c.max_frame - RTE_ETHER_HDR_LEN);
    a.refine(port, info, c);
    return c;
}

uint32_t Caps::auto_mtu() const {
    if (!mtu_hidden || kernel_mtu == 0)
        return 0;
    uint32_t m = kernel_mtu;
    if (max_frame > RTE_ETHER_HDR_LEN)
        m = std::min<uint32_t>(m, max_frame - RTE_ETHER_HDR_LEN);
    return m;
}

std::vector<std::string> Caps::lines() const {
    std::vector<std::string> v;
    v.push_back("queues " + std::to_string(max_rx_queues) + " rx / " +
                std::to_string(max_tx_queues) + " tx");
    v.push_back(std::string("rss ipv4/udp ") + (rss_udp ? "yes" : "no"));
    v.push_back(std::string("multi-segment tx ") + (multi_seg_tx      ? "yes"
                                                    : tx_passes_mbufs ? "passes mbufs"
                                                                      : "no"));
    v.push_back(std::string("external buffers ") + reach_str(reach));
    if (zc_min_bytes != 0)
        v.push_back("zero-copy from " + std::to_string(zc_min_bytes) + " B");
    if (peer_reads_tx)
        v.push_back("tx mbufs prefetched for write (the peer reads them in place)");
    if (control_on_intr_thread)
        v.push_back("stopped and closed holding the EAL interrupt thread (the PMD's control "
                    "channel runs there)");
    if (reconnect_by_restart)
        v.push_back("restarted while its link is down, until it connects (the PMD connects "
                    "once, at start)");
    v.push_back(std::string("checksum offload tx ") +
                (tx_ipv4_cksum ? (tx_udp_cksum ? "ipv4+udp" : "ipv4") : "none") + ", rx " +
                (rx_ipv4_cksum ? (rx_udp_cksum ? "ipv4+udp" : "ipv4") : "none"));
    v.push_back("max frame " + (max_frame ? std::to_string(max_frame) : std::string("-")) +
                ", port max mtu " + (max_mtu ? std::to_string(max_mtu) : std::string("-")));
    if (!kernel_if.empty())
        v.push_back("kernel interface " + kernel_if + " mtu " +
                    (kernel_mtu ? std::to_string(kernel_mtu) : std::string("?")) +
                    (mtu_hidden ? " (the PMD hides it)" : ""));
    v.push_back(std::string("rte_flow steering ") + (steer_default ? "default"
                                                     : can_steer   ? "opt-in"
                                                                   : "no"));
    for (const std::string &n : notes)
        v.push_back("note: " + n);
    return v;
}

uint32_t kernel_mtu(const std::string &ifname) {
    if (ifname.empty() || ifname.size() >= IF_NAMESIZE)
        return 0;
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
    const int rc = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rc == 0 && ifr.ifr_mtu > 0 ? static_cast<uint32_t>(ifr.ifr_mtu) : 0;
}

std::string devarg(const char *args, const std::string &key) {
    if (args == nullptr)
        return "";
    const std::string s = args;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t end = s.find(',', pos);
        if (end == std::string::npos)
            end = s.size();
        const std::string kv = s.substr(pos, end - pos);
        const size_t eq = kv.find('=');
        if (eq != std::string::npos && kv.compare(0, eq, key) == 0 && eq == key.size())
            return kv.substr(eq + 1);
        pos = end + 1;
    }
    return "";
}

} // namespace droce::drivers
