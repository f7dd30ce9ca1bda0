/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the configuration-file parser (apps/common/config_file.cpp and the
 * schemas of config_device.cpp and droce-fabric's fabric_config.cpp). An input is a
 * file's content, handed over as a memfd (/proc/self/fd/N: rte_cfgfile wants a path, and
 * no disk is touched). Checked: the line scan and rte_cfgfile never disagree (that error
 * would mean an entry paired with the wrong line), every entry's line holds its key,
 * names and values stay within rte_cfgfile's limits, and every error is one line naming
 * the file. Any violation aborts. Seeds: the files in config/. */
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "config_device.h"
#include "config_file.h"
#include "fabric_config.h"

using namespace droce;

namespace {

[[noreturn]] void fail(const char *why, const std::string &detail) {
    std::fprintf(stderr, "fuzz_config: %s: %s\n", why, detail.c_str());
    std::abort();
}

void check_error(const std::string &path, const std::string &err) {
    if (err.empty())
        return;
    if (err.rfind(path, 0) != 0)
        fail("error does not name the file", err);
    /* The internal errors read "PATH: rte_cfgfile ..." or "PATH:LINE: rte_cfgfile ...". */
    size_t p = path.size();
    if (p < err.size() && err[p] == ':') {
        ++p;
        while (p < err.size() && err[p] >= '0' && err[p] <= '9')
            ++p;
        if (p < err.size() && err[p] == ':')
            ++p;
    }
    if (err.compare(p, 12, " rte_cfgfile") == 0)
        fail("scan and rte_cfgfile disagree", err);
    if (err.find('\n') != std::string::npos)
        fail("error is more than one line", err);
}

int memfd() {
    static int fd = -1;
    if (fd < 0) {
        fd = memfd_create("fuzz_config", MFD_CLOEXEC);
        if (fd < 0)
            fail("memfd_create", "");
    }
    return fd;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const int fd = memfd();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
        fail("memfd write", "");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const std::string text(reinterpret_cast<const char *>(data), size);

    app::ConfigFile cf;
    const std::string err = app::load_config_file(path, cf, {"eal.vdev"});
    check_error(path, err);
    if (err.empty()) {
        std::vector<std::string> lines;
        size_t pos = 0;
        while (pos <= text.size()) {
            const size_t nl = text.find('\n', pos);
            lines.push_back(text.substr(pos, nl == std::string::npos ? nl : nl - pos));
            if (nl == std::string::npos)
                break;
            pos = nl + 1;
        }
        for (const auto &s : cf.sections) {
            if (s.line < 1 || static_cast<size_t>(s.line) > lines.size() ||
                lines[s.line - 1].find(s.name) == std::string::npos)
                fail("section not on its line", s.name);
            if (s.name.empty() || s.name.size() > app::kConfigMaxName)
                fail("section name length", s.name);
            for (const auto &e : s.entries) {
                if (e.line <= s.line || static_cast<size_t>(e.line) > lines.size() ||
                    lines[e.line - 1].find(e.key) == std::string::npos)
                    fail("key not on its line", e.key);
                if (e.key.empty() || e.key.size() > app::kConfigMaxName || e.value.empty() ||
                    e.value.size() > app::kConfigMaxValue)
                    fail("key or value length", e.key);
            }
        }
    }

    app::DeviceOptions o(60);
    const std::vector<app::ToolConfigKey> tool_keys = {
        {"port", "gid_index", [](const std::string &) { return std::string(); }},
    };
    check_error(path, app::apply_device_config(path, o, "fuzz", tool_keys));
    fabric_app::FabricConfig fc;
    check_error(path, fabric_app::load_fabric_config(path, fc));
    return 0;
}
