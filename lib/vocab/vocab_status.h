/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Errors as values. Control-plane calls return a Status (or a Result<T>) carrying an
 * errno-style code and a message; nothing throws (except Result::value() on an error,
 * which is a programming mistake). The protocol core's own vocabulary (it includes nothing
 * of include/droce); the public droce/status.h includes this header, installed with it. */
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace droce {

/** An error code (errno values, 0 = success) and a human-readable message. */
class Status {
  public:
    /** Success. */
    Status() = default;
    /** An error: code is an errno value (non-zero), msg says what failed and why. */
    Status(int code, std::string msg) : code_(code), msg_(std::move(msg)) {}
    /** Success, spelled out. */
    static Status ok() { return {}; }
    /** True on success. */
    bool is_ok() const { return code_ == 0; }
    /** Same as is_ok(): `if (Status s = f(); !s)` reads as "on error". */
    explicit operator bool() const { return is_ok(); }
    /** errno-style code: EINVAL for a bad argument, ETIMEDOUT, ENOMEM, ... */
    int code() const { return code_; }
    /** What failed and why; empty on success. */
    const std::string &message() const { return msg_; }

  private:
    int code_ = 0;
    std::string msg_;
};

/** A value or the Status explaining why there is none. */
template <class T> class Result {
  public:
    /** A value. */
    Result(T v) : v_(std::move(v)) {}
    /** An error (s must not be ok). */
    Result(Status s) : v_(std::move(s)) {}
    /** True when a value is held. */
    bool is_ok() const { return std::holds_alternative<T>(v_); }
    /** Same as is_ok(). */
    explicit operator bool() const { return is_ok(); }
    /** The value; throws std::bad_variant_access when there is none (check first). */
    T &value() { return std::get<T>(v_); }
    /** The value; throws std::bad_variant_access when there is none (check first). */
    const T &value() const { return std::get<T>(v_); }
    /** The value (see value()). */
    T &operator*() { return value(); }
    /** Member access to the value (see value()). */
    T *operator->() { return &value(); }
    /** The error; Status::ok() when a value is held. */
    Status status() const { return is_ok() ? Status{} : std::get<Status>(v_); }

  private:
    std::variant<T, Status> v_;
};

} // namespace droce
