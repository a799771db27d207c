// Recoverable errors travel in the return type, not as exceptions.
//
//   Result<Ruleset> r = load(...);
//   if (!r) { log(r.error().message); return 2; }
//   use(*r);
//
// Error::kind sorts failures the way the CLI reports them: kBadInput is the
// user's to fix (exit code 2), kRuntime is the environment's (exit code 1).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace vigil {

struct Error {
  enum class Kind { kBadInput, kRuntime };
  Kind kind = Kind::kRuntime;
  std::string message;

  static Error bad_input(std::string msg) { return {Kind::kBadInput, std::move(msg)}; }
  static Error runtime(std::string msg) { return {Kind::kRuntime, std::move(msg)}; }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Error err) : v_(std::move(err)) {}  // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing on success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error err) : err_(std::move(err)), ok_(false) {}  // NOLINT: implicit by design
  static Status ok_status() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool ok_ = true;
};

}  // namespace vigil
