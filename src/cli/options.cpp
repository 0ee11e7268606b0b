#include "cli/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <thread>

#include "cli/report.hpp"

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

}  // namespace w4a8::cli
