/* SPDX-License-Identifier: BSD-3-Clause */
#include "fabric_config.h"

#include <cstdlib>
#include <sstream>

#include "config_file.h"
#include "eal_args.h"

namespace droce::fabric_app {

namespace {

/** The ranges of droce-fabric's command line (main.cpp's parse). */
struct NumKey {
    const char *key;
    const char *option;
    double lo, hi;
};
const NumKey kNumbers[] = {
    {"rate_gbps", "--rate-gbps", 0.001, 1000},
    {"buffer", "--buffer", 1, 256.0 * 1024 * 1024},
    {"kmin", "--kmin", 0, 4e9},
    {"kmax", "--kmax", 1, 4e9},
    {"pmax", "--pmax", 0, 1},
    {"loss", "--loss", 0, 1},
    {"delay_us", "--delay-us", 0, 1e7},
    {"dup", "--dup", 0, 1},
    {"reorder", "--reorder", 0, 1},
    {"corrupt", "--corrupt", 0, 1},
    {"seed", "--seed", 0, 1e18},
    {"sample_us", "--sample-us", 1, 1e9},
    {"secs", "--secs", 0, 1e9},
    {"honour_pfc", "--honour-pfc", 0, 7},
    {"idle_us", "--idle-us", 0, 1e6},
    {"queues", "--queues", 1, 16},
};
constexpr int kMaxPorts = 16;

bool number(const std::string &v, double lo, double hi) {
    char *end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    return end != v.c_str() && *end == '\0' && d >= lo && d <= hi;
}

std::string fmt(double d) {
    std::ostringstream s;
    s << d;
    return s.str();
}

std::string take_fabric(const app::ConfigEntry &e, FabricConfig &out) {
    const std::string &k = e.key, &v = e.value;
    for (const auto &n : kNumbers)
        if (k == n.key) {
            if (!number(v, n.lo, n.hi))
                return "want a number in " + fmt(n.lo) + " .. " + fmt(n.hi) + " (as " + n.option +
                       ")";
            out.options.insert(out.options.end(), {n.option, v});
            return "";
        }
    bool b = false;
    if (k == "to") {
        std::string item;
        std::istringstream in(v);
        while (std::getline(in, item, ','))
            if (!number(item, 0, kMaxPorts - 1) || item.find('.') != std::string::npos)
                return "want port numbers 0.." + std::to_string(kMaxPorts - 1) +
                       ", comma separated";
        if (v.back() == ',')
            return "want port numbers, comma separated";
        out.options.insert(out.options.end(), {"--to", v});
    } else if (k == "mark") {
        if (v != "enqueue" && v != "dequeue")
            return "want enqueue or dequeue";
        out.options.insert(out.options.end(), {"--mark", v});
    } else if (k == "csv") {
        out.options.insert(out.options.end(), {"--csv", v});
    } else if (k == "pfc") {
        const size_t c = v.find(',');
        if (c == std::string::npos || !number(v.substr(0, c), 1, 256.0 * 1024 * 1024) ||
            !number(v.substr(c + 1), 0, 256.0 * 1024 * 1024))
            return "want XOFF,XON in bytes (as --pfc)";
        out.options.insert(out.options.end(), {"--pfc", v});
    } else if (k == "shared" || k == "ecn" || k == "red_drop") {
        if (!app::parse_config_bool(v, b))
            return "want on or off";
        if (k == "shared" && b)
            out.options.emplace_back("--shared");
        if (k == "ecn" && !b)
            out.options.emplace_back("--no-ecn");
        if (k == "red_drop" && b)
            out.options.emplace_back("--red-drop");
    } else {
        return "?";
    }
    return "";
}

} // namespace

std::string load_fabric_config(const std::string &path, FabricConfig &out) {
    app::ConfigFile cf;
    if (std::string err = app::load_config_file(path, cf, {"eal.vdev"}); !err.empty())
        return err;
    std::string lcores, prefix;
    std::vector<std::string> vdevs;
    for (const auto &sec : cf.sections) {
        if (sec.name == "engine" || sec.name == "port" || sec.name == "qp" || sec.name == "dcqcn" ||
            sec.name == "pfc" || sec.name == "capture" || sec.name == "cm")
            return cf.at(sec.line, "section [" + sec.name +
                                       "] is not used by droce-fabric (it configures a droce "
                                       "device; droce-fabric has [eal] and [fabric])");
        if (sec.name != "eal" && sec.name != "fabric")
            return cf.at(sec.line, "unknown section [" + sec.name +
                                       "] (droce-fabric has [eal] and [fabric])");
        for (const auto &e : sec.entries) {
            std::string why;
            if (sec.name == "fabric") {
                why = take_fabric(e, out);
            } else if (e.key == "args") {
                std::istringstream in(e.value);
                out.eal.clear();
                for (std::string w; in >> w;)
                    out.eal.push_back(w);
                out.eal_given = true;
            } else if (e.key == "lcores") {
                if (e.value.find_first_not_of("0123456789,-@()") != std::string::npos)
                    why = "want an lcore list such as 0,1 or 0-3";
                lcores = e.value;
            } else if (e.key == "file_prefix") {
                if (e.value.find_first_of(" \t/") != std::string::npos)
                    why = "want a name without blanks or '/'";
                prefix = e.value;
            } else if (e.key == "vdev") {
                if (e.value.find_first_of(" \t") != std::string::npos)
                    why = "want one --vdev argument without blanks";
                vdevs.push_back(e.value);
            } else {
                why = "?";
            }
            if (why == "?")
                return cf.at(e.line, "[" + sec.name + "] unknown key '" + e.key + "'");
            if (!why.empty())
                return cf.bad_value(e, why);
        }
    }
    if (!lcores.empty())
        app::set_eal_option(out.eal, "-l", {"-l", "--lcores"}, lcores);
    if (!prefix.empty())
        app::set_eal_option(out.eal, "--file-prefix", {"--file-prefix"}, prefix);
    for (const auto &v : vdevs)
        out.eal.insert(out.eal.end(), {"--vdev", v});
    out.eal_given = out.eal_given || !lcores.empty() || !prefix.empty() || !vdevs.empty();
    return "";
}

} // namespace droce::fabric_app
