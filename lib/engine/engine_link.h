/* SPDX-License-Identifier: BSD-3-Clause */
/* Bonds as the engine sees them (engine_link.cpp). */
#pragma once

#include <cstdint>

namespace droce::engine {

/** engine_link.cpp: a net_bonding port; the bonding port port is a member of (-1: none,
 * or its bond is not configured yet: a vdev bond adds its members when configured). */
bool is_bond_port(uint16_t port);
int bond_of_member(uint16_t port);

} // namespace droce::engine
