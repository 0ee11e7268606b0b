// Comparison of the reference GEMM with comfy-kitchen's eager backend on the files
// tools/upstream/ck_oracle.py writes (layout in its docstring): one layer per case file with the
// upstream w_q, x_q, x_scale, acc / w_dequant and output of several activation runs, and one file of
// malformed operand sets with upstream's first exception. Shared by the golden replay test, the live
// oracle test and the w4a8_ck_compare tool.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"

namespace w4a8::gemm::ck {

// Tolerances of the contract with upstream (docs/gemm.md "comfy-kitchen oracle").
inline constexpr double kMinXqEqualFraction = 0.999;
inline constexpr double kMaxRelL2F32 = 1e-5;
inline constexpr double kMaxRelL2Bf16 = 2e-2;
// An x_q difference is explained when the exact rotated value lies this close (in units of the
// quantity rounded) to a rounding boundary: of x_rot / scale, or of the bf16 rounding of x_rot.
inline constexpr double kTieWindow = 0.01;

struct DtypeStats {
  std::uint64_t runs = 0, upstream_failures = 0;
  std::uint64_t x_q_elems = 0, x_q_equal = 0, x_q_off_by_one = 0, x_q_beyond_one = 0, x_q_unexplained = 0;
  std::uint64_t scale_rows = 0, scale_equal = 0;
  std::uint64_t acc_rows = 0, acc_equal = 0;        // rows whose x_q matched: acc must too
  std::uint64_t exact_rows = 0, exact_rows_equal = 0;  // rows with equal x_q and scale: out bit-exact
  // Every integer-path row: our epilogue on upstream's acc and x_scale gives upstream's out exactly.
  std::uint64_t epilogue_rows = 0, epilogue_rows_equal = 0;
  // Rows whose x_q differ at ties: acc_ours - acc_upstream == sum over j of dx_q[j] * w_q[n, j].
  std::uint64_t tie_rows = 0, tie_rows_explained = 0;
  // Output relative L2, max over runs: integer path without x_q tie flips (bounded by the
  // tolerance), integer path with flips (explained exactly above, reported), correction path.
  double rel_l2_int_max = 0, rel_l2_tie_max = 0, rel_l2_corr_max = 0, w_dequant_rel_l2_max = 0;
  std::uint64_t tie_runs = 0;
  std::string worst_int, worst_corr;                 // where the maxima occur
  std::uint64_t int_runs = 0, corr_runs = 0;
  // Runs marked exact (hand-built so that torch's summation order cannot matter): out and w_dequant
  // must equal upstream's bit for bit.
  std::uint64_t exact_runs = 0, exact_elems = 0, exact_equal = 0;
  // Outputs upstream computes finite and ours not (e.g. an overflowing rotation): always a failure.
  std::uint64_t nonfinite_ours = 0;
};

struct Stats {
  std::string upstream_version;                  // from the files' metadata
  std::uint64_t layers = 0, w_q_exact_layers = 0, w_q_elems = 0, w_q_equal = 0;
  std::array<DtypeStats, 3> dt;                  // [0] F32 activations, [1] BF16, [2] F16
  std::uint64_t op_sets = 0, op_agree = 0, op_ours_only = 0, op_torch_later = 0, op_ours_accepts = 0,
                op_mismatch = 0;
  std::uint64_t op_multi = 0, op_multi_agree = 0;  // sets with 2 or more defects at once
  std::uint64_t implementations_disagree = 0;    // literal / fast / prepared not bit-identical
  std::vector<std::string> upstream_failures;    // "file run r: RuntimeError: ..."
  std::vector<std::string> problems;             // every mismatch, one line each
};

// Options of a comparison.
struct CompareOptions {
  upstream::ComfyKitchen profile = upstream::kLatestComfyKitchen;
  bool all_impls = false;   // also run literal and prepared and require bit-identity with fast
  unsigned threads = 1;
};

// comfy_kitchen_for_release (gemm/operands.hpp), the newest profile for malformed versions.
upstream::ComfyKitchen profile_for_version(const std::string& version);

// Adds one case file / operand-set file to s. @return Ok, or an I/O or format error (UsageError).
Status compare_case_file(const std::string& path, const CompareOptions& opt, Stats& s);
Status compare_operand_file(const std::string& path, const CompareOptions& opt, Stats& s);
// Every case_*.safetensors and operand_errors.safetensors of a directory, in name order.
Status compare_dir(const std::string& dir, const CompareOptions& opt, Stats& s);

// Human-readable table of the numbers.
std::string format_stats(const Stats& s, const CompareOptions& opt);
// Empty when every tolerance holds; else one reason a line.
std::vector<std::string> tolerance_failures(const Stats& s);

}  // namespace w4a8::gemm::ck
