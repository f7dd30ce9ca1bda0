/* SPDX-License-Identifier: BSD-3-Clause */
/* Stopping and closing a port while the EAL's interrupt thread is held, where the PMD
 * needs that (memif handles its peer's disconnect there, unserialized with a stop). */
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include "drivers.h"
#include "poll_gate.h"

namespace droce::drivers {

PortStopResult stop_port(uint16_t port, bool close, bool hold_intr_thread) {
    PortStopResult r;
    if (hold_intr_thread)
        poll_gate_remove_port(port); /* its pollers are done with it */
    const auto run = [&] {
        r.stop_rc = rte_eth_dev_stop(port);
        if (close)
            r.close_rc = rte_eth_dev_close(port);
    };
    if (hold_intr_thread) {
        r.intr_thread_held = with_intr_thread_held(run);
    } else {
        r.intr_thread_held = rte_thread_is_intr() != 0;
        run();
    }
    return r;
}

} // namespace droce::drivers
