// Header parse throughput and memory on synthetic header-dominated checkpoints (tools/bench_header.py
// runs it side by side with Python's json.loads on the very same bytes).
//   header_bench write N FILE [writer|blocks]
//                                 writes a checkpoint with N tensors (data left sparse: ftruncate)
//   header_bench parse FILE MODE REPEATS
//                                 reads the file's header into memory, then parses it REPEATS times
//                                 and prints one JSON line: best ms, MB/s of header, peak RSS.
// MODE: fast      = st::parse_prefix (UTF-8 check, single-pass deserializer, offset checks)
//       reference = the DOM reference deserializer alone (json::parse_serde + mapping)
// The first parse runs before any timing, and the peak RSS is read after it.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "safetensors/header_reference.hpp"
#include "safetensors/reader.hpp"

namespace {

using namespace w4a8;

// The process's peak resident set (VmHWM: reset by exec, unlike ru_maxrss, which a child inherits
// from its parent at fork).
long peak_rss_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

// A W4A8-like checkpoint: per layer a packed weight, group scales, channel scales and a marker,
// metadata in front. order "writer": as the crate's serializer emits tensors (dtype descending in
// the crate's enum order, then name: a few sorted runs); "blocks": layer by layer (names unsorted,
// the parser's worst case).
int write(std::size_t tensors, const char* path, const std::string& order) {
  struct Kind {
    const char* suffix;
    const char* dtype;
    int rank;  // the crate's Dtype order: F32 > F8_E4M3 > I8 > U8
    const char* shape;
    std::uint64_t bytes;
  };
  static const Kind kKinds[] = {{".weight", "I8", 5, "[3072,1536]", 3072ull * 1536},
                                {".weight_s_rel", "F8_E4M3", 7, "[3072,192]", 3072ull * 192},
                                {".weight_s_channel", "F32", 17, "[3072]", 3072ull * 4},
                                {".comfy_quant", "U8", 4, "[62]", 62}};
  struct Entry {
    std::string name;
    const Kind* kind;
  };
  std::vector<Entry> entries;
  entries.reserve(tensors);
  for (std::size_t i = 0; i < tensors; ++i) {
    const std::size_t layer = i / 4;
    const Kind& k = kKinds[i % 4];
    entries.push_back({"model.diffusion_model.double_blocks." + std::to_string(layer / 12) + ".img_attn.proj_" +
                           std::to_string(layer % 12) + k.suffix,
                       &k});
  }
  if (order == "writer")
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.kind->rank != b.kind->rank ? a.kind->rank > b.kind->rank : a.name < b.name;
    });
  std::string h = R"({"__metadata__":{"format":"pt","_quantization_metadata":"{\"format_version\":\"1.0\"}"})";
  std::uint64_t off = 0;
  for (const Entry& e : entries) {
    h += ",\"" + e.name + "\":{\"dtype\":\"" + e.kind->dtype + "\",\"shape\":" + e.kind->shape +
         ",\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + e.kind->bytes) + "]}";
    off += e.kind->bytes;
  }
  h += '}';
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) f.put(char(n >> (8 * i)));
  f << h;
  f.close();
  if (!f || truncate(path, off_t(8 + n + off)) != 0) {
    std::perror(path);
    return 2;
  }
  return 0;
}

int parse(const char* path, const std::string& mode, int repeats) {
  std::ifstream f(path, std::ios::binary);
  char len8[8];
  if (!f.read(len8, 8)) return std::perror(path), 2;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(len8[i]);
  std::vector<std::uint8_t> prefix(8 + n);
  std::memcpy(prefix.data(), len8, 8);
  if (!f.read(reinterpret_cast<char*>(prefix.data()) + 8, std::streamsize(n))) return std::perror(path), 2;
  f.seekg(0, std::ios::end);
  const auto file_size = static_cast<std::uint64_t>(f.tellg());
  const long rss_before = peak_rss_kb();

  // Parses into h (freed by the caller after the clock stops, as a CLI frees it at exit).
  auto once = [&](st::Header& h) -> bool {
    if (mode == "fast") {
      auto r = st::parse_prefix(prefix, file_size);
      if (!r.ok()) return std::fprintf(stderr, "%s\n", r.error().message.c_str()), false;
      h = std::move(*r);
      return true;
    }
    const std::string_view text(reinterpret_cast<const char*>(prefix.data()) + 8, n);
    auto r = st::detail::deserialize_header_reference(text, h);
    if (!r.ok()) return std::fprintf(stderr, "%s\n", r.error().message.c_str()), false;
    return true;
  };
  std::size_t tensors = 0;
  {
    st::Header h;
    if (!once(h)) return 2;
    tensors = h.tensors.size();
  }
  const long rss_peak = peak_rss_kb();
  // Wall time, and this thread's CPU time (what a shared, loaded machine still measures fairly).
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
  };
  double best = 1e30, best_cpu = 1e30;
  for (int i = 0; i < repeats; ++i) {
    st::Header h;
    const double c0 = cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    if (!once(h)) return 2;
    const auto t1 = std::chrono::steady_clock::now();
    const double c1 = cpu_ms();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
    best_cpu = std::min(best_cpu, c1 - c0);
  }
  std::printf(
      "{\"impl\":\"%s\",\"tensors\":%zu,\"header_bytes\":%llu,\"best_ms\":%.4f,\"mb_per_s\":%.1f,"
      "\"best_cpu_ms\":%.4f,\"cpu_mb_per_s\":%.1f,\"rss_before_kb\":%ld,\"rss_peak_kb\":%ld}\n",
      mode.c_str(), tensors, static_cast<unsigned long long>(n), best, double(n) / 1e6 / (best / 1e3), best_cpu,
      double(n) / 1e6 / (best_cpu / 1e3), rss_before, rss_peak);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "write") == 0)
    return write(std::strtoull(argv[2], nullptr, 10), argv[3], argc == 5 ? argv[4] : "writer");
  if (argc == 5 && std::strcmp(argv[1], "parse") == 0 &&
      (std::strcmp(argv[3], "fast") == 0 || std::strcmp(argv[3], "reference") == 0))
    return parse(argv[2], argv[3], std::atoi(argv[4]));
  std::fprintf(stderr, "usage: header_bench write N FILE [writer|blocks] | header_bench parse FILE fast|reference REPEATS\n");
  return 2;
}
