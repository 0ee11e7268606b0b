// The error kinds of the whole project, generated from error_kinds.def (the single source of every
// message template).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace w4a8 {

enum class ErrorKind : std::uint16_t {
#define W4A8_ERROR(name, code, exit, type, tmpl) name,
#include "core/error_kinds.def"
#undef W4A8_ERROR
  kCount
};

// What an error means for a command's exit status: the input was refused (1), or the command could
// not do its job (usage, I/O, environment: 2).
enum class ExitClass : std::uint8_t { Reject = 1, Usage = 2 };

struct ErrorInfo {
  ErrorKind kind;
  std::string_view code;      // stable machine-readable code, e.g. "sglang.w4a8.rank"
  ExitClass exit;
  std::string_view py_type;   // the Python exception type upstream raises ("ValueError", ...)
  std::string_view tmpl;      // message template with "{}" holes
};

inline constexpr ErrorInfo kErrorTable[] = {
#define W4A8_ERROR(name, code, exit, type, tmpl) {ErrorKind::name, code, ExitClass::exit, type, tmpl},
#include "core/error_kinds.def"
#undef W4A8_ERROR
};
inline constexpr std::size_t kErrorKindCount = static_cast<std::size_t>(ErrorKind::kCount);
static_assert(sizeof(kErrorTable) / sizeof(kErrorTable[0]) == kErrorKindCount);

constexpr const ErrorInfo& error_info(ErrorKind k) { return kErrorTable[static_cast<std::size_t>(k)]; }

// Number of "{}" holes in a template.
constexpr std::size_t template_holes(std::string_view t) {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < t.size(); ++i)
    if (t[i] == '{' && t[i + 1] == '}') ++n, ++i;
  return n;
}

// Whose rule a refusal applies, told by its code's family: a release's own error, which the verdict
// predicts (sglang, safetensors, Python, torch, comfy-kitchen); --strict's (the kernels' contract,
// "strict."); or another check of ours ("validate.": --min-layers). Reports say which.
enum class RuleOwner : std::uint8_t { Upstream, Strict, Ours };
constexpr RuleOwner rule_owner(std::string_view code) {
  if (code.starts_with("strict.")) return RuleOwner::Strict;
  if (code.starts_with("validate.")) return RuleOwner::Ours;
  return RuleOwner::Upstream;
}

// Looks a kind up by its stable code; returns false when unknown.
bool error_kind_from_code(std::string_view code, ErrorKind& out);

}  // namespace w4a8
