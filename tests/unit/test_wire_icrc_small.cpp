/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire icrc_compute_small (the vector-masked small-frame ICRC behind icrc_compute
 * and icrc_compute_inplace): the reference's value for every length from the bare
 * headers to kIcrcSmallMax, IPv4 and IPv6, random bytes (variant fields included, so a
 * field left unmasked or masked wrongly changes the value); it reads nothing outside
 * [l3, l3 + len), and the in-place entry leaves the frame as it was. */
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire_headers.h"
#include "wire_icrc.h"
#include "wire_icrc_small.h"

using namespace droce::wire;

TEST(WireIcrcSmall, SameAsReferenceForEveryLength) {
    std::mt19937 rng(21);
    for (const bool v6 : {false, true}) {
        const size_t hlen = (v6 ? kIpv6Len : kIpv4Len) + kUdpLen + kBthLen;
        for (size_t len = hlen; len <= kIcrcSmallMax; ++len) {
            /* Exactly len bytes on the heap: a read outside shows up under ASan. */
            std::vector<uint8_t> f(len);
            for (auto &b : f)
                b = static_cast<uint8_t>(rng());
            SCOPED_TRACE(testing::Message() << "v6 " << v6 << " len " << len);
            const uint32_t ref = icrc_compute_reference(f.data(), len, v6);
            ASSERT_EQ(icrc_compute_small(f.data(), len, v6), ref);
            ASSERT_EQ(icrc_compute(f.data(), len, v6), ref);
        }
    }
}

TEST(WireIcrcSmall, InplaceLeavesTheFrameUnchanged) {
    std::mt19937 rng(22);
    for (const bool v6 : {false, true}) {
        const size_t hlen = (v6 ? kIpv6Len : kIpv4Len) + kUdpLen + kBthLen;
        for (size_t len = hlen; len <= kIcrcSmallInplaceMax + 64; len += 7) {
            std::vector<uint8_t> f(8 + len);
            for (auto &b : f)
                b = static_cast<uint8_t>(rng());
            const std::vector<uint8_t> before = f;
            SCOPED_TRACE(testing::Message() << "v6 " << v6 << " len " << len);
            EXPECT_EQ(icrc_compute_inplace(f.data() + 8, len, v6),
                      icrc_compute_reference(f.data() + 8, len, v6));
            EXPECT_EQ(f, before);
        }
    }
}
