/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Errors as values: Status and Result<T> (vocab_status.h, shared with the protocol core
 * and installed with this header). Control-plane calls return a Status (or a Result<T>)
 * carrying an errno-style code and a message; nothing throws. */
#pragma once

#include "vocab_status.h"
