// Upstream versions as data: the released sglang and comfy-kitchen versions whose behaviour this
// project predicts (tables in sglang_versions.def and comfy_kitchen_versions.def). Every verdict
// names the version it predicts; code branches on a profile's properties, never on a version string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace w4a8::upstream {

// How sglang records a marker for a prefix that already has one.
enum class MarkerMerge : std::uint8_t {
  WholeMarker,  // previous != marker -> conflict; else the new dict replaces the old one
  PerKey,       // a shared key with a different value -> conflict; else dict.update
};

enum class Sglang : std::uint8_t {
#define W4A8_SGLANG(name, version, merge, note) name,
#include "core/sglang_versions.def"
#undef W4A8_SGLANG
  kCount
};

struct SglangProfile {
  Sglang id;
  std::string_view version;
  MarkerMerge merge;
  std::string_view note;  // what differs from the previous profile
};

inline constexpr SglangProfile kSglangProfiles[] = {
#define W4A8_SGLANG(name, version, merge, note) {Sglang::name, version, MarkerMerge::merge, note},
#include "core/sglang_versions.def"
#undef W4A8_SGLANG
};
inline constexpr std::size_t kSglangCount = static_cast<std::size_t>(Sglang::kCount);
static_assert(sizeof(kSglangProfiles) / sizeof(kSglangProfiles[0]) == kSglangCount);
inline constexpr Sglang kLatestSglang = static_cast<Sglang>(kSglangCount - 1);

constexpr const SglangProfile& profile(Sglang v) { return kSglangProfiles[static_cast<std::size_t>(v)]; }

// How comfy-kitchen's validate_w4a8_operands reads a packed W4A8 weight.
enum class CkOperands : std::uint8_t {
  PackedK,     // K = 2 * weight.shape[1] (4-bit only); one combined K/G/R contract message
  ScaleGridK,  // K = s_rel.shape[1] * G; 4 or 6 bits from the row width; separate checks and messages
};

enum class ComfyKitchen : std::uint8_t {
#define W4A8_COMFY_KITCHEN(name, version, operands, note) name,
#include "core/comfy_kitchen_versions.def"
#undef W4A8_COMFY_KITCHEN
  kCount
};

struct ComfyKitchenProfile {
  ComfyKitchen id;
  std::string_view version;
  CkOperands operands;
  std::string_view note;
};

inline constexpr ComfyKitchenProfile kComfyKitchenProfiles[] = {
#define W4A8_COMFY_KITCHEN(name, version, operands, note) {ComfyKitchen::name, version, CkOperands::operands, note},
#include "core/comfy_kitchen_versions.def"
#undef W4A8_COMFY_KITCHEN
};
inline constexpr std::size_t kComfyKitchenCount = static_cast<std::size_t>(ComfyKitchen::kCount);
static_assert(sizeof(kComfyKitchenProfiles) / sizeof(kComfyKitchenProfiles[0]) == kComfyKitchenCount);
inline constexpr ComfyKitchen kLatestComfyKitchen = static_cast<ComfyKitchen>(kComfyKitchenCount - 1);

constexpr const ComfyKitchenProfile& profile(ComfyKitchen v) {
  return kComfyKitchenProfiles[static_cast<std::size_t>(v)];
}

// Exact version string -> profile; nullopt when unknown (callers list the known ones).
constexpr std::optional<Sglang> find_sglang(std::string_view version) {
  for (const auto& p : kSglangProfiles)
    if (p.version == version) return p.id;
  return std::nullopt;
}
constexpr std::optional<ComfyKitchen> find_comfy_kitchen(std::string_view version) {
  for (const auto& p : kComfyKitchenProfiles)
    if (p.version == version) return p.id;
  return std::nullopt;
}

}  // namespace w4a8::upstream
