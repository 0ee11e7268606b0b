// Typed results: a value or an Error (kind + exact message). Errors are data; no exceptions cross
// module lines.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "core/error_kind.hpp"

namespace w4a8 {

struct Error {
  ErrorKind kind{};
  std::string message;  // exact text, e.g. upstream's message byte for byte

  std::string_view type() const { return error_info(kind).py_type; }
  std::string_view code() const { return error_info(kind).code; }
  bool operator==(const Error&) const = default;
};

// Builds an Error from the kind's template; args replace the "{}" holes in order (already formatted,
// e.g. through py::repr). post: the hole count equals args.size() (asserted).
Error make_error(ErrorKind kind, std::initializer_list<std::string_view> args = {});

// A value or an error of type E (E != T). The one result template: Result<T> is the Error case;
// other modules use their own E where the failure carries more than a message (json::ParseError).
template <class T, class E>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(E error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const E& error() const& { assert(!ok()); return std::get<1>(v_); }
  E&& error() && { assert(!ok()); return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, E> v_;
};

template <class T>
using Result = Expected<T, Error>;

// Result of an operation that yields nothing.
struct Ok {};
using Status = Result<Ok>;

}  // namespace w4a8

// Propagates an error from an expression returning Result/Status.
#define W4A8_TRY(expr)                                         \
  do {                                                          \
    auto&& w4a8_try_r_ = (expr);                                \
    if (!w4a8_try_r_.ok()) return std::move(w4a8_try_r_).error(); \
  } while (0)
