// Uses the installed package: validates the checkpoints named on the command line the way sglang
// would (printing each verdict), then quantizes a tiny layer and runs it through both reference GEMMs.
// Exit status 0 when every step behaves as documented, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/version.hpp"
#include "gemm/quantizer.hpp"
#include "gemm/reference.hpp"
#include "validate/inspect.hpp"

namespace {

int validate(const std::string& path) {
  const std::vector<std::string> paths{path};
  const auto report = w4a8::validate::inspect_paths(paths);
  if (!report.ok()) {
    std::printf("%s: rejected: %s: %s\n", path.c_str(), std::string(report.error().type()).c_str(),
                report.error().message.c_str());
    return 1;
  }
  std::printf("%s: accepted, %zu quantized layers (sglang %s)\n", path.c_str(), report->layers.size(),
              std::string(w4a8::upstream::profile(report->sglang).version).c_str());
  return 0;
}

// A 4x64 layer with a 3x64 input: literal and fast must agree bit for bit, and both must stay close
// to the float product with the dequantized weights.
bool tiny_gemm() {
  constexpr std::uint64_t n = 4, k = 64, m = 3;
  std::vector<float> w(n * k);
  for (std::uint64_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i)) * 0.5f;
  w4a8::gemm::QuantizeOptions q;
  q.convrot_groupsize = 16;
  auto layer = w4a8::gemm::quantize_weights(w, n, k, q);
  if (!layer.ok()) {
    std::printf("quantize failed: %s\n", layer.error().message.c_str());
    return false;
  }
  w4a8::gemm::Activations x;
  x.shape = {m, k};
  for (std::uint64_t i = 0; i < m * k; ++i) x.values.push_back(std::cos(0.11f * static_cast<float>(i)));
  const auto literal = w4a8::gemm::gemm_literal(*layer, x);
  const auto fast = w4a8::gemm::gemm_fast(*layer, x);
  if (!literal.ok() || !fast.ok()) {
    std::printf("gemm failed: %s\n", (!literal.ok() ? literal.error() : fast.error()).message.c_str());
    return false;
  }
  const std::vector<double> wd = w4a8::gemm::dequantize_weights(*layer);
  double worst = 0;
  for (std::uint64_t r = 0; r < m; ++r)
    for (std::uint64_t c = 0; c < n; ++c) {
      double ref = 0;
      for (std::uint64_t j = 0; j < k; ++j) ref += x.values[r * k + j] * wd[c * k + j];
      worst = std::fmax(worst, std::fabs(literal->out[r * n + c] - ref));
    }
  const bool same = literal->out == fast->out;
  std::printf("tiny gemm %llux%llux%llu: out[0][0] = %.6f, literal %s fast (%s), max |out - float| = %.4f\n",
              static_cast<unsigned long long>(m), static_cast<unsigned long long>(n),
              static_cast<unsigned long long>(k), static_cast<double>(literal->out[0]), same ? "==" : "!=",
              std::string(w4a8::gemm::isa_name(fast->isa)).c_str(), worst);
  return same && worst < 0.25;
}

}  // namespace

// consumer ACCEPTED.safetensors REJECTED.safetensors
int main(int argc, char** argv) {
  std::printf("w4a8check %s\n", W4A8CHECK_VERSION);
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer ACCEPTED.safetensors REJECTED.safetensors\n");
    return 2;
  }
  const bool ok = validate(argv[1]) == 0 && validate(argv[2]) == 1 && tiny_gemm();
  std::printf("%s\n", ok ? "consumer: OK" : "consumer: FAILED");
  return ok ? 0 : 1;
}
