/* SPDX-License-Identifier: BSD-3-Clause */
/* File / block device backend, O_DIRECT, served by one worker thread.
 *
 * Why a worker thread fed by an rte_ring and not io_uring: the poll loop must make no system
 * call per I/O. io_uring without SQPOLL needs an io_uring_enter() per batch on the poll
 * thread; SQPOLL avoids it but needs a kernel thread per ring (and privileges on older
 * kernels), and liburing-dev is one more build dependency (Debian 12 has only the runtime
 * here). With two single-producer/single-consumer rte_rings the poll loop only does two
 * lock-free ring operations per I/O; the blocking pread/pwrite happens on the worker.
 * The cost is a thread handoff per I/O (cache-line transfers both ways) and a worker that
 * spins, then naps 50 us when idle (the latency of the first I/O after a pause). */
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_pause.h>
#include <rte_ring.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "nvmf_bdev.h"

namespace droce::nvmf {

namespace {

constexpr size_t kZeroChunk = 64 * 1024;

struct RingDeleter {
    void operator()(rte_ring *r) const { std::free(r); }
};
using RingPtr = std::unique_ptr<rte_ring, RingDeleter>;

/* An rte_ring in plain memory: rte_ring_init needs no EAL (no memzone). */
RingPtr make_ring(const char *name, unsigned count) {
    const ssize_t sz = rte_ring_get_memsize(count);
    if (sz < 0)
        return nullptr;
    void *m = std::aligned_alloc(64, (static_cast<size_t>(sz) + 63) & ~size_t{63});
    if (!m)
        return nullptr;
    auto *r = static_cast<rte_ring *>(m);
    if (rte_ring_init(r, name, count, RING_F_SP_ENQ | RING_F_SC_DEQ) != 0) {
        std::free(m);
        return nullptr;
    }
    return RingPtr(r);
}

class FileBdev final : public Bdev {
  public:
    FileBdev(int fd, uint64_t size, uint32_t bs, bool blockdev, RingPtr sub, RingPtr comp,
             uint32_t depth)
        : fd_(fd), size_(size), bs_(bs), blockdev_(blockdev), depth_(depth), sub_(std::move(sub)),
          comp_(std::move(comp)) {
        zero_ = static_cast<uint8_t *>(std::aligned_alloc(4096, kZeroChunk));
        std::memset(zero_, 0, kZeroChunk);
        worker_ = std::thread([this] { run(); });
    }
    ~FileBdev() override {
        stop_.store(true, std::memory_order_release);
        worker_.join();
        ::close(fd_);
        std::free(zero_);
    }
    uint64_t size_bytes() const override { return size_; }
    uint32_t block_size() const override { return bs_; }
    size_t in_flight() const override { return in_flight_; }

    Submit submit(BdevIo &io) override {
        if (in_flight_ >= depth_)
            return Submit::Busy;
        void *p = &io;
        if (rte_ring_sp_enqueue(sub_.get(), p) != 0)
            return Submit::Busy;
        ++in_flight_;
        return Submit::Queued;
    }

    size_t poll(BdevIo **out, size_t max) override {
        const unsigned n = rte_ring_sc_dequeue_burst(comp_.get(), reinterpret_cast<void **>(out),
                                                     static_cast<unsigned>(max), nullptr);
        in_flight_ -= n;
        return n;
    }

  private:
    void run() {
        void *batch[32];
        unsigned idle = 0;
        while (!stop_.load(std::memory_order_acquire)) {
            const unsigned n = rte_ring_sc_dequeue_burst(sub_.get(), batch, 32, nullptr);
            if (n == 0) {
                if (++idle < 4096) {
                    rte_pause();
                } else {
                    std::this_thread::sleep_for(std::chrono::microseconds(50));
                }
                continue;
            }
            idle = 0;
            for (unsigned i = 0; i < n; ++i)
                execute(*static_cast<BdevIo *>(batch[i]));
            /* The ring holds depth entries and at most depth are in flight: never full. */
            rte_ring_sp_enqueue_bulk(comp_.get(), batch, n, nullptr);
        }
    }

