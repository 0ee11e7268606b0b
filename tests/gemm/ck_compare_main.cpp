// w4a8_ck_compare [--profile V] [--upstream-version V] [--all-impls] [--threads N] DIR
// Compares the reference GEMM with the comfy-kitchen oracle files in DIR (ck_oracle.py gen) and
// prints the table; exit 0 when every tolerance holds, 1 when one does not, 2 on usage/I/O errors.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ck_case.hpp"

int main(int argc, char** argv) {
  using namespace w4a8;
  gemm::ck::CompareOptions opt;
  std::string dir, upstream_version;
  bool profile_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--profile") {
      const std::string v = next();
      const auto p = upstream::find_comfy_kitchen(v);
      if (!p) {
        std::fprintf(stderr, "unknown comfy-kitchen profile %s; known:", v.c_str());
        for (const auto& q : upstream::kComfyKitchenProfiles) std::fprintf(stderr, " %s", std::string(q.version).c_str());
        std::fprintf(stderr, "\n");
        return 2;
      }
      opt.profile = *p;
      profile_given = true;
    } else if (a == "--upstream-version") {
      upstream_version = next();
    } else if (a == "--all-impls") {
      opt.all_impls = true;
    } else if (a == "--threads") {
      opt.threads = unsigned(std::strtoul(next().c_str(), nullptr, 10));
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: w4a8_ck_compare [--profile V] [--upstream-version V] [--all-impls] [--threads N] DIR\n");
      return 2;
    } else {
      dir = a;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: w4a8_ck_compare [--profile V] [--upstream-version V] [--all-impls] [--threads N] DIR\n");
    return 2;
  }
  if (!profile_given && !upstream_version.empty()) opt.profile = gemm::ck::profile_for_version(upstream_version);
  gemm::ck::Stats s;
  const Status st = gemm::ck::compare_dir(dir, opt, s);
  if (!st.ok()) {
    std::fprintf(stderr, "w4a8_ck_compare: %s\n", st.error().message.c_str());
    return 2;
  }
  std::fputs(gemm::ck::format_stats(s, opt).c_str(), stdout);
  const auto fails = gemm::ck::tolerance_failures(s);
  for (const auto& f : fails) std::printf("FAIL %s\n", f.c_str());
  if (fails.empty()) std::printf("OK: every tolerance holds\n");
  return fails.empty() ? 0 : 1;
}
