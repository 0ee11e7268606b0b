#include "cli/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/report.hpp"
#include "gemm/operands.hpp"

namespace w4a8::cli {

std::span<const Choice<upstream::Sglang>> sglang_choices() {
  static const auto table = [] {
    std::vector<Choice<upstream::Sglang>> t;
    for (const auto& p : upstream::kSglangProfiles) t.push_back({p.version, p.id});
    return t;
  }();
  return table;
}

std::span<const Choice<upstream::ComfyKitchen>> comfy_kitchen_choices() {
  static const auto table = [] {
    std::vector<Choice<upstream::ComfyKitchen>> t;
    for (const auto& p : upstream::kComfyKitchenProfiles) t.push_back({p.version, p.id});
    return t;
  }();
  return table;
}

std::span<const Choice<py::Version>> python_choices() {
  static const auto table = [] {
    std::vector<Choice<py::Version>> t;
    for (std::size_t i = 0; i < std::size_t(py::Version::kCount); ++i) {
      const auto v = static_cast<py::Version>(i);
      t.push_back({py::version_name(v), v});
    }
    return t;
  }();
  return table;
}

namespace {

// "0.2.37" -> {0, 2, 37}; nullopt unless dotted decimal integers.
std::optional<std::vector<unsigned long>> release_parts(std::string_view v) {
  std::vector<unsigned long> parts;
  std::size_t i = 0;
  while (true) {
    std::size_t j = i;
    unsigned long n = 0;
    while (j < v.size() && v[j] >= '0' && v[j] <= '9' && j - i < 9) n = n * 10 + unsigned(v[j++] - '0');
    if (j == i) return std::nullopt;
    parts.push_back(n);
    if (j == v.size()) return parts;
    if (v[j] != '.') return std::nullopt;
    i = j + 1;
  }
}

// The release after `v` in its last component ("0.2.35" -> "0.2.36").
std::string next_release(std::string_view v) {
  const auto dot = v.rfind('.');
  const auto parts = release_parts(v);
  return std::string(v.substr(0, dot + 1)) + std::to_string(parts->back() + 1);
}

}  // namespace

std::string ComfyKitchenRelease::label() const {
  const std::string_view p = upstream::profile(profile).version;
  return requested == p ? std::string(p) : requested + " (profile " + std::string(p) + ")";
}

std::vector<std::pair<std::string, std::string>> comfy_kitchen_release_ranges() {
  std::vector<std::pair<std::string, std::string>> out;
  std::string first(kOldestCheckedComfyKitchen);
  for (const auto& p : upstream::kComfyKitchenProfiles) {
    out.emplace_back(first, std::string(p.version));
    first = next_release(p.version);
  }
  return out;
}

std::string comfy_kitchen_profiles_text() {
  std::string s;
  for (const auto& [first, last] : comfy_kitchen_release_ranges())
    s.append(s.empty() ? "" : ", ").append(last).append(" (releases ").append(first).append("-").append(last).append(")");
  return s;
}

Result<ComfyKitchenRelease> parse_comfy_kitchen_release(std::string_view version) {
  if (const auto exact = upstream::find_comfy_kitchen(version)) return ComfyKitchenRelease{std::string(version), *exact};
  const auto want = release_parts(version);
  const auto oldest = release_parts(kOldestCheckedComfyKitchen);
  const auto newest = release_parts(upstream::profile(upstream::kLatestComfyKitchen).version);
  const auto mapped = gemm::comfy_kitchen_for_release(version);
  if (!want || !mapped || *want < *oldest || *want > *newest)
    return make_error(ErrorKind::UsageError, {"comfy-kitchen " + std::string(version) +
                                              " is not a release this build checked; profiles: " +
                                              comfy_kitchen_profiles_text()});
  // Named as the release is ("0.2.040" is 0.2.40: that profile itself, not a release it stands for).
  std::string canonical;
  for (const unsigned long part : *want) canonical += (canonical.empty() ? "" : ".") + std::to_string(part);
  if (const auto exact = upstream::find_comfy_kitchen(canonical)) return ComfyKitchenRelease{canonical, *exact};
  return ComfyKitchenRelease{canonical, *mapped};
}

CLI::Option* require_path(CLI::Option* option) {
  return option->check(
      [](const std::string& v) { return v.empty() ? std::string("an empty path names no file (an unset variable?)") : std::string(); });
}

CLI::Option* require_decimal(CLI::Option* option, std::int64_t lo, std::uint64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  // lo as a sign and a magnitude: |INT64_MIN| fits in 64 unsigned bits.
  const std::uint64_t lo_magnitude =
      lo < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(lo) : static_cast<std::uint64_t>(lo);
  option->transform(CLI::Validator(
      [lo, hi, lo_magnitude, range](std::string& text) -> std::string {
        const bool negative = text.starts_with('-');
        const char* const first = text.data() + (negative ? 1 : 0);
        const char* const last = text.data() + text.size();
        const bool digits = first != last && std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; });
        std::uint64_t magnitude = 0;
        const auto [end, ec] = std::from_chars(first, last, magnitude);  // out of 64 bits: an error, not saturated
        bool in_range = false;
        if (negative)
          in_range = lo < 0 && magnitude <= lo_magnitude;
        else
          in_range = (lo < 0 || magnitude >= lo_magnitude) && magnitude <= hi;
        if (!digits || ec != std::errc{} || end != last || !in_range)
          return "'" + text + "' is not a decimal integer in " + range;
        text = (negative && magnitude != 0 ? "-" : "") + std::to_string(magnitude);  // no leading zeros: not octal
        return {};
      },
      "", "decimal"));
  return option;
}

