/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce's configuration files (config/droce.conf): INI files read with DPDK's
 * rte_cfgfile, '#' comments. rte_cfgfile keeps no line numbers and lets several mistakes
 * pass silently (a line with neither '[' nor '=' is skipped, text after ']' is dropped,
 * long names and values are truncated, keys and sections may repeat), so the file is also
 * scanned here line by line: every such mistake is an error naming the line, and every
 * entry rte_cfgfile returns is paired with the line it came from. */
#pragma once

#include <string>
#include <vector>

namespace droce::app {

/** One "key = value" of the file, as rte_cfgfile read it, with its line. */
struct ConfigEntry {
    std::string section;
    std::string key;
    std::string value;
    int line = 0;
};

/** A section heading and its entries. */
struct ConfigSection {
    std::string name;
    int line = 0;
    std::vector<ConfigEntry> entries;
};

/** A loaded configuration file. */
struct ConfigFile {
    std::string path;
    std::vector<ConfigSection> sections;

    /** "PATH:LINE: what": the one-line form of every error about the file's content. */
    std::string at(int line, const std::string &what) const;
    /** "PATH:LINE: [section] key = value: why" for a bad value. */
    std::string bad_value(const ConfigEntry &e, const std::string &why) const;
};

/** Longest key and section name rte_cfgfile keeps whole (CFG_NAME_LEN - 1). */
inline constexpr size_t kConfigMaxName = 63;
/** Longest value rte_cfgfile keeps whole (CFG_VALUE_LEN - 1). */
inline constexpr size_t kConfigMaxValue = 255;
/** Longest line (rte_cfgfile refuses lines that do not fit its buffer). */
inline constexpr size_t kConfigMaxLine = 300;
/** A configuration file larger than this is refused before it is read. */
inline constexpr size_t kConfigMaxBytes = 1 << 20;

/** Reads path into out: "" or the one-line error ("PATH: cannot open: why",
 * "PATH:LINE: ..."). Duplicate sections and, unless `repeatable` names them
 * ("section.key"), duplicate keys are errors. */
std::string load_config_file(const std::string &path, ConfigFile &out,
                             const std::vector<std::string> &repeatable = {});

/** Parses an on/off value (on, off, yes, no, true, false, 1, 0). */
bool parse_config_bool(const std::string &v, bool &out);

} // namespace droce::app
