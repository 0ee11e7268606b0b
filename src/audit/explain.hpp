// The audit's verdict on one case: the implementation's output and intermediates against the
// reference, stage by stage. Under the `explained` policy every stage is recomputed from the
// implementation's OWN previous intermediates, so a difference is attributed to the stage where it
// first appears, and a difference that a different (legal) evaluation order can produce is told
// apart from a wrong result:
//   decode      w_q exactly;
//   quantize    x_scale within the rotation's rounding bound; x_q equal, or +-1 where the exact
//               rotated quotient lies within that bound of a .5 tie (anything else is wrong); a
//               row that rotates exactly in every order (rotation_is_exact) has no bound: its
//               scale and x_q are the values its data allow;
//   accumulate  acc exactly equal to sum_k x_q * w_q of its own x_q and w_q (int32 wrap);
//   epilogue    out within N ulps (of the output dtype, before and after the bias, and of the
//               bias itself) of the reference epilogue applied to its own acc and x_scale;
//   output      (no intermediates, or the correction path) out within an elementwise bound
//               built from the same rules: the tie candidates of each row for the integer path,
//               the summation-order bound of a float GEMM for the correction path.
// Other policies compare each given tensor with the reference's (exact, ulp:N, rel:X).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "audit/case_spec.hpp"
#include "audit/implementation.hpp"
#include "audit/suite.hpp"
#include "audit/tensor_compare.hpp"
#include "gemm/reference.hpp"

namespace w4a8::audit {

enum class Verdict : std::uint8_t { Exact, Order, Fail, Absent };
std::string_view verdict_name(Verdict v);  // "exact", "order", "fail", "n/a"

enum class Stage : std::uint8_t { Decode, Quantize, Accumulate, Epilogue, Output };
inline constexpr int kStages = 5;
std::string_view stage_name(Stage s);  // "decode", "quantize", "accumulate", "epilogue", "output"

struct StageResult {
  Verdict verdict = Verdict::Absent;
  std::string detail;           // one line: what was compared, what differed
  std::uint64_t differing = 0;  // elements that differ from the reference (or the recomputation)
  std::uint64_t explained = 0;  // of those, explained by evaluation order
};

struct CaseVerdict {
  Verdict overall = Verdict::Exact;
  std::array<StageResult, kStages> stages;
  std::string first_fail;            // stage name of the first failing stage ("" when none)
  TensorStats out_vs_ref;            // output against the reference (heatmap, histogram)
  std::vector<TensorStats> tensors;  // every compared tensor against the reference
};

// pre: act.status == Ok; ref computed for the same case, out dtype and policy.
CaseVerdict judge(const CaseSpec& c, const CaseData& d, const gemm::GemmResult& ref, const ImplOutput& act,
                  gemm::ActPolicy policy, const Policy& p);

// The verdict on a result that breaks the output contract (a kernel plugin that left an output
// element unwritten, wrote past a buffer or into an input): wrong at the output stage, `why` its
// detail, with nothing compared.
CaseVerdict contract_broken(std::string why);

// Rotation of one row computed in double (near-exact), for the tie analysis. pre: k % r == 0.
std::vector<double> rotate_row_f64(const float* x, std::int64_t k, std::int64_t r);

// Whether every evaluation order of one block's rotation in float32 (any association of the sum
// over j of +-x_j / sqrt(R), R = 4^k, the 2^-k applied anywhere) gives the exact value: all x_j are
// multiples of 2^a and sum |x_j| <= 2^(a + 24), so every partial sum is a float32, and no bit falls
// below 2^-149. Such a block's x_q are then determined by the divisor, not bounded (explain.cpp).
bool rotation_is_exact(const float* x, std::int64_t r);

}  // namespace w4a8::audit
