/* SPDX-License-Identifier: BSD-3-Clause */
#include "qp_resources.h"

#include <cstdio>

namespace droce::app {

void vprint_error(const std::string &prefix, const char *fmt, va_list ap) {
    std::fflush(stdout);
    std::fputs(prefix.c_str(), stderr);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
}

} // namespace droce::app
