/* SPDX-License-Identifier: BSD-3-Clause */
#include "nvmf_config.h"

#include "cli_numbers.h"

namespace droce::nvmf {

bool parse_size(const std::string &s, uint64_t &out) {
    return app::parse_size_bytes(s.c_str(), 1ull << 50, out);
}

std::string parse_namespace_spec(const std::string &v, NamespaceSpec &out) {
    static const char kWant[] = "want ram:SIZE or file:PATH[,size=SIZE]";
    NamespaceSpec ns;
    if (v.rfind("ram:", 0) == 0) {
        ns.ram = true;
        if (!parse_size(v.substr(4), ns.size) || ns.size == 0)
            return std::string(kWant) + " (SIZE: bytes, K/M/G suffixes, not 0)";
    } else if (v.rfind("file:", 0) == 0) {
        ns.path = v.substr(5);
        /* ",size=" is split off the end so that a path may hold commas elsewhere. */
        if (const size_t at = ns.path.rfind(",size="); at != std::string::npos) {
            if (!parse_size(ns.path.substr(at + 6), ns.size))
                return std::string(kWant) + " (size: bytes, K/M/G suffixes)";
            ns.path.resize(at);
        }
        if (ns.path.empty())
            return std::string(kWant) + " (an empty PATH)";
    } else {
        return kWant;
    }
    out = ns;
    return "";
}

std::string check_nqn(const std::string &nqn) {
    /* NVMe base spec 4.5: NQNs are UTF-8, at most 223 bytes; "nqn." starts both formats. */
    if (nqn.rfind("nqn.", 0) != 0)
        return "an NQN starts with 'nqn.'";
    if (nqn.size() > 223)
        return "an NQN is at most 223 bytes";
    for (const char c : nqn)
        if (c <= ' ' || c > '~')
            return "an NQN here is printable ASCII without spaces";
    return "";
}

app::ToolConfigSection nvmf_config_section(NvmfSettings &s) {
    return {"nvmf",
            {"namespace", "host"},
            [&s](const app::ConfigFile &cf, const app::ConfigSection &sec) -> std::string {
                for (const auto &e : sec.entries) {
                    std::string why;
                    if (e.key == "nqn" || e.key == "host") {
                        why = check_nqn(e.value);
                        if (why.empty())
                            (e.key == "nqn" ? s.nqn = e.value : s.hosts.emplace_back(e.value));
                    } else if (e.key == "serial") {
                        /* Identify's SN field: 20 ASCII bytes, space padded. */
                        if (e.value.empty() || e.value.size() > 20)
                            why = "want 1..20 characters";
                        s.serial = e.value;
                    } else if (e.key == "namespace") {
                        NamespaceSpec ns;
                        why = parse_namespace_spec(e.value, ns);
                        if (why.empty() && s.namespaces.size() == kMaxNamespaces)
                            why = "more than 32 namespaces";
                        if (why.empty())
                            s.namespaces.push_back(ns);
                    } else if (e.key == "port") {
                        uint64_t u = 0;
                        if (!app::parse_u64(e.value.c_str(), 65535, u) || u == 0)
                            why = "want a TCP/RDMA-CM port 1..65535";
                        s.port = static_cast<uint16_t>(u);
                    } else {
                        return cf.at(e.line, "[nvmf] unknown key '" + e.key +
                                                 "' (nqn, serial, host, namespace, port)");
                    }
                    if (!why.empty())
                        return cf.bad_value(e, why);
                }
                return "";
            }};
}

} // namespace droce::nvmf