CLI::Option* add_comfy_kitchen_option(CLI::App& app, ComfyKitchenRelease& target, std::string help) {
  target.requested = std::string(upstream::profile(target.profile).version);
  CLI::Option* o = app.add_option_function<std::string>(
      "--comfy-kitchen",
      [&target](const std::string& v) {
        auto r = parse_comfy_kitchen_release(v);
        if (!r.ok()) throw CLI::ValidationError("--comfy-kitchen", r.error().message);
        target = *r;
      },
      std::move(help));
  o->type_name("RELEASE");
  o->default_str(target.requested);
  return o;
}

namespace detail {

CLI::Option* add_choice_option(CLI::App& app, const std::string& option, std::vector<std::string> names,
                               std::string_view current, std::string help, std::function<void(std::size_t)> set) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : "|") + n;
  CLI::Option* o = app.add_option_function<std::string>(
      option,
      [names = std::move(names), option, set = std::move(set)](const std::string& v) {
        const auto it = std::find(names.begin(), names.end(), v);
        if (it == names.end()) {
          std::string known;
          for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
          throw CLI::ValidationError(option, "unknown value '" + v + "'; known: " + known);
        }
        set(std::size_t(it - names.begin()));
      },
      std::move(help));
  o->type_name(list);
  o->default_str(std::string(current));
  return o;
}

}  // namespace detail

unsigned resolve_threads(unsigned requested, Reporter& report) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  if (requested == 0) return hw;
  if (requested > hw) {
    report.note("--threads " + std::to_string(requested) + " capped at " + std::to_string(hw) +
                " (the hardware threads of this machine)");
    return hw;
  }
  return requested;
}

namespace {

// The options' names, sorted (the sets are ordered by address), as "--a", "--a <last> --b",
// "--a, --b <last> --c".
std::string join_names(const std::set<CLI::Option*>& opts, const char* last) {
  std::vector<std::string> names;
  names.reserve(opts.size());
  for (const CLI::Option* o : opts) names.push_back(o->get_name());
  std::sort(names.begin(), names.end());
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last : ", ";
    out += names[i];
  }
  return out;
}

// CLI11's option line, its constraint lists left out of the name column (the description states them).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    std::string out;
    if (opt->get_type_size() != 0) {
      if (!opt->get_type_name().empty()) out += " " + get_label(opt->get_type_name());
      if (!opt->get_default_str().empty()) out += "=" + opt->get_default_str();
      if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
      else if (opt->get_expected_min() > 1) out += " x " + std::to_string(opt->get_expected());
      if (opt->get_required()) out += " " + get_label("REQUIRED");
    }
    if (!opt->get_envname().empty()) out += " (" + get_label("Env") + ":" + opt->get_envname() + ")";
    return out;
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    return opt->get_description() + constraint_note(*opt);
  }
};

}  // namespace

void use_help_format(CLI::App& app) { app.formatter(std::make_shared<HelpFormatter>()); }

std::string constraint_note(const CLI::Option& opt) {
  std::string note;
  if (!opt.get_excludes().empty()) note += "not with " + join_names(opt.get_excludes(), " or ");
  if (!opt.get_needs().empty()) note += (note.empty() ? "" : "; ") + std::string("needs ") + join_names(opt.get_needs(), " and ");
  return note.empty() ? note : " (" + note + ")";
}

}  // namespace w4a8::cli
