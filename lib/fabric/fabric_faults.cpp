/* SPDX-License-Identifier: BSD-3-Clause */
#include "fabric_faults.h"

namespace droce::fabric {

namespace {
constexpr uint32_t kEthHeader = 14;
bool prob(double p) { return p >= 0 && p <= 1; } /* false for NaN too */
} // namespace

const char *validate(const FaultParams &p) {
    if (!prob(p.dup))
        return "dup: want a probability 0..1";
    if (!prob(p.reorder))
        return "reorder: want a probability 0..1";
    if (!prob(p.corrupt))
        return "corrupt: want a probability 0..1";
    return nullptr;
}

/* splitmix64 seeding: seed 0 is as good as any other, and the draws do not depend on how a
 * standard library implements a distribution (a seed replays on every build). */
FaultInjector::FaultInjector(const FaultParams &p, uint64_t seed)
    : p_(p), rng_(seed ^ 0x6A09E667F3BCC909ull) {}

uint64_t FaultInjector::next() {
    uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double FaultInjector::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

FaultAction FaultInjector::decide(uint32_t len, bool can_hold) {
    FaultAction a;
    /* each kind draws every time it is enabled, so enabling one does not shift when the
     * others happen for a given seed more than it must */
    if (chance(p_.corrupt) && len > kEthHeader) {
        a.flip = static_cast<int32_t>(kEthHeader + next() % (len - kEthHeader));
        a.mask = static_cast<uint8_t>(1u << (next() % 8));
        ++c_.corrupted;
    }
    if (chance(p_.dup)) {
        a.dup = true;
        ++c_.duplicated;
    }
    if (chance(p_.reorder) && can_hold)
        a.hold = true;
    return a;
}

} // namespace droce::fabric
