// ConvRot of a row with SIMD: the same butterfly (numerics.hpp) with the stages of stride >= 8
// evaluated 8 lanes at a time. Lane-wise IEEE add/sub/mul in the same order: bit-identical to
// convrot_row. pre: the CPU has AVX2 (callers dispatch on best_isa()).
#pragma once

#include <cstdint>

namespace w4a8::gemm {

void convrot_row_avx2(float* x, std::int64_t k, std::int64_t r);

}  // namespace w4a8::gemm