    int full_rw(bool write, uint8_t *buf, uint64_t len, uint64_t off) {
        while (len) {
            const ssize_t r = write ? ::pwrite(fd_, buf, len, static_cast<off_t>(off))
                                    : ::pread(fd_, buf, len, static_cast<off_t>(off));
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return errno;
            }
            if (r == 0)
                return EIO;
            buf += r;
            off += static_cast<uint64_t>(r);
            len -= static_cast<uint64_t>(r);
        }
        return 0;
    }

    int zeroes(uint64_t off, uint64_t len) {
        if (!blockdev_ && ::fallocate(fd_, FALLOC_FL_ZERO_RANGE, static_cast<off_t>(off),
                                      static_cast<off_t>(len)) == 0)
            return 0;
        while (len) {
            const uint64_t n = len < kZeroChunk ? len : kZeroChunk;
            if (int e = full_rw(true, zero_, n, off))
                return e;
            off += n;
            len -= n;
        }
        return 0;
    }

    void execute(BdevIo &io) {
        io.status = 0;
        if (io.op != BdevOp::Flush && (io.offset > size_ || io.len > size_ - io.offset)) {
            io.status = ERANGE;
            return;
        }
        switch (io.op) {
        case BdevOp::Read:
            io.status = full_rw(false, static_cast<uint8_t *>(io.buf), io.len, io.offset);
            break;
        case BdevOp::Write:
            io.status = full_rw(true, static_cast<uint8_t *>(io.buf), io.len, io.offset);
            break;
        case BdevOp::Flush:
            io.status = ::fdatasync(fd_) == 0 ? 0 : errno;
            break;
        case BdevOp::WriteZeroes:
            io.status = zeroes(io.offset, io.len);
            break;
        case BdevOp::Deallocate:
            /* Identify Namespace promises zeroes after deallocate: punch a hole (a file),
             * BLKZEROOUT (a device), else write them. */
            if (!blockdev_ &&
                ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                            static_cast<off_t>(io.offset), static_cast<off_t>(io.len)) == 0)
                break;
            if (blockdev_) {
                uint64_t range[2] = {io.offset, io.len};
                if (::ioctl(fd_, BLKZEROOUT, range) == 0)
                    break;
            }
            io.status = zeroes(io.offset, io.len);
            break;
        }
    }

    int fd_;
    uint64_t size_;
    uint32_t bs_;
    bool blockdev_;
    uint32_t depth_;
    size_t in_flight_ = 0; /* poll thread only */
    RingPtr sub_, comp_;
    uint8_t *zero_ = nullptr;
    std::atomic<bool> stop_{false};
    std::thread worker_;
};

} // namespace

std::unique_ptr<Bdev> make_file_bdev(const std::string &path, uint64_t size_bytes,
                                     uint32_t block_size, uint32_t depth, std::string &err) {
    if (block_size < 512 || (block_size & (block_size - 1)) || depth == 0) {
        err = "block size must be a power of two >= 512, depth > 0";
        return nullptr;
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) {
        err = path + ": " + std::strerror(errno);
        return nullptr;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        err = path + ": fstat: " + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    const bool blockdev = S_ISBLK(st.st_mode);
    uint64_t have = static_cast<uint64_t>(st.st_size);
    if (blockdev && ::ioctl(fd, BLKGETSIZE64, &have) != 0) {
        err = path + ": BLKGETSIZE64: " + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    uint64_t size = size_bytes ? size_bytes : have;
    if (!blockdev && have < size && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        err = path + ": ftruncate: " + std::strerror(errno);
        ::close(fd);
        return nullptr;
    }
    if (blockdev && size > have)
        size = have;
    size -= size % block_size;
    if (size == 0) {
        err = path + ": empty";
        ::close(fd);
        return nullptr;
    }
    unsigned count = 1;
    while (count < depth + 1)
        count <<= 1;
    RingPtr sub = make_ring("nvmf_sub", count), comp = make_ring("nvmf_cmp", count);
    if (!sub || !comp) {
        err = "rte_ring_init failed";
        ::close(fd);
        return nullptr;
    }
    return std::make_unique<FileBdev>(fd, size, block_size, blockdev, std::move(sub),
                                      std::move(comp), depth);
}

} // namespace droce::nvmf
