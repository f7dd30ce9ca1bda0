/* SPDX-License-Identifier: BSD-3-Clause */
/* A small reader for the Ethernet captures in ../shared/vectors (tests only). */
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace droce::test {

inline std::string vectors_dir() {
    if (const char *e = std::getenv("DROCE_VECTORS_DIR"); e && *e)
        return e;
#ifdef DROCE_VECTORS_DIR
    return DROCE_VECTORS_DIR;
#else
    return "../shared/vectors";
#endif
}

/* Every frame of an Ethernet (DLT_EN10MB) capture; err set (and what was read so far
 * returned) on any problem, so a missing vector fails the test instead of passing empty. */
inline std::vector<std::vector<uint8_t>> read_eth_capture(const std::string &path,
                                                          std::string &err) {
    std::vector<std::vector<uint8_t>> out;
    char errbuf[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(path.c_str(), errbuf);
    if (!pc) {
        err = errbuf;
        return out;
    }
    if (pcap_datalink(pc) != DLT_EN10MB) {
        err = "not an Ethernet capture";
        pcap_close(pc);
        return out;
    }
    pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(pc, &h, &data)) == 1)
        out.emplace_back(data, data + h->caplen);
    if (rc != PCAP_ERROR_BREAK)
        err = pcap_geterr(pc);
    pcap_close(pc);
    return out;
}

} // namespace droce::test
