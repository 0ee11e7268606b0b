#include "safetensors/dtype.hpp"

#include <array>
#include <bit>
#include <cstring>

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

// dtype_from_name: a name of up to 16 bytes packed into two little-endian words, hashed into 64
// slots; the multiplier was searched for no collisions among the names (checked below).
struct Packed {
  std::uint64_t lo = 0, hi = 0;
};
constexpr Packed pack(std::string_view name) {
  Packed k;
  for (std::size_t i = 0; i < name.size() && i < 16; ++i)
    (i < 8 ? k.lo : k.hi) |= std::uint64_t(static_cast<unsigned char>(name[i])) << (8 * (i % 8));
  return k;
}
constexpr unsigned slot(Packed k) { return static_cast<unsigned>(((k.lo + k.hi) * 0x9b810e766ec9d287ull) >> 58); }
constexpr std::uint8_t kNoRow = 0xFF;

constexpr std::array<std::uint8_t, 64> make_slots() {
  std::array<std::uint8_t, 64> t{};
  for (auto& x : t) x = kNoRow;
  for (std::size_t i = 0; i < kDtypes.size(); ++i) {
    const unsigned s = slot(pack(kDtypes[i].name));
    if (t[s] != kNoRow) throw "dtype name hash collision";  // not a constant expression: fails the build
    t[s] = static_cast<std::uint8_t>(i);
  }
  return t;
}
constexpr std::array<std::uint8_t, 64> kSlots = make_slots();
constexpr std::size_t kLongestName = [] {
  std::size_t n = 0;
  for (const auto& row : kDtypes) n = row.name.size() > n ? row.name.size() : n;
  return n;
}();
static_assert(kLongestName <= 16);
constexpr std::array<Packed, kDtypes.size()> kPacked = [] {
  std::array<Packed, kDtypes.size()> t{};
  for (std::size_t i = 0; i < kDtypes.size(); ++i) t[i] = pack(kDtypes[i].name);
  return t;
}();

}  // namespace

std::string_view dtype_name(Dtype d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypes.size() ? kDtypes[i].name : std::string_view{};
}

// Bytes [0, n) of p, n <= 8, as a little-endian word (two overlapping loads, no byte loop).
static std::uint64_t load_le(const char* p, std::size_t n) {
  if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    if constexpr (std::endian::native != std::endian::little) a = __builtin_bswap32(a), b = __builtin_bswap32(b);
    return a | std::uint64_t(b) << (8 * (n - 4));
  }
  if (n == 0) return 0;
  const auto byte = [&](std::size_t i) { return std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i); };
  return byte(0) | byte(n / 2) | byte(n - 1);
}

std::optional<Dtype> dtype_from_name(std::string_view name) {
  const std::size_t n = name.size();
  if (n == 0 || n > kLongestName) return std::nullopt;
  const Packed k{load_le(name.data(), n < 8 ? n : 8), n > 8 ? load_le(name.data() + 8, n - 8) : 0};
  const std::uint8_t row = kSlots[slot(k)];
  // Same packed bytes and length: the same name (a NUL byte packs as the padding would, so the
  // length must match too).
  if (row == kNoRow || kPacked[row].lo != k.lo || kPacked[row].hi != k.hi || kDtypes[row].name.size() != n)
    return std::nullopt;
  return kDtypes[row].dtype;
}

unsigned dtype_bits(Dtype d) {
  const auto i = static_cast<std::size_t>(d);
  return i < kDtypes.size() ? kDtypes[i].bits : 0;
}

}  // namespace w4a8::st
