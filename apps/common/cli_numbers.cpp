/* SPDX-License-Identifier: BSD-3-Clause */
#include "cli_numbers.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace droce::app {

bool parse_u64(const char *s, uint64_t max, uint64_t &out) {
    if (s == nullptr || *s == '\0' || *s == '-' || *s == '+')
        return false;
    errno = 0;
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v > max)
        return false;
    out = v;
    return true;
}

bool parse_i64(const char *s, int64_t min, int64_t max, int64_t &out) {
    if (s == nullptr || *s == '\0')
        return false;
    errno = 0;
    char *end = nullptr;
    const long long v = std::strtoll(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return false;
    out = v;
    return true;
}

bool parse_size_bytes(const char *s, uint64_t max, uint64_t &out) {
    if (s == nullptr)
        return false;
    std::string v(s);
    uint64_t mul = 1;
    if (!v.empty()) {
        switch (v.back()) {
        case 'k':
        case 'K':
            mul = 1ull << 10;
            break;
        case 'm':
        case 'M':
            mul = 1ull << 20;
            break;
        case 'g':
        case 'G':
            mul = 1ull << 30;
            break;
        default:
            break;
        }
        if (mul != 1)
            v.pop_back();
    }
    uint64_t n = 0;
    if (v.empty() || !parse_u64(v.c_str(), max / mul, n))
        return false;
    out = n * mul;
    return true;
}

bool parse_rate_bps(const char *s, uint64_t &out) {
    /* A digit or '.' first: strtod alone would also take leading blanks, "inf", "nan" and
     * hex floats ("0x1p30" = 1 Gi), none of which is a rate anyone means. */
    if (s == nullptr || !((*s >= '0' && *s <= '9') || *s == '.'))
        return false;
    for (const char *c = s; *c != '\0'; ++c)
        if (*c == 'x' || *c == 'X')
            return false;
    errno = 0;
    char *end = nullptr;
    double v = std::strtod(s, &end);
    if (errno != 0 || end == s)
        return false;
    if (*end == 'k' || *end == 'K')
        v *= 1e3, ++end;
    else if (*end == 'm' || *end == 'M')
        v *= 1e6, ++end;
    else if (*end == 'g' || *end == 'G')
        v *= 1e9, ++end;
    if (*end != '\0' || !(v >= 1) || v > 1e13)
        return false;
    out = static_cast<uint64_t>(v + 0.5);
    return true;
}

bool parse_seconds(const char *s, double &out) {
    if (s == nullptr)
        return false;
    errno = 0;
    char *end = nullptr;
    const double t = std::strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(t >= 0) || t > 1e6)
        return false;
    out = t;
    return true;
}

} // namespace droce::app
