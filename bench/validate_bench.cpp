// Validator throughput on a synthetic asym_w4a8_int8 checkpoint (layers of weight, s_rel, s_channel
// and a .comfy_quant marker; tiny tensors, so the header dominates; 20,000 tensors by default).
// Prints header size, best-of-N wall time and header MB/s.
//   validate_bench [--tensors N] [--write FILE]   time in process (and save the checkpoint, so
//                                                 tools/bench_validate_py.py and tools/bench/cli_bench.py
//                                                 time Python and the CLI on the very same bytes)
//   validate_bench --file FILE [--repeats R]      time File::open + inspect on an existing file
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "validate/inspect.hpp"

namespace {

using namespace w4a8;

int kLayers = 5000;  // x 4 tensors = 20,000
int kRepeats = 15;

std::vector<std::uint8_t> make_checkpoint() {
  std::vector<st::TensorSpec> specs;
  specs.reserve(4 * kLayers);
  const float one = 1.0f;
  std::vector<std::uint8_t> ones(16);
  for (int i = 0; i < 4; ++i) std::memcpy(ones.data() + 4 * i, &one, 4);
  const std::string marker = R"({"format": "asym_w4a8_int8", "group_size": 16, "convrot": true})";
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.diffusion_model.blocks." + std::to_string(l / 8) + ".attn.proj_" + std::to_string(l % 8);
    specs.push_back({p + ".weight", st::Dtype::I8, {4, 128}, std::vector<std::uint8_t>(512, 0x11)});
    specs.push_back({p + ".weight_s_rel", st::Dtype::F8_E4M3, {4, 16}, std::vector<std::uint8_t>(64, 0x38)});
    specs.push_back({p + ".weight_s_channel", st::Dtype::F32, {4}, ones});
    specs.push_back({p + ".comfy_quant", st::Dtype::U8, {marker.size()}, {marker.begin(), marker.end()}});
  }
  auto r = st::serialize(specs);
  if (!r.ok()) {
    std::fprintf(stderr, "serialize: %s\n", r.error().message.c_str());
    std::exit(2);
  }
  return std::move(r).value();
}

double best_ms(const std::vector<std::uint8_t>& bytes, bool strict) {
  const validate::InputFile f{"bench.safetensors", bytes};
  validate::Options opt;
  opt.strict = strict;
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = validate::inspect(std::span(&f, 1), opt);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok() || r->layers.size() != std::size_t(kLayers)) {
      std::fprintf(stderr, "unexpected verdict: %s\n", r.ok() ? "layer count" : r.error().message.c_str());
      std::exit(2);
    }
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

// The container alone (header JSON + layout checks), to separate it from the validator's own work.
double best_parse_ms(const std::vector<std::uint8_t>& bytes) {
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = st::parse(bytes);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) std::exit(2);
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

}  // namespace

// In process, as the CLI does it: mmap + header parse (File::open), then inspect_parsed.
int time_file(const std::string& path) {
  double best_open = 1e30, best_all = 1e30;
  std::size_t layers = 0;
  std::uint64_t header = 0;
  for (int i = 0; i < kRepeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto f = st::File::open(path);
    const auto t1 = std::chrono::steady_clock::now();
    if (!f.ok()) return std::fprintf(stderr, "%s\n", f.error().message.c_str()), 2;
    const validate::ParsedFile pf{f->path(), f->bytes(), &f->header()};
    auto r = validate::inspect_parsed(std::span(&pf, 1));
    const auto t2 = std::chrono::steady_clock::now();
    if (!r.ok()) return std::fprintf(stderr, "%s\n", r.error().message.c_str()), 2;
    layers = r->layers.size();
    header = f->header().header_len;
    best_open = std::min(best_open, std::chrono::duration<double, std::milli>(t1 - t0).count());
    best_all = std::min(best_all, std::chrono::duration<double, std::milli>(t2 - t0).count());
  }
  std::printf("file=%s layers=%zu header_bytes=%llu open_parse_ms=%.2f open_parse_inspect_ms=%.2f header_MBps=%.1f\n",
              path.c_str(), layers, static_cast<unsigned long long>(header), best_open, best_all,
              double(header) / 1e6 / (best_all / 1e3));
  return 0;
}

int main(int argc, char** argv) {
  std::string write_to, file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tensors" && i + 1 < argc) kLayers = std::max(1, std::atoi(argv[++i]) / 4);
    else if (a == "--repeats" && i + 1 < argc) kRepeats = std::max(0, std::atoi(argv[++i]));  // 0: write only
    else if (a == "--write" && i + 1 < argc) write_to = argv[++i];
    else if (a == "--file" && i + 1 < argc) file = argv[++i];
    else return std::fprintf(stderr, "usage: validate_bench [--tensors N] [--write FILE] | --file FILE [--repeats R]\n"), 2;
  }
  if (!file.empty()) return kRepeats = std::max(1, kRepeats), time_file(file);
  const std::vector<std::uint8_t> bytes = make_checkpoint();
  if (!write_to.empty() && !st::write_file(write_to, bytes).ok()) return 2;
  if (kRepeats == 0) return 0;
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian host
  const double mb = static_cast<double>(header_len) / 1e6;
  const double ms = best_ms(bytes, false);
  const double ms_strict = best_ms(bytes, true);
  const double ms_parse = best_parse_ms(bytes);
  std::printf("tensors=%d header_bytes=%llu file_bytes=%zu\n", 4 * kLayers,
              static_cast<unsigned long long>(header_len), bytes.size());
  std::printf("cpp inspect          ms=%.2f header_MBps=%.1f\n", ms, mb / (ms / 1e3));
  std::printf("cpp inspect --strict ms=%.2f header_MBps=%.1f\n", ms_strict, mb / (ms_strict / 1e3));
  std::printf("cpp st::parse only   ms=%.2f header_MBps=%.1f\n", ms_parse, mb / (ms_parse / 1e3));
  return 0;
}
