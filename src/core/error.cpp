#include <cstdlib>
#include <cstdio>

#include "core/result.hpp"

namespace w4a8 {

Error make_error(ErrorKind kind, std::initializer_list<std::string_view> args) {
  const std::string_view t = error_info(kind).tmpl;
  if (template_holes(t) != args.size()) {
    // Internal invariant: a call site disagrees with the table. Abort loudly (tests catch it).
    std::fprintf(stderr, "make_error(%.*s): %zu args for %zu holes\n", int(error_info(kind).code.size()),
                 error_info(kind).code.data(), args.size(), template_holes(t));
    std::abort();
  }
  std::string out;
  out.reserve(t.size() + 32);
  auto arg = args.begin();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '{' && i + 1 < t.size() && t[i + 1] == '}') {
      out.append(*arg++);
      ++i;
    } else {
      out.push_back(t[i]);
    }
  }
  return Error{kind, std::move(out)};
}

bool error_kind_from_code(std::string_view code, ErrorKind& out) {
  for (const auto& e : kErrorTable)
    if (e.code == code) { out = e.kind; return true; }
  return false;
}

}  // namespace w4a8
