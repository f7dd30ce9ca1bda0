/* SPDX-License-Identifier: BSD-3-Clause */
#include "cli_options.h"

#include <cstring>

namespace droce::app {

std::string option_name(const struct option *long_options, int c) {
    for (const auto *o = long_options; o->name != nullptr; ++o) {
        if (o->val == c) {
            if (c < 256)
                return std::string("-") + static_cast<char>(c) + "/--" + o->name;
            return std::string("--") + o->name;
        }
    }
    return std::string("-") + static_cast<char>(c);
}

std::string invalid_value_message(const struct option *long_options, int c, const char *value,
                                  const char *why) {
    return "invalid value '" + std::string(value ? value : "") + "' for " +
           option_name(long_options, c) + " (" + why + ")";
}

std::string getopt_error_message(int c, char *const *argv) {
    const char *arg = argv[optind - 1];
    if (c == ':')
        return std::string("option '") + arg + "' needs a value";
    if (std::strncmp(arg, "--", 2) == 0)
        return std::string("unknown option or unexpected value '") + arg + "'";
    if (optopt > 0 && optopt < 256)
        return std::string("unknown option '-") + static_cast<char>(optopt) + "'";
    return std::string("unknown option '") + arg + "'";
}

std::string take_host_operand(int argc, char *const *argv, std::string &host) {
    if (optind == argc - 1)
        host = argv[optind];
    else if (optind < argc)
        return std::string("unexpected argument '") + argv[optind + 1] +
               "' (only one <host> is allowed)";
    return "";
}

std::string take_host_operand(const std::vector<std::string> &operands, std::string &host) {
    if (operands.size() > 1)
        return "unexpected argument '" + operands[1] + "' (only one <host> is allowed)";
    if (!operands.empty())
        host = operands[0];
    return "";
}

} // namespace droce::app
