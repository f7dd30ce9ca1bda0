/* SPDX-License-Identifier: BSD-3-Clause */
/* Block backends behind a namespace. Asynchronous by contract: submit() either finishes
 * the I/O in place (a RAM disk: Done) or queues it (Queued) and poll() hands it back later;
 * neither ever blocks or allocates. Byte offsets and lengths are whole blocks (the core
 * checks LBAs before it gets here, so a backend never sees an I/O past its end; it checks
 * again anyway and fails such an I/O with ERANGE). */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace droce::nvmf {

enum class BdevOp : uint8_t { Read, Write, Flush, WriteZeroes, Deallocate };

struct BdevIo {
    BdevOp op = BdevOp::Read;
    uint64_t offset = 0; /* bytes */
    uint64_t len = 0;    /* bytes; the data buffer's length for Read/Write */
    void *buf = nullptr;
    int status = 0;        /* 0 or a positive errno, set by the backend */
    void *owner = nullptr; /* the core's request: opaque to the backend */
};

enum class Submit : uint8_t { Done, Queued, Busy };

class Bdev {
  public:
    virtual ~Bdev() = default;
    virtual uint64_t size_bytes() const = 0;
    virtual uint32_t block_size() const = 0;
    /* Busy: no room now (queue full); the caller fails or retries the command. */
    virtual Submit submit(BdevIo &io) = 0;
    /* Up to max finished I/Os of earlier Queued submits. */
    virtual size_t poll(BdevIo **out, size_t max) = 0;
    /* I/Os submitted and not yet handed back by poll(). */
    virtual size_t in_flight() const = 0;
};

/* A RAM disk of size_bytes (allocated and zeroed here, at set-up). Deallocated blocks read
 * back as zeroes (Identify Namespace says so: DLFEAT). */
std::unique_ptr<Bdev> make_ram_bdev(uint64_t size_bytes, uint32_t block_size);

/* A file or block device opened O_DIRECT, served by one worker thread fed through an
 * rte_ring (see nvmf_bdev_file.cpp for why not io_uring). size_bytes 0: the file's size
 * (a regular file is extended to size_bytes when it is shorter). Null and err set when it
 * cannot be opened. depth bounds the I/Os in flight (Busy beyond). */
std::unique_ptr<Bdev> make_file_bdev(const std::string &path, uint64_t size_bytes,
                                     uint32_t block_size, uint32_t depth, std::string &err);

} // namespace droce::nvmf
