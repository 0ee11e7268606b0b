// safetensors dtypes as the reference crate names them, with their bit sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace w4a8::st {

enum class Dtype : std::uint8_t {
  BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ,
  I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64,
  kCount
};

std::string_view dtype_name(Dtype d);                   // "F8_E4M3"
std::optional<Dtype> dtype_from_name(std::string_view);  // exact, case-sensitive
unsigned dtype_bits(Dtype d);                           // 4, 6, 8, 16, 32, 64

}  // namespace w4a8::st
