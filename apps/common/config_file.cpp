/* SPDX-License-Identifier: BSD-3-Clause */
#include "config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cfgfile.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

namespace droce::app {

namespace {

constexpr char kComment = '#';

/** What the scan found on one line (the lines rte_cfgfile skips are not kept). */
struct ScannedLine {
    int line;
    bool section; /* else an entry */
    std::string name;
};

std::string strip(const std::string &s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return s.substr(b, e - b);
}

/** Reads the whole file (a regular file, at most kConfigMaxBytes): "" or the error. */
std::string read_file(const std::string &path, std::string &text) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return path + ": cannot open: " + std::strerror(errno);
    struct stat st {};
    std::string err;
    if (fstat(fd, &st) != 0)
        err = path + ": cannot stat: " + std::strerror(errno);
    else if (!S_ISREG(st.st_mode))
        err = path + ": not a regular file";
    else if (static_cast<uint64_t>(st.st_size) > kConfigMaxBytes)
        err = path + ": larger than " + std::to_string(kConfigMaxBytes) + " bytes";
    char buf[4096];
    while (err.empty()) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            err = path + ": cannot read: " + std::strerror(errno);
        else if (n == 0)
            break;
        else if (text.size() + static_cast<size_t>(n) > kConfigMaxBytes)
            err = path + ": larger than " + std::to_string(kConfigMaxBytes) + " bytes";
        else
            text.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return err;
}

/** The line scan: the same reading as rte_cfgfile_load_with_params (comment at the first
 * '#' unless escaped as "\#", whitespace stripped, '[' starts a section, the first '='
 * splits an entry), with every case it skips, truncates or refuses without a line
 * number turned into an error naming the line. */
std::string scan(const ConfigFile &cf, const std::string &text, std::vector<ScannedLine> &out) {
    int lineno = 0;
    bool have_section = false;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos)
            nl = text.size();
        std::string raw = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++lineno;
        if (raw.find('\0') != std::string::npos)
            return cf.at(lineno, "NUL byte in the line");
        if (raw.size() > kConfigMaxLine)
            return cf.at(lineno,
                         "line longer than " + std::to_string(kConfigMaxLine) + " characters");
        /* rte_cfgfile looks at the first comment character only. */
        if (const size_t c = raw.find(kComment);
            c != std::string::npos && (c == 0 || raw[c - 1] != '\\'))
            raw.resize(c);
        const std::string s = strip(raw);
        if (s.empty())
            continue;
        if (s[0] == '[') {
            const size_t end = s.find(']');
            if (end == std::string::npos)
                return cf.at(lineno, "section heading without ']'");
            if (end + 1 != s.size())
                return cf.at(lineno, "text after the section heading: '" + s.substr(end + 1) + "'");
            const std::string name = strip(s.substr(1, end - 1));
            if (name.empty())
                return cf.at(lineno, "empty section name");
            if (name.size() > kConfigMaxName)
                return cf.at(lineno, "section name longer than " + std::to_string(kConfigMaxName) +
                                         " characters");
            out.push_back({lineno, true, name});
            have_section = true;
            continue;
        }
        const size_t eq = s.find('=');
        if (eq == std::string::npos)
            return cf.at(lineno, "expected '[section]' or 'key = value', found '" + s + "'");
        const std::string key = strip(s.substr(0, eq));
        const std::string value = strip(s.substr(eq + 1));
        if (key.empty())
            return cf.at(lineno, "no key before '='");
        if (!have_section)
            return cf.at(lineno, "'" + key + "' before any [section]");
        if (key.size() > kConfigMaxName)
            return cf.at(lineno,
                         "key longer than " + std::to_string(kConfigMaxName) + " characters");
        if (value.empty())
            return cf.at(lineno, "[" +
                                     std::find_if(out.rbegin(), out.rend(),
                                                  [](const auto &l) { return l.section; })
                                         ->name +
                                     "] " + key + ": empty value");
        if (value.size() > kConfigMaxValue)
            return cf.at(lineno, "value of '" + key + "' longer than " +
                                     std::to_string(kConfigMaxValue) + " characters");
        out.push_back({lineno, false, key});
    }
    return "";
}

