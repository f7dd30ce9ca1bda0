/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Errors as values. Control-plane calls return a Status (or a Result<T>) carrying an
 * errno-style code and a message; nothing on the data path throws. */
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace droce {

/** An error code (errno values, 0 = success) and a human-readable message. */
class Status {
  public:
    Status() = default;
    Status(int code, std::string msg) : code_(code), msg_(std::move(msg)) {}
    static Status ok() { return {}; }
    /** True on success. */
    bool is_ok() const { return code_ == 0; }
    explicit operator bool() const { return is_ok(); }
    /** errno-style code: EINVAL for a bad argument, ETIMEDOUT, ENOMEM, ... */
    int code() const { return code_; }
    const std::string &message() const { return msg_; }

  private:
    int code_ = 0;
    std::string msg_;
};

/** A value or the Status explaining why there is none. */
template <class T> class Result {
  public:
    Result(T v) : v_(std::move(v)) {}
    Result(Status s) : v_(std::move(s)) {}
    bool is_ok() const { return std::holds_alternative<T>(v_); }
    explicit operator bool() const { return is_ok(); }
    T &value() { return std::get<T>(v_); }
    const T &value() const { return std::get<T>(v_); }
    T &operator*() { return value(); }
    T *operator->() { return &value(); }
    /** The error; Status::ok() when a value is held. */
    Status status() const { return is_ok() ? Status{} : std::get<Status>(v_); }

  private:
    std::variant<T, Status> v_;
};

} // namespace droce
