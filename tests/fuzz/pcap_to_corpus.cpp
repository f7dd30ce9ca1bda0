/* SPDX-License-Identifier: BSD-3-Clause */
/* pcap_to_corpus OUTDIR CAPTURE...: writes every frame of every capture (pcap or pcapng)
 * as one file OUTDIR/<capture>_<n>, the seed corpus of fuzz_parse. Linux cooked (SLL,
 * SLL2) frames get a zero-MAC Ethernet header carrying the same protocol. */
#include <pcap/pcap.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s OUTDIR CAPTURE...\n", argv[0]);
        return 2;
    }
    const std::string outdir = argv[1];
    size_t written = 0;
    for (int a = 2; a < argc; ++a) {
        char errbuf[PCAP_ERRBUF_SIZE];
        pcap_t *pc = pcap_open_offline(argv[a], errbuf);
        if (!pc) {
            std::fprintf(stderr, "%s: %s\n", argv[a], errbuf);
            return 1;
        }
        std::string base = argv[a];
        base = base.substr(base.find_last_of('/') + 1);
        const int dlt = pcap_datalink(pc);
        pcap_pkthdr *h;
        const u_char *d;
        int n = 0;
        while (pcap_next_ex(pc, &h, &d) == 1) {
            std::vector<unsigned char> f;
            if (dlt == DLT_LINUX_SLL || dlt == DLT_LINUX_SLL2) {
                const size_t hl = dlt == DLT_LINUX_SLL ? 16 : 20,
                             po = dlt == DLT_LINUX_SLL ? 14 : 0;
                if (h->caplen < hl)
                    continue;
                f.assign(12, 0);
                f.push_back(d[po]);
                f.push_back(d[po + 1]);
                f.insert(f.end(), d + hl, d + h->caplen);
            } else if (dlt == DLT_EN10MB) {
                f.assign(d, d + h->caplen);
            } else {
                continue;
            }
            const std::string path = outdir + "/" + base + "_" + std::to_string(n++);
            FILE *o = std::fopen(path.c_str(), "wb");
            if (!o || std::fwrite(f.data(), 1, f.size(), o) != f.size()) {
                std::perror(path.c_str());
                return 1;
            }
            std::fclose(o);
            ++written;
        }
        pcap_close(pc);
    }
    std::printf("%zu frames written to %s\n", written, outdir.c_str());
    return 0;
}
