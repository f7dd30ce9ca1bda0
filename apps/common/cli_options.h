/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * getopt_long helpers shared by the droce tools: option names for messages, the messages
 * for getopt's ':' and '?' results, and the optional <host> operand. Each tool prints the
 * returned text its own way (droce-pingpong adds the usage, droce-perf a --help hint). */
#pragma once

#include <getopt.h>

#include <string>
#include <vector>

namespace droce::app {

/** Outcome of a tool's parse_command_line: run, or exit 0 (--help) or 1 (bad command
 * line, message printed). */
enum class ParseResult { Run, ExitOk, ExitError };

/** The option as the user spelled it, for messages: "-s/--size", "--ip" or "-z". */
std::string option_name(const struct option *long_options, int c);

/** "invalid value 'V' for NAME (WHY)". */
std::string invalid_value_message(const struct option *long_options, int c, const char *value,
                                  const char *why);

/** The message for getopt_long's ':' (missing value) or '?' (unknown option) result;
 * argv is the vector given to getopt_long, read at the globals optind and optopt. */
std::string getopt_error_message(int c, char *const *argv);

/** After getopt_long: takes the one optional <host> operand into host. Returns "" or
 * the message when there are more operands. */
std::string take_host_operand(int argc, char *const *argv, std::string &host);

/** The same for the operands parse_options() left (option_table.h). */
std::string take_host_operand(const std::vector<std::string> &operands, std::string &host);

} // namespace droce::app
