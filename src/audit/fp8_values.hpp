// The exact values of the 8-bit float formats safetensors names (F8_E4M3, F8_E5M2, F8_E8M0 and AMD's
// FNUZ pair), for the tools that read them where numpy cannot (`audit to-f32`, `compare`). Every
// such value is a float32 value.
#pragma once

#include <cstdint>

#include "safetensors/dtype.hpp"

namespace w4a8::audit {

// The decoder of an 8-bit float dtype, or nullptr for any other dtype.
using Fp8Decoder = float (*)(std::uint8_t);
Fp8Decoder fp8_decoder(st::Dtype d);

// Whether the codes of 8-bit float dtype d carry a sign bit (0x80): all but F8_E8M0, whose codes are
// exponents only. With it, values are ordered as sign and magnitude; without, as the code.
bool fp8_signed(st::Dtype d);

}  // namespace w4a8::audit
