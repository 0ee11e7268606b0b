// Options as data: each enum option is one table of (name, value), used to parse (once, straight to
// the enum: commands never compare strings), to print --help's choices and to name a value back in
// output. Also the shared --threads policy.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/upstream.hpp"
#include "gemm/numerics.hpp"

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

// Prepared for options the lead wires once src/gemm has them (QuantizeOptions::bits and
// ::scale_dtype, GemmOptions::comfy_kitchen): quantize --bits 4|6, --scale-dtype fp8|f32, and
// gemm/validate --comfy-kitchen VERSION (every row of core/comfy_kitchen_versions.def).
enum class ScaleDtypeChoice : std::uint8_t { Fp8, F32 };
inline constexpr Choice<int> kBits[] = {{"4", 4}, {"6", 6}};
inline constexpr Choice<ScaleDtypeChoice> kScaleDtypes[] = {{"fp8", ScaleDtypeChoice::Fp8}, {"f32", ScaleDtypeChoice::F32}};
std::span<const Choice<upstream::ComfyKitchen>> comfy_kitchen_choices();

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

template <class E>
CLI::Option* add_enum_option(CLI::App& app, const std::string& option, E& target, std::span<const Choice<E>> table,
                             const std::string& help) {
  std::vector<std::string> names;
  for (const auto& c : table) names.emplace_back(c.name);
  return detail::add_choice_option(app, option, std::move(names), choice_name(table, target), help,
                                   [&target, table](std::size_t i) { target = table[i].value; });
}

// --threads N: 0 means every hardware thread; more than the hardware has is capped there, with a
// note on stderr (thousands of threads only cost memory and can hit the process limit).
unsigned resolve_threads(unsigned requested, Reporter& report);

}  // namespace w4a8::cli
