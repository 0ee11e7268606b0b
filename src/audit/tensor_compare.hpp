// Tensor-by-tensor comparison: integers exactly; floats by ulp distance in their own dtype, max
// abs error, relative L2, first mismatching indices, an ulp histogram and a tile map of the worst ulp
// over a 2-D tensor's (row, column) tiles. Named policies: exact, ulp:N, rel:X, explained[:N].
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "gemm/numerics.hpp"
#include "json/value.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::audit {

struct Policy {
  enum class Kind : std::uint8_t { Exact, Ulp, Rel, Explained } kind = Kind::Explained;
  double param = 1;  // Ulp: N; Rel: X; Explained: epilogue ulps allowed for a different order
};
// "exact", "ulp:N", "rel:X", "explained" (= explained:1), "explained:N".
// @return Policy, or AuditPolicy.
Result<Policy> parse_policy(std::string_view s);
std::string policy_name(const Policy& p);

// A tensor held for comparison: floats as float (values exact in fdtype), integers as int64.
// 8-bit floats keep their codes too: an ulp there is one step between codes. Dtypes with no measure
// here (F64, C64, F4, F6_*) are compared byte for byte (i holds the bytes).
struct TensorData {
  std::string name;
  bool is_float = true;
  gemm::FloatDtype fdtype = gemm::FloatDtype::F32;  // floats: the grid ulps are measured on
  std::string dtype;                                // as stored: "F32", "BF16", "I8", ...
  std::vector<std::uint64_t> shape;
  std::vector<float> f;
  std::vector<std::int64_t> i;
  std::vector<std::uint8_t> codes;  // 8-bit floats: the stored codes (f holds their values)
  bool signed_codes = true;         // 8-bit floats: the codes have a sign bit (not F8_E8M0)
  bool unsigned64 = false;          // U64: i holds the bits (ordered as unsigned)
  bool bytewise = false;            // compared byte for byte
  std::uint64_t size() const { return is_float ? f.size() : i.size(); }
};
TensorData float_tensor_data(std::string name, gemm::FloatDtype d, std::vector<std::uint64_t> shape,
                             std::vector<float> v);
template <class T>
TensorData int_tensor_data(std::string name, std::string dtype, std::vector<std::uint64_t> shape,
                           const std::vector<T>& v) {
  TensorData t;
  t.name = std::move(name), t.is_float = false, t.dtype = std::move(dtype), t.shape = std::move(shape);
  t.i.assign(v.begin(), v.end());
  return t;
}
// Every tensor of a file: F32/BF16/F16 and the 8-bit floats as floats; BOOL, U8-U64 and I8-I64 as
// integers; F64, C64, F4 and F6_* byte for byte. @return tensors, or read_floats' error.
Result<std::vector<TensorData>> read_tensors(const st::File& f);

// Ulp distance of a and b on dtype d's grid (0 for equal values, +0 vs -0 and NaN vs NaN);
// kNanUlp when exactly one is NaN. An infinity is one step past the largest finite value here (a
// distance, not a verdict): passes() fails every infinity mismatch whatever the ulp budget.
inline constexpr std::uint64_t kNanUlp = ~std::uint64_t(0);
std::uint64_t ulp_distance(float a, float b, gemm::FloatDtype d);
// One unit in the last place of dtype d at magnitude |v| (the gap above |v|).
double ulp_of(double v, gemm::FloatDtype d);

// Histogram buckets of ulp distances: 0, 1, 2, 3-4, 5-8, 9-16, 17-64, 65-256, 257-4096, >4096/NaN.
inline constexpr int kUlpBuckets = 10;
inline constexpr const char* kUlpBucketNames[kUlpBuckets] = {"0",    "1",     "2",      "3-4",      "5-8",
                                                             "9-16", "17-64", "65-256", "257-4096", ">4096"};
int ulp_bucket(std::uint64_t ulp);

struct Mismatch {
  std::vector<std::uint64_t> index;
  double expected = 0, actual = 0;
  std::uint64_t ulp = 0;
};

struct TensorStats {
  std::string name, dtype;
  std::vector<std::uint64_t> shape;
  bool is_float = true;
  bool bytewise = false;    // count, mismatches and indices are bytes (TensorData::bytewise)
  bool present = true;      // false: missing from the actual side
  std::string shape_error;  // non-empty when the sizes differ (nothing else is measured)
  std::uint64_t count = 0, mismatches = 0, nan_mismatches = 0;
  // Floats: an infinity against a finite value or the opposite infinity (never within any tolerance).
  std::uint64_t inf_mismatches = 0;
  std::uint64_t max_ulp = 0;  // floats (kNanUlp when a NaN differs)
  double max_abs = 0, rel_l2 = 0;
  std::vector<Mismatch> first;  // up to kFirstMismatches, in index order
  std::array<std::uint64_t, kUlpBuckets> hist{};
  // 2-D tensors: worst ulp (floats) or |difference| (integers) per tile; tiles_m x tiles_n, row-major.
  std::uint64_t tile_m = 0, tile_n = 0, tiles_m = 0, tiles_n = 0;
  std::vector<std::uint64_t> tiles;
};
inline constexpr std::size_t kFirstMismatches = 5;
inline constexpr std::uint64_t kMaxTilesPerSide = 32;

// Compares actual against expected element by element (same element count required).
TensorStats compare_tensors(const TensorData& expected, const TensorData& actual);

// Whether stats pass a non-explained policy (integers always exact; a NaN or infinity mismatch fails
// every policy), and why not.
bool passes(const TensorStats& s, const Policy& p, std::string* why = nullptr);

json::Value stats_to_json(const TensorStats& s);
std::string index_text(const std::vector<std::uint64_t>& idx);  // "[3, 17]"

}  // namespace w4a8::audit
