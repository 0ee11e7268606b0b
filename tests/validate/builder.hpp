// Test helper: builds in-memory checkpoints (through the safetensors writer) and runs inspect() on
// them, so each test states its tensors, markers and the exact expected message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "safetensors/writer.hpp"
#include "validate/inspect.hpp"

namespace w4a8::validate::testing {

using Bytes = std::vector<std::uint8_t>;

inline std::uint64_t elements(const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

inline Bytes f32_bytes(std::initializer_list<float> values) {
  Bytes out(values.size() * 4);
  std::size_t i = 0;
  for (float v : values) std::memcpy(out.data() + 4 * i++, &v, 4);  // host is little-endian (x86/arm)
  return out;
}

class Ckpt {
 public:
  // A tensor filled with `fill` bytes unless data is given.
  Ckpt& tensor(std::string name, st::Dtype d, std::vector<std::uint64_t> shape,
               std::optional<Bytes> data = std::nullopt, std::uint8_t fill = 0) {
    const std::uint64_t n = elements(shape) * st::dtype_bits(d) / 8;
    Bytes b = data ? *data : Bytes(n, fill);
    specs_.push_back(st::TensorSpec{std::move(name), d, std::move(shape), std::move(b)});
    return *this;
  }
  Ckpt& marker(const std::string& prefix, std::string_view json_text, st::Dtype d = st::Dtype::U8) {
    Bytes b(json_text.begin(), json_text.end());
    const std::uint64_t width = st::dtype_bits(d) / 8;
    return tensor(prefix + ".comfy_quant", d, {b.size() / width}, b);
  }
  Ckpt& meta(std::string key, std::string value) {
    if (!opt_.metadata) opt_.metadata.emplace();
    opt_.metadata->emplace_back(std::move(key), std::move(value));
    return *this;
  }
  // A well-formed asym_w4a8_int8 layer: I8 (n, cols), s_rel FP8 (n, 2*cols/g) of 1.0, channel F32 ones.
  Ckpt& w4a8(const std::string& p, std::uint64_t n = 4, std::uint64_t cols = 128, std::uint64_t g = 16,
             std::optional<std::string> marker_json = std::nullopt) {
    tensor(p + ".weight", st::Dtype::I8, {n, cols});
    tensor(p + ".weight_s_rel", st::Dtype::F8_E4M3, {n, 2 * cols / g}, std::nullopt, 0x38);
    Bytes ones(n * 4);
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(ones.data() + 4 * i, &kOne, 4);
    tensor(p + ".weight_s_channel", st::Dtype::F32, {n}, ones);
    return marker(p, marker_json ? *marker_json
                                 : "{\"format\": \"asym_w4a8_int8\", \"group_size\": " + std::to_string(g) + "}");
  }
  Bytes bytes() const {
    auto r = st::serialize(specs_, opt_);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? *r : Bytes{};
  }

 private:
  static constexpr float kOne = 1.0f;
  std::vector<st::TensorSpec> specs_;
  st::WriteOptions opt_;
};

// The files named model.safetensors / shard-N.safetensors.
inline std::vector<InputFile> named(const std::vector<Bytes>& files) {
  std::vector<InputFile> in;
  for (std::size_t i = 0; i < files.size(); ++i)
    in.push_back({files.size() == 1 ? "model.safetensors" : "shard-" + std::to_string(i + 1) + ".safetensors",
                  files[i]});
  return in;
}
// Runs inspect() on the given files (named as above).
inline Result<Report> run(const std::vector<Bytes>& files, const Options& opt) { return inspect(named(files), opt); }
inline Result<Report> run(const std::vector<Bytes>& files, bool strict = false) {
  Options opt;
  opt.strict = strict;
  return run(files, opt);
}
// Runs inspect() predicting sglang release `v`.
inline Result<Report> run_as(upstream::Sglang v, const std::vector<Bytes>& files) {
  Options opt;
  opt.sglang = v;
  return run(files, opt);
}
inline Result<Report> run(const Ckpt& c, bool strict = false) { return run(std::vector<Bytes>{c.bytes()}, strict); }

// "code: message" of the error, or "ok".
inline std::string verdict(const Result<Report>& r) {
  if (r.ok()) return "ok";
  return std::string(r.error().code()) + ": " + r.error().message;
}

}  // namespace w4a8::validate::testing
