// Validator throughput on a synthetic asym_w4a8_int8 checkpoint: L layers of weight, s_rel, s_channel
// and a .comfy_quant marker (4L tensors; tiny tensors, so the header dominates; default 20,000 tensors).
//   validate_bench [--tensors N | --layers L] [--order crate|layer|metadata] [--write FILE] [--repeats R]
//       (--order: the header's tensor order, see Order; default crate) prints header size and best-of-R wall times of st::parse (the container alone),
//       inspect_parsed (the validator's own work), inspect [--strict] (both, as the CLI runs them) and
//       the heap the validator's Report holds; --write also saves the checkpoint so
//       tools/bench_validate_py.py and tools/bench/cli_bench.py time Python and the CLI on the very
//       same bytes (--repeats 0: write only).
//   validate_bench --file FILE [--repeats R]       File::open + inspect_parsed on an existing file
//   validate_bench --profile-validator N            only inspect_parsed, N times (for perf/callgrind)
// Uses only inspect/inspect_parsed/st::parse, so the same source builds against older versions of the
// library for side-by-side runs.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "validate/inspect.hpp"

namespace {

using namespace w4a8;

// Tensor order in the header. Crate: what the safetensors crate (and so Python's save_file, which
// comfy-kitchen and sglang use) writes: dtypes in descending order of its Dtype enum (F32, F8_E4M3,
// I8, U8 here), names sorted within each. Layer: each layer's tensors together, layers in model
// order, as a hand-rolled writer might emit (the header's names are then far from sorted).
// Metadata: the crate's order, with the markers in the header's _quantization_metadata instead of
// .comfy_quant tensors (the same layers: 3 tensors each, and a JSON document escaped in a string).
enum class Order { Crate, Layer, Metadata };

std::vector<std::uint8_t> make_checkpoint(int layers, Order order) {
  std::vector<st::TensorSpec> specs;
  specs.reserve(4 * static_cast<std::size_t>(layers));
  const float one = 1.0f;
  std::vector<std::uint8_t> ones(16);
  for (int i = 0; i < 4; ++i) std::memcpy(ones.data() + 4 * i, &one, 4);
  const std::string marker = R"({"format": "asym_w4a8_int8", "group_size": 16, "convrot": true})";
  std::string doc = R"({"format_version": "1.0", "layers": {)";
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.diffusion_model.blocks." + std::to_string(l / 8) + ".attn.proj_" + std::to_string(l % 8);
    specs.push_back({p + ".weight", st::Dtype::I8, {4, 128}, std::vector<std::uint8_t>(512, 0x11)});
    specs.push_back({p + ".weight_s_rel", st::Dtype::F8_E4M3, {4, 16}, std::vector<std::uint8_t>(64, 0x38)});
    specs.push_back({p + ".weight_s_channel", st::Dtype::F32, {4}, ones});
    if (order == Order::Metadata) doc.append(l ? ", \"" : "\"").append(p).append("\": ").append(marker);
    else specs.push_back({p + ".comfy_quant", st::Dtype::U8, {marker.size()}, {marker.begin(), marker.end()}});
  }
  st::WriteOptions opt;
  if (order == Order::Metadata) opt.metadata.emplace().emplace_back("_quantization_metadata", doc + "}}");
  if (order != Order::Layer)  // st::Dtype lists dtypes in the crate's enum order
    std::stable_sort(specs.begin(), specs.end(), [](const st::TensorSpec& a, const st::TensorSpec& b) {
      return a.dtype != b.dtype ? a.dtype > b.dtype : a.name < b.name;
    });
  auto r = st::serialize(specs, opt);
  if (!r.ok()) {
    std::fprintf(stderr, "serialize: %s\n", r.error().message.c_str());
    std::exit(2);
  }
  return std::move(r).value();
}

template <class F>
double best_ms(int repeats, F&& f) {
  double best = 1e30;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

void expect_layers(const Result<validate::Report>& r, int layers) {
  if (!r.ok() || r->layers.size() != static_cast<std::size_t>(layers)) {
    std::fprintf(stderr, "unexpected verdict: %s\n", r.ok() ? "layer count" : r.error().message.c_str());
    std::exit(2);
  }
}

}  // namespace

