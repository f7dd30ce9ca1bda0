/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-nvmf's [nvmf] configuration section (apps/droce-nvmf/nvmf_config.cpp) through
 * load_config_option, as main() reads it: NQN, serial, hosts and namespaces (repeated
 * keys, in NSID order) reach the settings beside droce.conf's device sections, every bad
 * value or unknown key is an error naming the file and line, and config/nvmf.conf as
 * shipped loads. */
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "config_device.h"
#include "nvmf_config.h"

using namespace droce;

namespace {

class TempConf {
  public:
    explicit TempConf(const std::string &text) {
        char tmpl[] = "/tmp/test_nvmf_config_XXXXXX";
        const int fd = mkstemp(tmpl);
        EXPECT_GE(fd, 0);
        close(fd);
        path_ = tmpl;
        std::ofstream(path_, std::ios::binary) << text;
    }
    ~TempConf() { std::remove(path_.c_str()); }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

/* Loads path as droce-nvmf does: "" or the error. */
std::string load(const std::string &path, nvmf::NvmfSettings &s, app::DeviceOptions &o) {
    /* find_config_option looks at argv[1..argc), as main() passes the tool's own args */
    std::string arg0 = "droce-nvmf", arg1 = "--config", arg2 = path;
    char *argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
    return app::load_config_option(3, argv, o, "droce-nvmf", {}, {nvmf::nvmf_config_section(s)});
}

} // namespace

TEST(NvmfConfig, EveryKeyReachesTheSettings) {
    TempConf f("[port]\n"
               "mtu = 1024\n"
               "[nvmf]\n"
               "nqn = nqn.2026-11.io.droce:test\n"
               "serial = SN42\n"
               "port = 4421\n"
               "host = nqn.2014-08.org.nvmexpress:uuid:a\n"
               "host = nqn.2014-08.org.nvmexpress:uuid:b\n"
               "namespace = ram:64M\n"
               "namespace = file:/tmp/x,y.img,size=1G\n"
               "namespace = file:/dev/sdz\n");
    nvmf::NvmfSettings s;
    app::DeviceOptions o(0);
    ASSERT_EQ(load(f.path(), s, o), "");
    EXPECT_EQ(o.eth_mtu, 1024u); /* the device sections still work beside [nvmf] */
    EXPECT_EQ(s.nqn, "nqn.2026-11.io.droce:test");
    EXPECT_EQ(s.serial, "SN42");
    EXPECT_EQ(s.port, 4421);
    ASSERT_EQ(s.hosts.size(), 2u);
    EXPECT_EQ(s.hosts[1], "nqn.2014-08.org.nvmexpress:uuid:b");
    ASSERT_EQ(s.namespaces.size(), 3u);
    EXPECT_TRUE(s.namespaces[0].ram);
    EXPECT_EQ(s.namespaces[0].size, 64ull << 20);
    EXPECT_FALSE(s.namespaces[1].ram);
    EXPECT_EQ(s.namespaces[1].path, "/tmp/x,y.img");
    EXPECT_EQ(s.namespaces[1].size, 1ull << 30);
    EXPECT_EQ(s.namespaces[2].path, "/dev/sdz");
    EXPECT_EQ(s.namespaces[2].size, 0u);
}

TEST(NvmfConfig, BadValuesNameTheLine) {
    const std::pair<const char *, const char *> cases[] = {
        {"namespace = disk:1M", ":3: [nvmf] namespace = disk:1M: want ram:SIZE"},
        {"namespace = ram:0", ":3: [nvmf] namespace = ram:0: want ram:SIZE"},
        {"namespace = ram:12Q", ":3: [nvmf] namespace = ram:12Q: want"},
        {"namespace = file:", ":3: [nvmf] namespace = file:: want"},
        {"namespace = file:/a,size=x", ":3: [nvmf] namespace = file:/a,size=x: want"},
        {"nqn = iqn.2001-04.com.example", ":3: [nvmf] nqn = iqn.2001-04.com.example: an NQN"},
        {"host = nqn.bad host", ":3: [nvmf] host = nqn.bad host: an NQN"},
        {"serial = 012345678901234567890", ":3: [nvmf] serial = 012345678901234567890: want"},
        {"port = 0", ":3: [nvmf] port = 0: want"},
        {"colour = blue", ":3: [nvmf] unknown key 'colour'"},
        {"nqn = nqn.a\nnqn = nqn.b", ":4:"}, /* nqn is not repeatable */
    };
    for (const auto &[line, want] : cases) {
        TempConf f(std::string("# droce-nvmf\n[nvmf]\n") + line + "\n");
        nvmf::NvmfSettings s;
        app::DeviceOptions o(0);
        const std::string err = load(f.path(), s, o);
        EXPECT_NE(err.find(f.path() + want), std::string::npos) << line << " -> " << err;
    }
}

TEST(NvmfConfig, ThirtyThreeNamespacesAreTooMany) {
    std::string text = "[nvmf]\n";
    for (int i = 0; i < 33; ++i)
        text += "namespace = ram:1M\n";
    TempConf f(text);
    nvmf::NvmfSettings s;
    app::DeviceOptions o(0);
    EXPECT_NE(load(f.path(), s, o).find(":34: [nvmf] namespace = ram:1M: more than 32"),
              std::string::npos);
}

TEST(NvmfConfig, WithoutTheToolTheSectionIsUnknown) {
    /* droce-perf and the others still refuse [nvmf]: only droce-nvmf reads it. */
    TempConf f("[nvmf]\nnqn = nqn.a\n");
    app::DeviceOptions o(0);
    EXPECT_NE(
        app::apply_device_config(f.path(), o, "droce-perf").find(":1: unknown section [nvmf]"),
        std::string::npos);
}

TEST(NvmfConfig, ShippedFileLoads) {
    const char *dir = std::getenv("DROCE_CONFIG_DIR");
    if (dir == nullptr)
        GTEST_SKIP() << "DROCE_CONFIG_DIR not set";
    nvmf::NvmfSettings s;
    app::DeviceOptions o(0);
    ASSERT_EQ(load(std::string(dir) + "/nvmf.conf", s, o), "");
    EXPECT_EQ(s.nqn, "nqn.2026-11.io.droce:nvmf0");
    ASSERT_EQ(s.namespaces.size(), 2u);
    EXPECT_EQ(s.namespaces[1].size, 16ull << 20);
}
