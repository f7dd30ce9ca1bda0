/* SPDX-License-Identifier: BSD-3-Clause */
#include "option_table.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cli_numbers.h"
#include "cli_options.h"

namespace droce::app {

namespace {

/** getopt_long value of the table's entry i: its letter, or past the device options. */
constexpr int kFirstTableValue = 1100;

int getopt_value(const OptionSpec &s, size_t i) {
    return s.short_name != 0 ? static_cast<unsigned char>(s.short_name)
                             : kFirstTableValue + static_cast<int>(i);
}

bool takes_value(const OptionSpec &s) { return s.kind != ArgKind::Flag; }

/** Stores a number already checked against the option's range in the field, converted to
 * its type. */
template <typename V> void store_number(const OptionTarget &t, V v) {
    std::visit(
        [v](auto alt) {
            using A = decltype(alt);
            if constexpr (std::is_pointer_v<A>) {
                using P = std::remove_pointer_t<A>;
                if constexpr (std::is_arithmetic_v<P>)
                    *alt = static_cast<P>(v);
            }
        },
        t);
}

/* strtod's syntax, the whole argument; an overflow (inf) or nan fails the range. */
bool parse_real(const char *s, double lo, double hi, double &out) {
    char *end = nullptr;
    const double d = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(d >= lo && d <= hi))
        return false;
    out = d;
    return true;
}

/** Takes arg into s's target: "" or what a valid value is (s.why, or the custom
 * check's own words). */
std::string take_value(const OptionSpec &s, const char *arg) {
    uint64_t u = 0;
    int64_t i = 0;
    double d = 0;
    switch (s.kind) {
    case ArgKind::Flag:
        if (s.custom)
            return s.custom(nullptr);
        if (auto *const *b = std::get_if<bool *>(&s.target))
            **b = true;
        return "";
    case ArgKind::UInt:
    case ArgKind::Size:
        if (!(s.kind == ArgKind::UInt ? parse_u64(arg, s.umax, u)
                                      : parse_size_bytes(arg, s.umax, u)) ||
            u < s.umin || (s.accept && !s.accept(u)))
            return s.why;
        store_number(s.target, u);
        return "";
    case ArgKind::Int:
        if (!parse_i64(arg, s.imin, s.imax, i))
            return s.why;
        store_number(s.target, i);
        return "";
    case ArgKind::Real:
        if (!parse_real(arg, s.lo, s.hi, d))
            return s.why;
        store_number(s.target, d * s.scale);
        return "";
    case ArgKind::String:
        if (auto *const *list = std::get_if<std::vector<std::string> *>(&s.target))
            (*list)->emplace_back(arg);
        else if (auto *const *str = std::get_if<std::string *>(&s.target)) {
            if (*arg == '\0' && s.umin != 0)
                return s.why;
            **str = arg;
        }
        return "";
    case ArgKind::Enum:
        for (const auto &[word, value] : s.choices)
            if (word == arg) {
                store_number(s.target, value);
                return "";
            }
        return s.why;
    case ArgKind::Custom:
        return s.custom(arg);
    }
    return s.why;
}

/** A table fault (two entries with one name) is the tool's bug: said at once. */
std::string check_table(const std::vector<OptionSpec> &table, const ExtraOptions *extra) {
    for (size_t a = 0; a < table.size(); ++a) {
        if (table[a].long_name == nullptr && table[a].short_name == 0)
            return concat("option table: entry ", std::to_string(a), " has no name");
        if ((table[a].kind == ArgKind::Custom && !table[a].custom) ||
            (table[a].kind != ArgKind::Custom && table[a].kind != ArgKind::Flag &&
             std::holds_alternative<std::monostate>(table[a].target)))
            return concat("option table: entry ", std::to_string(a), " stores its value nowhere");
        for (size_t b = a + 1; b < table.size(); ++b) {
            if (table[a].short_name != 0 && table[a].short_name == table[b].short_name)
                return concat("option table: -", std::string(1, table[a].short_name), " twice");
            if (table[a].long_name && table[b].long_name &&
                std::strcmp(table[a].long_name, table[b].long_name) == 0)
                return concat("option table: --", table[a].long_name, " twice");
        }
        if (extra != nullptr && table[a].long_name != nullptr)
            for (const auto &o : extra->long_options)
                if (o.name != nullptr && std::strcmp(o.name, table[a].long_name) == 0)
                    return concat("option table: --", o.name, " twice");
    }
    return "";
}

std::string short_options(const std::vector<OptionSpec> &table) {
    std::string s = ":"; /* ':' for a missing value, '?' for an unknown option */
    for (const auto &o : table)
        if (o.short_name != 0) {
            s += o.short_name;
            if (takes_value(o))
                s += ':';
        }
    return s;
}

std::vector<struct option> long_options(const std::vector<OptionSpec> &table,
                                        const ExtraOptions *extra) {
    std::vector<struct option> longs;
    for (size_t i = 0; i < table.size(); ++i)
        if (table[i].long_name != nullptr)
            longs.push_back({table[i].long_name,
                             takes_value(table[i]) ? required_argument : no_argument, nullptr,
                             getopt_value(table[i], i)});
    if (extra != nullptr)
        for (const auto &o : extra->long_options)
            if (o.name != nullptr)
                longs.push_back(o);
    longs.push_back({nullptr, 0, nullptr, 0});
    return longs;
}

const OptionSpec *find_spec(const std::vector<OptionSpec> &table, int c) {
    for (size_t i = 0; i < table.size(); ++i)
        if (getopt_value(table[i], i) == c)
            return &table[i];
    return nullptr;
}

} // namespace

