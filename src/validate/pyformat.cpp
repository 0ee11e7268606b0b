// Python formatting and exact-integer helpers shared by the validator's rules.
#include <algorithm>

#include "core/checked.hpp"
#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {

std::string meta_repr(const TensorMeta* t) {
  if (t == nullptr) return "None";
  // dtype names are plain ASCII, so repr() is the name in single quotes.
  return "('" + std::string(st::dtype_name(t->dtype)) + "', " + py::repr_shape(t->shape) + ")";
}

bool shape_is(std::span<const std::uint64_t> shape, std::initializer_list<std::uint64_t> expected) {
  // A loop, not std::equal: that becomes a call to memcmp for two or three numbers.
  if (shape.size() != expected.size()) return false;
  const std::uint64_t* want = expected.begin();
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != want[i]) return false;
  return true;
}

bool meta_is(const TensorMeta* t, st::Dtype d, std::initializer_list<std::uint64_t> shape) {
  return t != nullptr && t->dtype == d && shape_is(t->shape, shape);
}

bool small_nonneg(const py::BigInt& k, u128& out) {
  const std::string& s = k.text;
  if (s.empty() || k.negative() || s.size() > 36) return false;  // 10^36 < 2^120
  u128 v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  out = v;
  return true;
}

std::uint32_t mod_small(const py::BigInt& k, std::uint32_t m) {
  std::uint64_t r = 0;
  for (char c : k.text)
    if (c >= '0' && c <= '9') r = (r * 10 + static_cast<unsigned>(c - '0')) % m;
  return static_cast<std::uint32_t>(r);
}


}  // namespace w4a8::validate::detail
