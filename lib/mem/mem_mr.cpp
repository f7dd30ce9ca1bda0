/* SPDX-License-Identifier: BSD-3-Clause */
#include "mem_mr.h"

#include <string>

namespace droce::mem {

const char *access_result_name(AccessResult r) {
    switch (r) {
    case AccessResult::Ok:
        return "ok";
    case AccessResult::BadKey:
        return "bad_key";
    case AccessResult::WrongPd:
        return "wrong_pd";
    case AccessResult::NoPermission:
        return "no_permission";
    case AccessResult::OutOfBounds:
        return "out_of_bounds";
    case AccessResult::Misaligned:
        return "misaligned";
    }
    return "unknown";
}

MrTable::MrTable(uint32_t max_regions) {
    /* Slot 0 is never handed out so that key 0 (an easy guess) is always invalid. */
    regions_.assign(max_regions + 1, MemoryRegion{});
    generation_.assign(max_regions + 1, 0);
    free_slots_.resize(max_regions);
    for (uint32_t s = 1; s <= max_regions; ++s)
        free_slots_[s - 1] = s;
    free_count_ = max_regions;
}

Result<MemoryRegion> MrTable::reg(uint32_t pd, const void *addr, uint64_t length, uint32_t access) {
    if (addr == nullptr && length != 0)
        return Status(EINVAL, "memory region: null address");
    const uint32_t known =
        kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    if (access & ~known)
        return Status(EINVAL,
                      "memory region: unknown access flag 0x" + std::to_string(access & ~known));
    /* Verbs rule: remote write/atomic need local write. */
    if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite))
        return Status(EINVAL, "memory region: REMOTE_WRITE/REMOTE_ATOMIC require LOCAL_WRITE");
    if (free_count_ == 0) {
        if (retired_ != 0)
            return Status(ENOSPC, "memory region: table full (" + std::to_string(live_) +
                                      " regions live, " + std::to_string(retired_) +
                                      " slots retired: their key space is used up)");
        return Status(ENOMEM, "memory region: table full (" + std::to_string(regions_.size() - 1) +
                                  " regions)");
    }
    const uint32_t slot = free_slots_[free_head_];
    free_head_ = (free_head_ + 1) % free_slots_.size();
    --free_count_;
    /* A new generation every registration, 1..255 (never 0, so that slot<<8 alone is
     * invalid); dereg retires the slot after 255, so none wraps. */
    const uint8_t g = static_cast<uint8_t>(generation_[slot] + 1);
    generation_[slot] = g;
    MemoryRegion &r = regions_[slot];
    r = MemoryRegion{reinterpret_cast<uint64_t>(addr), length, access, pd, (slot << 8) | g, true};
    ++live_;
    return r;
}

Status MrTable::dereg(uint32_t key) {
    const uint32_t slot = key >> 8;
    if (slot == 0 || slot >= regions_.size() || !regions_[slot].in_use || regions_[slot].key != key)
        return Status(EINVAL, "memory region: no region with key 0x" + std::to_string(key));
    regions_[slot].in_use = false;
    --live_;
    if (generation_[slot] == 0xFF) {
        ++retired_; /* the next generation would repeat a key a peer may hold */
        return {};
    }
    free_slots_[(free_head_ + free_count_) % free_slots_.size()] = slot;
    ++free_count_;
    return {};
}

} // namespace droce::mem
