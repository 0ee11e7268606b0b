#include "audit/rerun_diff.hpp"

#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "gemm/numerics.hpp"

namespace w4a8::audit {
namespace {

std::string shown(float v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", double(v), gemm::f32_bits(v));
  return buf;
}
std::string shown(std::int32_t v) { return std::to_string(v); }
std::string shown(std::int8_t v) { return std::to_string(int(v)); }

bool same(float a, float b) { return gemm::f32_bits(a) == gemm::f32_bits(b); }  // bits: NaN payloads and -0 too
bool same(std::int32_t a, std::int32_t b) { return a == b; }
bool same(std::int8_t a, std::int8_t b) { return a == b; }

// One tensor [rows, cols] of both runs; cols == 0 for a vector.
template <class T>
std::string diff(const char* name, const std::vector<T>& a, const std::vector<T>& b, std::uint64_t cols) {
  if (a.size() != b.size())
    return std::string(name) + " has " + std::to_string(b.size()) + " elements, " + std::to_string(a.size()) +
           " in the first run";
  std::size_t first = a.size(), count = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i]) && count++ == 0) first = i;
  if (count == 0) return "";
  const std::string at = cols ? "[" + std::to_string(first / cols) + ", " + std::to_string(first % cols) + "]"
                              : "[" + std::to_string(first) + "]";
  return std::string(name) + at + " is " + shown(b[first]) + ", was " + shown(a[first]) + " in the first run; " +
         std::to_string(count) + " of " + std::to_string(a.size()) + " elements of " + name + " differ";
}

template <class T>
std::string diff(const char* name, const std::optional<std::vector<T>>& a, const std::optional<std::vector<T>>& b,
                 std::uint64_t cols) {
  if (a.has_value() != b.has_value())
    return std::string(name) + (b ? " was given" : " was not given") + ", unlike in the first run";
  return a ? diff(name, *a, *b, cols) : "";
}

}  // namespace

std::string rerun_difference(const CaseSpec& c, const ImplOutput& first, const ImplOutput& again) {
  if (again.status != first.status || again.message != first.message) {
    std::string s = "it gave " + std::string(status_name(again.status));
    if (!again.message.empty()) s += " (" + again.message + ")";
    s += ", the first run " + std::string(status_name(first.status));
    if (!first.message.empty()) s += " (" + first.message + ")";
    return s;
  }
  if (again.out_dtype != first.out_dtype) return "its output dtype changed";
  for (std::string d : {diff("out", first.out, again.out, c.n), diff("x_scale", first.x_scale, again.x_scale, 0),
                        diff("x_q", first.x_q, again.x_q, c.k), diff("w_q", first.w_q, again.w_q, c.k),
                        diff("acc", first.acc, again.acc, c.n)})
    if (!d.empty()) return d;
  return "";
}

}  // namespace w4a8::audit
