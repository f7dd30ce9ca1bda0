/* SPDX-License-Identifier: BSD-3-Clause */
/* RAM disk backend: every I/O finishes inside submit() with a memcpy. */
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "nvmf_bdev.h"

namespace droce::nvmf {

namespace {

class RamBdev final : public Bdev {
  public:
    /* calloc: a large RAM disk costs memory only where it has been written. */
    RamBdev(uint8_t *mem, uint64_t size, uint32_t bs) : mem_(mem), size_(size), bs_(bs) {}
    ~RamBdev() override { std::free(mem_); }
    uint64_t size_bytes() const override { return size_; }
    uint32_t block_size() const override { return bs_; }
    size_t poll(BdevIo **, size_t) override { return 0; }
    size_t in_flight() const override { return 0; }

    Submit submit(BdevIo &io) override {
        io.status = 0;
        if (io.op == BdevOp::Flush)
            return Submit::Done;
        if (io.offset > size_ || io.len > size_ - io.offset) {
            io.status = ERANGE;
            return Submit::Done;
        }
        uint8_t *at = mem_ + io.offset;
        switch (io.op) {
        case BdevOp::Read:
            std::memcpy(io.buf, at, io.len);
            break;
        case BdevOp::Write:
            std::memcpy(at, io.buf, io.len);
            break;
        case BdevOp::WriteZeroes:
        case BdevOp::Deallocate:
            std::memset(at, 0, io.len);
            break;
        case BdevOp::Flush:
            break;
        }
        return Submit::Done;
    }

  private:
    uint8_t *mem_;
    uint64_t size_;
    uint32_t bs_;
};

} // namespace

std::unique_ptr<Bdev> make_ram_bdev(uint64_t size_bytes, uint32_t block_size) {
    if (block_size == 0 || size_bytes % block_size)
        return nullptr;
    auto *mem = static_cast<uint8_t *>(std::calloc(1, size_bytes));
    if (!mem)
        return nullptr;
    return std::make_unique<RamBdev>(mem, size_bytes, block_size);
}

} // namespace droce::nvmf
