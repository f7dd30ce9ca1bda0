/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The droce tools' table-driven command line: each tool lists its options (long name,
 * short letter, the kind of value and its range, where the value goes, the help text) and
 * parse_options() reads argv against that table with getopt_long, checks every value and
 * names the option in every error; options_help() writes the --help lines from the same
 * table. droce's device options (device_options.h) plug in as extra getopt entries with
 * their own handler, so a tool's table and the shared device set parse in one pass. */
#pragma once

#include <getopt.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace droce::app {

/** The pieces appended one by one: GCC 12 (-O3) warns falsely (-Wrestrict) about
 * `"text" + std::string&&` once inlined, so messages are built with this. */
template <typename... P> std::string concat(const P &...pieces) {
    std::string s;
    ((s += pieces), ...);
    return s;
}

/** "0.001", "1000", "1e+09": the shortest form of a range bound. */
std::string format_real(double v);
/** "a, b or c" (sep " or ") / "a|b|c" (sep "|"). */
std::string choice_list(const std::vector<std::pair<std::string, int64_t>> &choices,
                        const char *sep);

/** The kind of value an option takes. */
enum class ArgKind {
    Flag,   /**< no value */
    UInt,   /**< unsigned integer (decimal, 0x hex, 0 octal), min..max */
    Int,    /**< signed integer, min..max */
    Size,   /**< bytes: unsigned with an optional K, M or G suffix (2^10, 2^20, 2^30) */
    Real,   /**< a floating-point number, lo..hi, stored times a scale */
    String, /**< any text (a list target appends: the option is repeatable) */
    Enum,   /**< one of a fixed set of words, each with its value */
    Custom, /**< the tool's own check (a list, a pair, a value with several rules) */
};

/** Where a value goes: the tool's field. Integers are converted to the field's type once
 * the range check has passed (the range keeps every value representable). */
using OptionTarget = std::variant<std::monostate, bool *, int *, uint8_t *, uint16_t *, uint32_t *,
                                  uint64_t *, double *, std::string *, std::vector<std::string> *>;

/** One option of a tool's table (build it with the factories below). */
struct OptionSpec {
    const char *long_name = nullptr; /**< "size" for --size; nullptr: short only */
    char short_name = 0;             /**< 's' for -s; 0: long only */
    ArgKind kind = ArgKind::Flag;
    OptionTarget target;
    /** UInt/Size: min..max; Int: min..max (as signed); Real: lo..hi. */
    uint64_t umin = 0, umax = 0;
    int64_t imin = 0, imax = 0;
    double lo = 0, hi = 0, scale = 1;
    std::vector<std::pair<std::string, int64_t>> choices; /**< Enum: word, value */
    /** UInt/Size: a further rule on the number (a power of two, a multiple of 16). */
    std::function<bool(uint64_t)> accept;
    /** Custom: takes the value (nullptr for a flag): "" or the reason it is invalid.
     * Flag: an action instead of setting the target (may refuse with a reason too). */
    std::function<std::string(const char *)> custom;
    /** What a valid value is, in the error message; generated from the range or the
     * choices unless the tool says it better. */
    std::string why;
    std::string value_name; /**< the help's placeholder: "--size=<size>" */
    std::string help;       /**< the help text; '\n' starts an indented continuation */
    bool *given = nullptr;  /**< set when the option was on the command line */
    bool is_help = false;   /**< -h/--help: parsing stops with ParseStatus::Help */
    bool hidden = false;    /**< accepted but left out of the help (an alias) */

    OptionSpec &set_given(bool &flag) {
        given = &flag;
        return *this;
    }
    OptionSpec &set_why(std::string w) {
        why = std::move(w);
        return *this;
    }
    OptionSpec &set_accept(std::function<bool(uint64_t)> rule) {
        accept = std::move(rule);
        return *this;
    }
    OptionSpec &set_hidden() {
        hidden = true;
        return *this;
    }
};

/** What every builder below starts from: the names, the kind and the help. */
inline OptionSpec option_of(const char *long_name, char short_name, ArgKind kind,
                            std::string help) {
    OptionSpec s;
    s.long_name = long_name;
    s.short_name = short_name;
    s.kind = kind;
    s.help = std::move(help);
    return s;
}

