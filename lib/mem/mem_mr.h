/* SPDX-License-Identifier: BSD-3-Clause */
/* Protection domains and memory regions. A key is (slot << 8) | generation: the 8-bit
 * generation changes on every registration of a slot, as hardware keys do, so a stale
 * or guessed key fails the lookup instead of reaching another region's memory.
 * A key is never handed out twice, as a peer may still hold a deregistered region's
 * rkey: freed slots rotate (one is reused after every other free slot, as rxe's cyclic
 * index allocation does), so generations advance once per table-wide cycle, and a slot
 * whose 255 generations are used up is retired for good (retired_slots()).
 * Lookups are O(1) and allocation-free (the data path calls check() per message, inlined:
 * a call and its register saves cost as much as the check). */
#pragma once

#include <cstdint>
#include <vector>

#include "vocab_status.h"
#include "vocab_verbs.h"

namespace droce::mem {

/** Why an access was refused; each maps to a NAK or a completion status. */
enum class AccessResult : uint8_t { Ok, BadKey, WrongPd, NoPermission, OutOfBounds, Misaligned };
const char *access_result_name(AccessResult r);

struct MemoryRegion {
    uint64_t addr;
    uint64_t length;
    uint32_t access; /* droce::Access bits */
    uint32_t pd;
    uint32_t key; /* lkey == rkey */
    bool in_use;
};

class MrTable {
  public:
    explicit MrTable(uint32_t max_regions = 4096);

    /** Registers [addr, addr+length) for pd; returns the region (key = lkey = rkey). */
    Result<MemoryRegion> reg(uint32_t pd, const void *addr, uint64_t length, uint32_t access);
    /** Deregisters; the key stops working at once. */
    Status dereg(uint32_t key);

    /** Checks that key names a live region of pd that grants `need` (Access bits; 0 for
     * a local read) and covers [va, va+len). On Ok, *host is the address to touch. */
    [[gnu::always_inline]] AccessResult check(uint32_t key, uint32_t pd, uint64_t va, uint64_t len,
                                              uint32_t need, uint8_t **host) const {
        const uint32_t slot = key >> 8;
        if (slot >= regions_.size())
            return AccessResult::BadKey;
        const MemoryRegion &r = regions_[slot];
        if (!r.in_use || r.key != key)
            return AccessResult::BadKey;
        if (r.pd != pd)
            return AccessResult::WrongPd;
        if ((r.access & need) != need)
            return AccessResult::NoPermission;
        if (va < r.addr || len > r.length || va - r.addr > r.length - len)
            return AccessResult::OutOfBounds;
        *host = reinterpret_cast<uint8_t *>(va);
        return AccessResult::Ok;
    }

    uint32_t live_regions() const { return live_; }
    /** Slots whose keys are all used up: never handed out again. */
    uint32_t retired_slots() const { return retired_; }

  private:
    std::vector<MemoryRegion> regions_;
    std::vector<uint8_t> generation_;
    /* Free slots, oldest freed first (a ring of max_regions entries). */
    std::vector<uint32_t> free_slots_;
    uint32_t free_head_ = 0, free_count_ = 0;
    uint32_t live_ = 0, retired_ = 0;
};

} // namespace droce::mem
