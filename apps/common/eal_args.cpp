/* SPDX-License-Identifier: BSD-3-Clause */
#include "eal_args.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace droce::app {

SplitArgs split_at_dashdash(int argc, char **argv, int first) {
    SplitArgs s;
    int dashdash = -1;
    for (int i = first; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0) {
            dashdash = i;
            break;
        }
    }
    s.ours.push_back(argv[0]);
    if (dashdash >= 0) {
        for (int i = first; i < dashdash; ++i)
            s.eal.emplace_back(argv[i]);
        for (int i = dashdash + 1; i < argc; ++i)
            s.ours.push_back(argv[i]);
    } else {
        for (int i = first; i < argc; ++i)
            s.ours.push_back(argv[i]);
    }
    s.ours.push_back(nullptr);
    return s;
}

std::vector<std::string> default_eal_args(bool embedded) {
    /* Telemetry stays on (droce-info asks it); a runtime directory of our own keeps
     * concurrent processes from sharing its socket. --no-shconf still applies. */
    return {"-l",
            embedded ? "0" : "0,1",
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            "--no-shconf",
            "--file-prefix=droce-" + std::to_string(getpid()),
            "--log-level=*:warning"};
}

bool eal_single_lcore(const std::vector<std::string> &eal, bool coremask) {
    auto single_list = [](const std::string &v) {
        return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    };
    for (size_t i = 0; i < eal.size(); ++i) {
        const std::string &a = eal[i];
        const std::string next = i + 1 < eal.size() ? eal[i + 1] : "";
        if (a == "-l" || a == "--lcores")
            return single_list(next);
        if (a.rfind("--lcores=", 0) == 0)
            return single_list(a.substr(9));
        if (a.size() > 2 && a.rfind("-l", 0) == 0 && a[2] != '-')
            return single_list(a.substr(2));
        if (coremask && a == "-c") {
            char *end = nullptr;
            const unsigned long long m = std::strtoull(next.c_str(), &end, 16);
            return end != next.c_str() && *end == '\0' && m != 0 && (m & (m - 1)) == 0;
        }
    }
    return false;
}

void set_eal_option(std::vector<std::string> &eal, const std::string &opt,
                    const std::vector<std::string> &aliases, const std::string &value) {
    for (size_t i = 0; i < eal.size(); ++i) {
        for (const auto &a : aliases) {
            if (eal[i] == a && i + 1 < eal.size()) {
                eal[i + 1] = value;
                return;
            }
            const bool joined_short = a.size() == 2 && a[1] != '-' && eal[i].size() > 2 &&
                                      eal[i].rfind(a, 0) == 0 && eal[i][2] != '-';
            if (eal[i].rfind(a + "=", 0) == 0 || joined_short) {
                eal[i] = opt;
                eal.insert(eal.begin() + static_cast<std::ptrdiff_t>(i) + 1, value);
                return;
            }
        }
    }
    eal.push_back(opt);
    eal.push_back(value);
}

EalArgv::EalArgv(const char *argv0, const std::vector<std::string> &eal) {
    strings_.emplace_back(argv0);
    for (const auto &a : eal)
        strings_.push_back(a);
    for (auto &s : strings_)
        argv_.push_back(s.data());
    argv_.push_back(nullptr);
}

} // namespace droce::app