/** A flag that sets target to true. */
OptionSpec flag_option(const char *long_name, char short_name, bool &target, std::string help);
/** A flag whose action may refuse it: "" or the reason (the message is "NAME: reason"). */
OptionSpec flag_action(const char *long_name, char short_name, std::function<std::string()> action,
                       std::string help);
/** -h/--help (either name may be absent). */
OptionSpec help_option(const char *long_name, char short_name, std::string help);

template <typename T>
OptionSpec uint_option(const char *long_name, char short_name, T &target, uint64_t min,
                       uint64_t max, std::string value_name, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::UInt, std::move(help));
    s.target = &target;
    s.umin = min;
    s.umax = max;
    s.why = concat(std::to_string(min), "..", std::to_string(max));
    s.value_name = std::move(value_name);
    return s;
}

template <typename T>
OptionSpec int_option(const char *long_name, char short_name, T &target, int64_t min, int64_t max,
                      std::string value_name, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Int, std::move(help));
    s.target = &target;
    s.imin = min;
    s.imax = max;
    s.why = concat(std::to_string(min), "..", std::to_string(max));
    s.value_name = std::move(value_name);
    return s;
}

/** Bytes with an optional K/M/G suffix, min..max bytes. */
OptionSpec size_option(const char *long_name, char short_name, uint64_t &target, uint64_t min,
                       uint64_t max, std::string value_name, std::string help);

/** A number lo..hi (strtod's syntax); the field gets value * scale (converted to its
 * type, an integer field truncating). */
template <typename T>
OptionSpec real_option(const char *long_name, char short_name, T &target, double lo, double hi,
                       double scale, std::string value_name, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Real, std::move(help));
    s.target = &target;
    s.lo = lo;
    s.hi = hi;
    s.scale = scale;
    s.why = concat("a number ", format_real(lo), "..", format_real(hi));
    s.value_name = std::move(value_name);
    return s;
}

/** Any text; an empty value is accepted unless non_empty. */
OptionSpec string_option(const char *long_name, char short_name, std::string &target,
                         std::string value_name, std::string help, bool non_empty = false);
/** Repeatable: every value is appended. */
OptionSpec list_option(const char *long_name, char short_name, std::vector<std::string> &target,
                       std::string value_name, std::string help);

/** One of the words; the field gets the word's value. */
template <typename T>
OptionSpec enum_option(const char *long_name, char short_name, T &target,
                       std::vector<std::pair<std::string, int64_t>> choices, std::string help) {
    OptionSpec s = option_of(long_name, short_name, ArgKind::Enum, std::move(help));
    s.target = &target;
    s.choices = std::move(choices);
    s.why = choice_list(s.choices, " or ");
    s.value_name = choice_list(s.choices, "|");
    return s;
}

/** The tool's own check: take(value) returns "" or what a valid value is. */
OptionSpec custom_option(const char *long_name, char short_name,
                         std::function<std::string(const char *)> take, std::string value_name,
                         std::string help);

/** Options parsed outside the table (the device options): their getopt_long entries
 * (values other than the table's: device options use 1000..1099, the table 1100..) and
 * the handler, given the getopt value, the argument and every long option (for the
 * name in its messages): "" or the whole error message. */
struct ExtraOptions {
    std::vector<struct option> long_options;
    std::function<std::string(int, const char *, const struct option *)> take;
};

enum class ParseStatus { Ok, Help, Error };

struct ParseOutcome {
    ParseStatus status = ParseStatus::Ok;
    std::string message;               /**< Error: one line naming the option */
    std::vector<std::string> operands; /**< what was not an option, in order */
};

/** Parses argv[1..argc) (argv[0] is the program) against the table and the extras with
 * getopt_long; stops at the first error or at a help option. Resets getopt's state. */
ParseOutcome parse_options(const std::vector<OptionSpec> &table, int argc, char *const *argv,
                           const ExtraOptions *extra = nullptr);

/** The help lines of the table, one option a line ("  -s, --size=<size>  text"), the
 * text starting at column `column` (0: just past the longest option). */
std::string options_help(const std::vector<OptionSpec> &table, size_t column = 0);

} // namespace droce::app