struct CfgClose {
    void operator()(rte_cfgfile *c) const { rte_cfgfile_close(c); }
};

} // namespace

std::string ConfigFile::at(int line, const std::string &what) const {
    return path + ":" + std::to_string(line) + ": " + what;
}

std::string ConfigFile::bad_value(const ConfigEntry &e, const std::string &why) const {
    return at(e.line, "[" + e.section + "] " + e.key + " = " + e.value + ": " + why);
}

bool parse_config_bool(const std::string &v, bool &out) {
    static const char *const yes[] = {"on", "yes", "true", "1"};
    static const char *const no[] = {"off", "no", "false", "0"};
    for (const char *y : yes)
        if (v == y)
            return out = true, true;
    for (const char *n : no)
        if (v == n)
            return out = false, true;
    return false;
}

std::string load_config_file(const std::string &path, ConfigFile &out,
                             const std::vector<std::string> &repeatable) {
    out = ConfigFile{};
    out.path = path;
    std::string text;
    if (std::string err = read_file(path, text); !err.empty())
        return err;
    std::vector<ScannedLine> lines;
    if (std::string err = scan(out, text, lines); !err.empty())
        return err;

    /* The scan accepted nothing rte_cfgfile refuses, so a failure here is the file
     * changing under us or the system failing. */
    rte_cfgfile_parameters params{};
    params.comment_character = kComment;
    std::unique_ptr<rte_cfgfile, CfgClose> cfg(
        rte_cfgfile_load_with_params(path.c_str(), 0, &params));
    if (!cfg)
        return path + ": rte_cfgfile could not read it (changed while being read?)";

    const int nsec = rte_cfgfile_num_sections(cfg.get(), nullptr, 0);
    size_t li = 0;
    for (int s = 0; s < nsec; ++s) {
        if (li >= lines.size() || !lines[li].section)
            return path + ": rte_cfgfile and droce's scan of the file disagree";
        ConfigSection sec;
        sec.name = lines[li].name;
        sec.line = lines[li].line;
        ++li;
        char name[CFG_NAME_LEN];
        const int n = rte_cfgfile_section_num_entries_by_index(cfg.get(), name, s);
        if (n < 0 || sec.name != name)
            return out.at(sec.line, "rte_cfgfile and droce's scan disagree on this section");
        std::vector<rte_cfgfile_entry> ents(static_cast<size_t>(n));
        if (n > 0 && rte_cfgfile_section_entries_by_index(cfg.get(), s, name, ents.data(), n) != n)
            return out.at(sec.line, "rte_cfgfile could not list this section's entries");
        for (const auto &e : ents) {
            if (li >= lines.size() || lines[li].section || lines[li].name != e.name)
                return out.at(sec.line, "rte_cfgfile and droce's scan disagree in this section");
            sec.entries.push_back({sec.name, e.name, e.value, lines[li].line});
            ++li;
        }
        for (const auto &prev : out.sections)
            if (prev.name == sec.name)
                return out.at(sec.line, "duplicate section [" + sec.name + "] (first at line " +
                                            std::to_string(prev.line) + ")");
        for (size_t i = 0; i < sec.entries.size(); ++i) {
            const ConfigEntry &e = sec.entries[i];
            if (std::find(repeatable.begin(), repeatable.end(), sec.name + "." + e.key) !=
                repeatable.end())
                continue;
            for (size_t j = 0; j < i; ++j)
                if (sec.entries[j].key == e.key)
                    return out.at(e.line, "[" + sec.name + "] " + e.key +
                                              ": duplicate key (first at line " +
                                              std::to_string(sec.entries[j].line) + ")");
        }
        out.sections.push_back(std::move(sec));
    }
    if (li != lines.size())
        return out.at(lines[li].line, "rte_cfgfile and droce's scan disagree from this line");
    return "";
}

} // namespace droce::app
