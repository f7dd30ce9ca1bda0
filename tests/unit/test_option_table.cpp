/* SPDX-License-Identifier: BSD-3-Clause */
/* The tools' shared table-driven command line (apps/common/option_table.h): every kind of
 * value, ranges, K/M/G sizes, unknown options, missing values, the device options as
 * extras, and the --help text generated from the table. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "device_options.h"
#include "option_table.h"

using namespace droce::app;

namespace {

/** argv from words (argv[0] = "tool"). */
struct Argv {
    explicit Argv(std::vector<std::string> words) : w(std::move(words)) {
        w.insert(w.begin(), "tool");
        for (auto &s : w)
            p.push_back(s.data());
        p.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(w.size()); }
    char **argv() { return p.data(); }
    std::vector<std::string> w;
    std::vector<char *> p;
};

struct Settings {
    bool verbose = false;
    uint32_t count = 7;
    bool count_given = false;
    int offset = 0;
    uint64_t bytes = 0;
    double rate = 0;
    uint64_t rate_bps = 0;
    std::string name = "none";
    std::vector<std::string> hosts;
    bool ud = false;
    uint16_t mtu = 1024;
    std::string pair;
};

std::vector<OptionSpec> table(Settings &s) {
    return {
        flag_option("verbose", 'v', s.verbose, "say more"),
        uint_option("count", 'n', s.count, 1, 1000, "<n>", "how many\nsecond line")
            .set_given(s.count_given),
        int_option("offset", 0, s.offset, -5, 5, "N", "an offset"),
        size_option("bytes", 'b', s.bytes, 1, 1ull << 40, "SIZE", "a size"),
        real_option("rate", 0, s.rate, 0.001, 1000, 1, "R", "a rate"),
        real_option("rate-gbps", 0, s.rate_bps, 0.001, 1000, 1e9, "R", "a rate in bit/s"),
        string_option("name", 0, s.name, "S", "a name", true),
        list_option("host", 0, s.hosts, "NQN", "repeatable"),
        enum_option("connection", 'c', s.ud, {{"RC", 0}, {"UD", 1}}, "type"),
        uint_option("mtu", 'm', s.mtu, 256, 4096, "<mtu>", "path MTU")
            .set_accept([](uint64_t u) { return (u & (u - 1)) == 0; })
            .set_why("256, 512, 1024, 2048 or 4096"),
        custom_option(
            "pair", 0,
            [&s](const char *v) -> std::string {
                if (std::strchr(v, ',') == nullptr)
                    return "A,B";
                s.pair = v;
                return "";
            },
            "A,B", "a pair"),
        flag_action(
            "odp", 'o', [] { return std::string("not supported"); }, "refused"),
        help_option("help", 'h', "this text"),
    };
}

ParseOutcome parse(Settings &s, std::vector<std::string> words) {
    Argv a(std::move(words));
    return parse_options(table(s), a.argc(), a.argv());
}

} // namespace

