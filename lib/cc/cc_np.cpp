/* SPDX-License-Identifier: BSD-3-Clause */
/* Np is header-only (inline on the receive path); this unit checks the header compiles on
 * its own. */
#include "cc_np.h"
