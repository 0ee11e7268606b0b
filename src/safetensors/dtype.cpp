#include "safetensors/dtype.hpp"

#include <array>

namespace w4a8::st {
namespace {

struct DtypeRow {
  Dtype dtype;
  std::string_view name;
  unsigned bits;
};

// In enum order (the crate's declaration order); checked by a static_assert below.
constexpr std::array<DtypeRow, static_cast<std::size_t>(Dtype::kCount)> kDtypes{{
    {Dtype::BOOL, "BOOL", 8},
    {Dtype::F4, "F4", 4},
    {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},
    {Dtype::U8, "U8", 8},
    {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},
    {Dtype::F8_E4M3, "F8_E4M3", 8},
    {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {Dtype::I16, "I16", 16},
    {Dtype::U16, "U16", 16},
    {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},
    {Dtype::I32, "I32", 32},
    {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},
    {Dtype::C64, "C64", 64},
    {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},
    {Dtype::U64, "U64", 64},
}};

constexpr bool table_in_order() {
  for (std::size_t i = 0; i < kDtypes.size(); ++i)
    if (static_cast<std::size_t>(kDtypes[i].dtype) != i) return false;
  return true;
}
static_assert(table_in_order(), "kDtypes must follow the Dtype enum order");

}  // namespace

std::string_view dtype_name(Dtype d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypes.size() ? kDtypes[i].name : std::string_view{};
}

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const auto& row : kDtypes)
    if (row.name == name) return row.dtype;
  return std::nullopt;
}

unsigned dtype_bits(Dtype d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypes.size() ? kDtypes[i].bits : 0;
}

}  // namespace w4a8::st