TEST(OptionTable, EveryKindStoresItsValue) {
    Settings s;
    const auto r = parse(s, {"-v",     "--count=12", "--offset",    "-3",    "-b",     "64K",
                             "--rate", "2.5",        "--rate-gbps", "0.5",   "--name", "x",
                             "--host", "a",          "--host=b",    "-c",    "UD",     "-m",
                             "2048",   "--pair",     "1,2",         "server"});
    ASSERT_EQ(r.status, ParseStatus::Ok) << r.message;
    EXPECT_TRUE(s.verbose);
    EXPECT_EQ(s.count, 12u);
    EXPECT_TRUE(s.count_given);
    EXPECT_EQ(s.offset, -3);
    EXPECT_EQ(s.bytes, 64u * 1024);
    EXPECT_DOUBLE_EQ(s.rate, 2.5);
    EXPECT_EQ(s.rate_bps, 500'000'000u);
    EXPECT_EQ(s.name, "x");
    EXPECT_EQ(s.hosts, (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(s.ud);
    EXPECT_EQ(s.mtu, 2048);
    EXPECT_EQ(s.pair, "1,2");
    EXPECT_EQ(r.operands, std::vector<std::string>{"server"});
}

TEST(OptionTable, DefaultsStayWhenNotGiven) {
    Settings s;
    const auto r = parse(s, {});
    ASSERT_EQ(r.status, ParseStatus::Ok);
    EXPECT_EQ(s.count, 7u);
    EXPECT_FALSE(s.count_given);
    EXPECT_EQ(s.name, "none");
    EXPECT_TRUE(r.operands.empty());
}

TEST(OptionTable, ShortClusterAndAttachedValue) {
    Settings s;
    const auto r = parse(s, {"-vn5", "-cRC"});
    ASSERT_EQ(r.status, ParseStatus::Ok) << r.message;
    EXPECT_TRUE(s.verbose);
    EXPECT_EQ(s.count, 5u);
    EXPECT_FALSE(s.ud);
}

TEST(OptionTable, SizeSuffixes) {
    const std::pair<const char *, uint64_t> ok[] = {
        {"4096", 4096}, {"1k", 1024}, {"2M", 2u << 20}, {"3g", 3ull << 30}, {"0x10", 16}};
    for (const auto &[text, want] : ok) {
        Settings s;
        const auto r = parse(s, {"--bytes", text});
        ASSERT_EQ(r.status, ParseStatus::Ok) << text << ": " << r.message;
        EXPECT_EQ(s.bytes, want) << text;
    }
    for (const char *bad : {"", "K", "1T", "1KB", "-1", "0", "2048G", "1.5M"}) {
        Settings s;
        const auto r = parse(s, {"--bytes", bad});
        EXPECT_EQ(r.status, ParseStatus::Error) << bad;
        EXPECT_NE(r.message.find("for -b/--bytes (bytes 1..1099511627776, suffix K, M or G)"),
                  std::string::npos)
            << r.message;
    }
}

TEST(OptionTable, RangesNameTheOptionAndTheRange) {
    struct Case {
        std::vector<std::string> words;
        const char *message;
    };
    const Case cases[] = {
        {{"-n", "0"}, "invalid value '0' for -n/--count (1..1000)"},
        {{"--count=1001"}, "invalid value '1001' for -n/--count (1..1000)"},
        {{"-n", "12x"}, "invalid value '12x' for -n/--count (1..1000)"},
        {{"-n", "-1"}, "invalid value '-1' for -n/--count (1..1000)"},
        {{"-n", "99999999999999999999"}, "for -n/--count (1..1000)"},
        {{"--offset", "6"}, "invalid value '6' for --offset (-5..5)"},
        {{"--rate", "0"}, "invalid value '0' for --rate (a number 0.001..1000)"},
        {{"--rate", "nan"}, "invalid value 'nan' for --rate (a number 0.001..1000)"},
        {{"--rate", "1e999"}, "for --rate"},
        {{"--name", ""}, "invalid value '' for --name (not empty)"},
        {{"-c", "XRC"}, "invalid value 'XRC' for -c/--connection (RC or UD)"},
        {{"-m", "1000"}, "invalid value '1000' for -m/--mtu (256, 512, 1024, 2048 or 4096)"},
        {{"-m", "128"}, "for -m/--mtu"},
        {{"--pair", "12"}, "invalid value '12' for --pair (A,B)"},
        {{"-o"}, "-o/--odp: not supported"},
    };
    for (const auto &c : cases) {
        Settings s;
        const auto r = parse(s, c.words);
        EXPECT_EQ(r.status, ParseStatus::Error) << c.words[0];
        EXPECT_NE(r.message.find(c.message), std::string::npos)
            << "got '" << r.message << "', want '" << c.message << "'";
    }
}

TEST(OptionTable, UnknownOptionsAndMissingValues) {
    const std::pair<std::vector<std::string>, const char *> cases[] = {
        {{"-z"}, "unknown option '-z'"},
        {{"--no-such"}, "unknown option or unexpected value '--no-such'"},
        {{"--verbose=1"}, "unknown option or unexpected value '--verbose=1'"},
        {{"-n"}, "option '-n' needs a value"},
        {{"--count"}, "option '--count' needs a value"},
        {{"-v", "--name"}, "option '--name' needs a value"},
    };
    for (const auto &[words, message] : cases) {
        Settings s;
        const auto r = parse(s, words);
        EXPECT_EQ(r.status, ParseStatus::Error) << words[0];
        EXPECT_EQ(r.message, message);
    }
}

TEST(OptionTable, HelpStopsTheParse) {
    Settings s;
    EXPECT_EQ(parse(s, {"-h", "-n", "0"}).status, ParseStatus::Help);
    EXPECT_EQ(parse(s, {"-v", "--help"}).status, ParseStatus::Help);
    EXPECT_EQ(parse(s, {"--hel"}).status, ParseStatus::Help); /* getopt's unique prefix */
}

TEST(OptionTable, ATableFaultIsAnError) {
    Settings s;
    auto t = table(s);
    t.push_back(flag_option("verbose", 0, s.verbose, "again"));
    Argv a({});
    const auto r = parse_options(t, a.argc(), a.argv());
    EXPECT_EQ(r.status, ParseStatus::Error);
    EXPECT_EQ(r.message, "option table: --verbose twice");
    t.pop_back();
    t.push_back(flag_option("other", 'v', s.verbose, "again"));
    EXPECT_EQ(parse_options(t, a.argc(), a.argv()).message, "option table: -v twice");
}

TEST(OptionTable, DeviceOptionsAsExtras) {
    Settings s;
    DeviceOptions d(60);
    const ExtraOptions extra = device_option_extras(d, {});
    Argv a({"--ip", "10.0.0.1/24", "-n", "3", "--vlan=5", "--counters"});
    const auto r = parse_options(table(s), a.argc(), a.argv(), &extra);
    ASSERT_EQ(r.status, ParseStatus::Ok) << r.message;
    EXPECT_EQ(d.ip, "10.0.0.1/24");
    EXPECT_EQ(d.vlan, 5);
    EXPECT_TRUE(d.counters);
    EXPECT_EQ(s.count, 3u);
    Argv b({"--vlan", "4095"});
    EXPECT_EQ(parse_options(table(s), b.argc(), b.argv(), &extra).message,
              "invalid value '4095' for --vlan (a VLAN ID 1..4094)");
    /* a table entry may not shadow a device option */
    auto t = table(s);
    t.push_back(flag_option("counters", 0, s.verbose, "again"));
    EXPECT_EQ(parse_options(t, b.argc(), b.argv(), &extra).message,
              "option table: --counters twice");
}

TEST(OptionTable, HelpIsGeneratedFromTheTable) {
    Settings s;
    auto t = table(s);
    t.push_back(flag_option(nullptr, 'H', s.verbose, "alias").set_hidden());
    const std::string h = options_help(t, 26);
    EXPECT_NE(h.find("  -v, --verbose           say more\n"), std::string::npos) << h;
    EXPECT_NE(h.find("  -n, --count=<n>         how many\n"
                     "                          second line\n"),
              std::string::npos)
        << h;
    EXPECT_NE(h.find("      --offset=N          an offset\n"), std::string::npos) << h;
    EXPECT_NE(h.find("  -c, --connection=RC|UD  type\n"), std::string::npos) << h;
    EXPECT_EQ(h.find("alias"), std::string::npos) << h;
    /* one line per visible option */
    EXPECT_EQ(std::count(h.begin(), h.end(), '\n'), static_cast<long>(t.size() - 1 + 1));
    /* a head wider than the column puts the text on the next line */
    const std::string narrow = options_help(t, 10);
    EXPECT_NE(narrow.find("  -c, --connection=RC|UD\n          type\n"), std::string::npos)
        << narrow;
}
