// Options as data: each enum option is one table of (name, value), used to parse (once, straight to
// the enum: commands never compare strings), to print --help's choices and to name a value back in
// output. Also the shared --threads policy and --help's option lines.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"
#include "gemm/numerics.hpp"
#include "py/version.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace w4a8::cli {

class Reporter;

template <class E>
struct Choice {
  std::string_view name;
  E value;
};

enum class ImplChoice : std::uint8_t { Literal, Fast, Emulate, Cuda };
enum class MarkerChoice : std::uint8_t { Tensor, Metadata, Both };

inline constexpr Choice<gemm::FloatDtype> kOutDtypes[] = {
    {"f32", gemm::FloatDtype::F32}, {"bf16", gemm::FloatDtype::BF16}, {"f16", gemm::FloatDtype::F16}};
inline constexpr Choice<gemm::ActPolicy> kPolicies[] = {{"f32", gemm::ActPolicy::F32}, {"eager", gemm::ActPolicy::Eager}};
inline constexpr Choice<ImplChoice> kImpls[] = {
    {"literal", ImplChoice::Literal}, {"fast", ImplChoice::Fast}, {"emulate", ImplChoice::Emulate}, {"cuda", ImplChoice::Cuda}};
inline constexpr Choice<MarkerChoice> kMarkers[] = {
    {"tensor", MarkerChoice::Tensor}, {"metadata", MarkerChoice::Metadata}, {"both", MarkerChoice::Both}};
// --sglang: every row of core/sglang_versions.def.
std::span<const Choice<upstream::Sglang>> sglang_choices();

// --python: every Python whose Unicode data py:: carries (3.10 .. 3.14).
std::span<const Choice<py::Version>> python_choices();

// quantize --bits 4|6, --scale-dtype fp8|f32 (gemm::QuantizeOptions::bits, ::scale_dtype).
inline constexpr Choice<int> kBits[] = {{"4", 4}, {"6", 6}};
inline constexpr Choice<gemm::ScaleDtype> kScaleDtypes[] = {{"fp8", gemm::ScaleDtype::Fp8E4M3}, {"f32", gemm::ScaleDtype::F32}};
// The profiles of core/comfy_kitchen_versions.def, by version.
std::span<const Choice<upstream::ComfyKitchen>> comfy_kitchen_choices();

// The oldest comfy-kitchen release whose W4A8 code was checked against its wheel (docs/upstream.md);
// --comfy-kitchen accepts releases from it to the newest profile.
inline constexpr std::string_view kOldestCheckedComfyKitchen = "0.2.30";

// A --comfy-kitchen value: the release asked for and the profile that stands for it.
struct ComfyKitchenRelease {
  std::string requested;  // as given ("0.2.37"); the newest profile's version by default
  upstream::ComfyKitchen profile = upstream::kLatestComfyKitchen;
  // "0.2.40", or "0.2.37 (profile 0.2.40)" when the release is not itself a profile.
  std::string label() const;
};
// A profile's version, or a checked release between kOldestCheckedComfyKitchen and the newest
// profile (gemm::comfy_kitchen_for_release maps it). @return the release, or UsageError listing the
// profiles and the releases each stands for.
Result<ComfyKitchenRelease> parse_comfy_kitchen_release(std::string_view version);
// The releases each comfy-kitchen profile stands for, in profile order: {first, last} ({"0.2.30",
// "0.2.35"}, {"0.2.36", "0.2.40"}); the last is the profile's own version.
std::vector<std::pair<std::string, std::string>> comfy_kitchen_release_ranges();
// "0.2.35 (releases 0.2.30-0.2.35), 0.2.40 (releases 0.2.36-0.2.40)"
std::string comfy_kitchen_profiles_text();

template <class E>
std::string_view choice_name(std::span<const Choice<E>> table, E v) {
  for (const auto& c : table)
    if (c.value == v) return c.name;
  return "?";
}

// "a, b, c"
template <class E>
std::string choice_list(std::span<const Choice<E>> table) {
  std::string s;
  for (const auto& c : table) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

namespace detail {
// Registers OPTION taking one of `names`; `set(i)` receives the index of the one given. An unknown
// value is a usage error listing the known names.
CLI::Option* add_choice_option(CLI::App& app, const std::string& option, std::vector<std::string> names,
                               std::string_view current, std::string help, std::function<void(std::size_t)> set);
}  // namespace detail

// Registers --comfy-kitchen RELEASE (parse_comfy_kitchen_release; an unknown one is a usage error).
CLI::Option* add_comfy_kitchen_option(CLI::App& app, ComfyKitchenRelease& target, std::string help);

template <class E>
CLI::Option* add_enum_option(CLI::App& app, const std::string& option, E& target, std::span<const Choice<E>> table,
                             const std::string& help) {
  std::vector<std::string> names;
  for (const auto& c : table) names.emplace_back(c.name);
  return detail::add_choice_option(app, option, std::move(names), choice_name(table, target), help,
                                   [&target, table](std::size_t i) { target = table[i].value; });
}

// The refusal of --threads beside an implementation that takes no thread count (gemm, audit check).
inline constexpr std::string_view kThreadsFastOnly =
    "--threads applies to --impl fast only (the other implementations take no thread count)";

// A string option taking one of `names`, kept as the name (an unknown value: the same usage error as
// add_enum_option's).
inline CLI::Option* add_name_option(CLI::App& app, const std::string& option, std::string& target,
                                    std::vector<std::string> names, const std::string& help) {
  std::vector<std::string> kept = names;
  return detail::add_choice_option(app, option, std::move(names), target, help,
                                   [&target, kept = std::move(kept)](std::size_t i) { target = kept[i]; });
}

// CLI11 reads integers with strtoll's base 0 ("010" is 8, "0x10" is 16) and silently saturates 64-bit
// ones ("99999999999999999999" becomes INT64_MAX): an integer option checks its text first, plain
// decimal digits (a '-' only where lo < 0) within [lo, hi], else a usage error saying so; leading
// zeros are dropped before CLI11 converts it.
CLI::Option* require_decimal(CLI::Option* option, std::int64_t lo, std::uint64_t hi);
// A path option (each of its values): an empty one is a usage error naming the option ("cannot write
// : ..." otherwise; usually an unset shell variable).
CLI::Option* require_path(CLI::Option* option);
// The same over T's whole range (the type the option converts to).
template <class T>
CLI::Option* require_decimal(CLI::Option* option) {
  return require_decimal(option, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
}

// --threads N: 0 means every hardware thread; more than the hardware has is capped there, with a
// note on stderr (thousands of threads only cost memory and can hit the process limit).
unsigned resolve_threads(unsigned requested, Reporter& report);

// --help's option lines for `app` and the subcommands added to it afterwards (they copy it). CLI11
// lists an option's constraints ("Excludes: --quiet", "Needs: --key") in the name column, where a
// short list runs straight into the description ("--summary Excludes: --quiet print layer counts")
// and a long one pushes it to the next line: here the name column keeps the name, type and default,
// and the constraints end the description in words (constraint_note).
void use_help_format(CLI::App& app);
// `opt`'s constraints as they end its description, names sorted: " (not with --a or --b; needs
// --c)", or empty when it has none.
std::string constraint_note(const CLI::Option& opt);

}  // namespace w4a8::cli
