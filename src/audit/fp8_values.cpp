#include "audit/fp8_values.hpp"

#include <cmath>

#include "gemm/numerics.hpp"

namespace w4a8::audit {
namespace {

// An FNUZ float8 (AMD's): no infinities and no negative zero; 0x80 is the one NaN.
float fnuz_to_f32(std::uint8_t b, int mantissa_bits, int bias) {
  if (b == 0x80) return std::nanf("");
  const int e = (b & 0x7F) >> mantissa_bits, m = b & ((1 << mantissa_bits) - 1);
  const float v = e == 0 ? std::ldexp(float(m), 1 - bias - mantissa_bits)
                         : std::ldexp(float((1 << mantissa_bits) + m), e - bias - mantissa_bits);
  return (b & 0x80) != 0 ? -v : v;
}

}  // namespace

Fp8Decoder fp8_decoder(st::Dtype d) {
  switch (d) {
    case st::Dtype::F8_E4M3:
      return [](std::uint8_t b) { return gemm::fp8_e4m3fn_to_f32(b); };
    case st::Dtype::F8_E5M2:  // the top byte of an F16
      return [](std::uint8_t b) { return gemm::f16_to_f32(std::uint16_t(b << 8)); };
    case st::Dtype::F8_E8M0:  // 2^(b - 127); 0xFF is NaN
      return [](std::uint8_t b) { return b == 0xFF ? std::nanf("") : std::ldexp(1.0f, int(b) - 127); };
    case st::Dtype::F8_E4M3FNUZ:  // bias 8
      return [](std::uint8_t b) { return fnuz_to_f32(b, 3, 8); };
    case st::Dtype::F8_E5M2FNUZ:  // bias 16
      return [](std::uint8_t b) { return fnuz_to_f32(b, 2, 16); };
    default:
      return nullptr;
  }
}

bool fp8_signed(st::Dtype d) { return d != st::Dtype::F8_E8M0; }

}  // namespace w4a8::audit