// In process, as the CLI does it: mmap + header parse (File::open), then inspect_parsed.
int time_file(const std::string& path, int repeats) {
  double best_open = 1e30, best_all = 1e30;
  std::size_t layers = 0;
  std::uint64_t header = 0;
  for (int i = 0; i < repeats; ++i) {
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
  int layers = 5000;
  int repeats = -1;  // default: 15, or 3 above 20,000 layers
  std::string write, file;
  int profile_runs = 0;
  Order order = Order::Crate;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--layers" && i + 1 < argc) layers = std::max(1, std::atoi(argv[++i]));
    else if (a == "--tensors" && i + 1 < argc) layers = std::max(1, std::atoi(argv[++i]) / 4);
    else if (a == "--repeats" && i + 1 < argc) repeats = std::max(0, std::atoi(argv[++i]));
    else if (a == "--profile-validator" && i + 1 < argc) profile_runs = std::atoi(argv[++i]);
    else if (a == "--write" && i + 1 < argc) write = argv[++i];
    else if (a == "--file" && i + 1 < argc) file = argv[++i];
    else if (a == "--order" && i + 1 < argc && (std::string_view(argv[i + 1]) == "crate" || std::string_view(argv[i + 1]) == "layer" ||
                                                std::string_view(argv[i + 1]) == "metadata")) {
      const std::string_view o = argv[++i];
      order = o == "crate" ? Order::Crate : o == "layer" ? Order::Layer : Order::Metadata;
    }
    else {
      std::fprintf(stderr,
                   "usage: validate_bench [--tensors N | --layers L] [--order crate|layer|metadata] [--write FILE] [--repeats R]\n"
                   "       validate_bench --file FILE [--repeats R]\n"
                   "       validate_bench [--layers L] --profile-validator N\n");
      return 2;
    }
  }
  if (!file.empty()) return time_file(file, std::max(1, repeats < 0 ? 15 : repeats));
  const std::vector<std::uint8_t> bytes = make_checkpoint(layers, order);
  if (!write.empty() && !st::write_file(write, bytes).ok()) return 2;
  if (repeats == 0) return 0;
  if (repeats < 0) repeats = layers > 20000 ? 3 : 15;
  std::uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian host
  const double mb = static_cast<double>(header_len) / 1e6;

  if (profile_runs > 0) {
    const auto h = st::parse(bytes);
    const validate::ParsedFile p{"bench.safetensors", bytes, &h.value()};
    for (int i = 0; i < profile_runs; ++i) expect_layers(validate::inspect_parsed(std::span(&p, 1)), layers);
    return 0;
  }
  const validate::InputFile f{"bench.safetensors", bytes};
  validate::Options strict;
  strict.strict = true;
  const double ms = best_ms(repeats, [&] { expect_layers(validate::inspect(std::span(&f, 1)), layers); });
  const double ms_strict = best_ms(repeats, [&] { expect_layers(validate::inspect(std::span(&f, 1), strict), layers); });
  const double ms_parse = best_ms(repeats, [&] {
    if (!st::parse(bytes).ok()) std::exit(2);
  });
  const auto header = st::parse(bytes);
  const validate::ParsedFile pf{"bench.safetensors", bytes, &header.value()};
  const double ms_validator = best_ms(repeats, [&] { expect_layers(validate::inspect_parsed(std::span(&pf, 1)), layers); });

  // Heap the validator adds on top of the parsed header while its Report is alive (glibc counters).
  const std::size_t heap_before = mallinfo2().uordblks;
  std::size_t heap_report = 0;
  {
    auto r = validate::inspect_parsed(std::span(&pf, 1));
    expect_layers(r, layers);
    heap_report = mallinfo2().uordblks - heap_before;
  }
  std::printf("tensors=%d header_bytes=%llu file_bytes=%zu repeats=%d\n", 4 * layers,
              static_cast<unsigned long long>(header_len), bytes.size(), repeats);
  std::printf("cpp inspect          ms=%.2f header_MBps=%.1f\n", ms, mb / (ms / 1e3));
  std::printf("cpp inspect --strict ms=%.2f header_MBps=%.1f\n", ms_strict, mb / (ms_strict / 1e3));
  std::printf("cpp st::parse only   ms=%.2f header_MBps=%.1f\n", ms_parse, mb / (ms_parse / 1e3));
  std::printf("cpp inspect_parsed   ms=%.2f header_MBps=%.1f  (validator alone: inspect minus parse)\n", ms_validator,
              mb / (ms_validator / 1e3));
  std::printf("validator heap while its Report lives: %.1f MB (%.2f x header)\n", static_cast<double>(heap_report) / 1e6,
              static_cast<double>(heap_report) / static_cast<double>(header_len));
  return 0;
}