std::string format_real(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", v);
    return b;
}

std::string choice_list(const std::vector<std::pair<std::string, int64_t>> &choices,
                        const char *sep) {
    const bool prose = std::strcmp(sep, "|") != 0;
    std::string s;
    for (size_t i = 0; i < choices.size(); ++i) {
        if (i != 0)
            s += prose && i + 1 < choices.size() ? ", " : sep;
        s += choices[i].first;
    }
    return s;
}

OptionSpec flag_option(const char *long_name, char short_name, bool &target, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Flag, std::move(help));
    s.target = &target;
    return s;
}

OptionSpec flag_action(const char *long_name, char short_name, std::function<std::string()> action,
                       std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Flag, std::move(help));
    s.custom = [action = std::move(action)](const char *) { return action(); };
    return s;
}

OptionSpec help_option(const char *long_name, char short_name, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Flag, std::move(help));
    s.is_help = true;
    return s;
}

OptionSpec size_option(const char *long_name, char short_name, uint64_t &target, uint64_t min,
                       uint64_t max, std::string value_name, std::string help) {
    OptionSpec s = uint_option(long_name, short_name, target, min, max, std::move(value_name),
                               std::move(help));
    s.kind = ArgKind::Size;
    s.why = concat("bytes ", std::to_string(min), "..", std::to_string(max), ", suffix K, M or G");
    return s;
}

OptionSpec string_option(const char *long_name, char short_name, std::string &target,
                         std::string value_name, std::string help, bool non_empty) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::String, std::move(help));
    s.target = &target;
    s.umin = non_empty ? 1 : 0;
    s.why = "not empty";
    s.value_name = std::move(value_name);
    return s;
}

OptionSpec list_option(const char *long_name, char short_name, std::vector<std::string> &target,
                       std::string value_name, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::String, std::move(help));
    s.target = &target;
    s.value_name = std::move(value_name);
    return s;
}

OptionSpec custom_option(const char *long_name, char short_name,
                         std::function<std::string(const char *)> take, std::string value_name,
                         std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Custom, std::move(help));
    s.custom = std::move(take);
    s.value_name = std::move(value_name);
    return s;
}

ParseOutcome parse_options(const std::vector<OptionSpec> &table, int argc, char *const *argv,
                           const ExtraOptions *extra) {
    ParseOutcome out;
    auto fail = [&out](std::string msg) {
        out.status = ParseStatus::Error;
        out.message = std::move(msg);
        return out;
    };
    if (std::string err = check_table(table, extra); !err.empty())
        return fail(err);
    const std::string shorts = short_options(table);
    const std::vector<struct option> longs = long_options(table, extra);
    opterr = 0;
    optind = 0; /* glibc: a full restart, also of a cluster ("-an5") a past parse left */
    for (;;) {
        const int c = getopt_long(argc, argv, shorts.c_str(), longs.data(), nullptr);
        if (c == -1)
            break;
        if (c == ':' || c == '?')
            return fail(getopt_error_message(c, argv));
        const OptionSpec *s = find_spec(table, c);
        if (s == nullptr) {
            /* a device option (or getopt's answer to something the table lacks) */
            std::string err =
                extra != nullptr ? extra->take(c, optarg, longs.data()) : "unknown option";
            if (!err.empty())
                return fail(err);
            continue;
        }
        if (s->is_help) {
            out.status = ParseStatus::Help;
            return out;
        }
        if (const std::string why = take_value(*s, optarg); !why.empty())
            return fail(takes_value(*s)
                            ? invalid_value_message(longs.data(), c, optarg, why.c_str())
                            : option_name(longs.data(), c) + ": " + why);
        if (s->given != nullptr)
            *s->given = true;
    }
    for (int i = optind; i < argc; ++i)
        out.operands.emplace_back(argv[i]);
    return out;
}

std::string options_help(const std::vector<OptionSpec> &table, size_t column) {
    std::vector<std::string> heads;
    size_t widest = 0;
    for (const auto &o : table) {
        std::string h = "  ";
        if (o.short_name != 0)
            h.append("-").append(1, o.short_name);
        else
            h.append("  ");
        if (o.long_name != nullptr)
            h.append(o.short_name != 0 ? ", --" : "  --").append(o.long_name);
        if (takes_value(o) && !o.value_name.empty())
            h.append(o.long_name != nullptr ? "=" : " ").append(o.value_name);
        heads.push_back(h);
        if (!o.hidden)
            widest = std::max(widest, h.size());
    }
    if (column == 0)
        column = widest + 2;
    std::string text;
    for (size_t i = 0; i < table.size(); ++i) {
        if (table[i].hidden)
            continue;
        std::string line = heads[i];
        /* a head too long for the column gets the text on its own line */
        if (line.size() + 1 <= column)
            line.append(column - line.size(), ' ');
        else
            line.append("\n").append(column, ' ');
        const std::string &h = table[i].help;
        for (size_t p = 0; p < h.size();) {
            const size_t nl = h.find('\n', p);
            line += h.substr(p, nl == std::string::npos ? std::string::npos : nl - p);
            if (nl == std::string::npos)
                break;
            line.append("\n").append(column, ' ');
            p = nl + 1;
        }
        text += line + "\n";
    }
    return text;
}

} // namespace droce::app
