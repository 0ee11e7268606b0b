#include "gemm/tensor_io.hpp"

#include <algorithm>
#include <cstring>

namespace w4a8::gemm {
namespace {

template <class T>
std::vector<T> read_le(std::span<const std::uint8_t> bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));  // x86/ARM little-endian
  return v;
}

}  // namespace

bool float_dtype_of(st::Dtype d, FloatDtype& out) {
  switch (d) {
    case st::Dtype::F32: out = FloatDtype::F32; return true;
    case st::Dtype::BF16: out = FloatDtype::BF16; return true;
    case st::Dtype::F16: out = FloatDtype::F16; return true;
    default: return false;
  }
}

st::Dtype st_dtype_of(FloatDtype d) {
  switch (d) {
    case FloatDtype::BF16: return st::Dtype::BF16;
    case FloatDtype::F16: return st::Dtype::F16;
    default: return st::Dtype::F32;
  }
}

std::string_view float_dtype_name(FloatDtype d) {
  switch (d) {
    case FloatDtype::BF16: return "bf16";
    case FloatDtype::F16: return "f16";
    default: return "f32";
  }
}

Result<std::vector<float>> read_floats(const st::File& f, const st::TensorInfo& t, std::string_view what) {
  const auto bytes = f.data(t);
  const std::size_t width = t.dtype == st::Dtype::F32 ? 4 : 2;
  if (t.dtype != st::Dtype::F32 && t.dtype != st::Dtype::BF16 && t.dtype != st::Dtype::F16)
    return make_error(ErrorKind::OpDtype, {what, "F32, BF16 or F16", st::dtype_name(t.dtype)});
  // Converted straight from the mapping into the one result buffer, a chunk at a time, each chunk's
  // file pages handed back once read: a large input costs its float32 values, not also a second copy
  // of its bytes and every page of the file (they refault from the file if read again).
  constexpr std::size_t kChunk = std::size_t{16} << 20;  // bytes
  const bool release = bytes.size() >= 2 * kChunk;
  std::vector<float> v(bytes.size() / width);
  for (std::size_t at = 0; at < bytes.size(); at += kChunk) {
    const auto chunk = bytes.subspan(at, std::min(kChunk, bytes.size() - at));
    float* dst = v.data() + at / width;
    if (t.dtype == st::Dtype::F32) {
      std::memcpy(dst, chunk.data(), chunk.size() / 4 * 4);  // x86/ARM little-endian
    } else {
      for (std::size_t i = 0; i + 1 < chunk.size(); i += 2) {
        std::uint16_t h = 0;
        std::memcpy(&h, chunk.data() + i, 2);
        dst[i / 2] = t.dtype == st::Dtype::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
    }
    if (release) st::release_pages(chunk);
  }
  return v;
}

Result<Layer> load_layer(const st::File& f, const std::string& prefix, std::int64_t group_size,
                         std::int64_t convrot_groupsize) {
  const st::Header& h = f.header();
  auto need = [&](const std::string& suffix) -> Result<const st::TensorInfo*> {
    const st::TensorInfo* t = h.find(prefix + suffix);
    if (!t) return make_error(ErrorKind::UsageError, {f.path() + " has no tensor " + prefix + suffix});
    return t;
  };
  Layer l;
  l.group_size = group_size;
  l.convrot_groupsize = convrot_groupsize;
  auto w = need(".weight");
  W4A8_TRY(w);
  l.weight_dtype = (*w)->dtype;
  l.weight_shape = (*w)->shape;
  {
    const auto b = f.data(**w);
    l.weight.assign(b.begin(), b.end());
  }
  auto s = need(".weight_s_rel");
  W4A8_TRY(s);
  l.s_rel_dtype = (*s)->dtype;
  l.s_rel_shape = (*s)->shape;
  {
    const auto b = f.data(**s);
    l.s_rel.assign(b.begin(), b.end());
  }
  auto c = need(".weight_s_channel");
  W4A8_TRY(c);
  l.s_channel_dtype = (*c)->dtype;
  l.s_channel_shape = (*c)->shape;
  if ((*c)->dtype == st::Dtype::F32) l.s_channel = read_le<float>(f.data(**c));
  // Codebook and correction keep their stored dtype: validate_operands reports a wrong one in
  // upstream's order (after every shape check), so values are read only when F32.
  if (const st::TensorInfo* t = h.find(prefix + ".weight_codebook")) {
    l.codebook_shape = t->shape;
    l.codebook_dtype = t->dtype;
    if (t->dtype == st::Dtype::F32) l.codebook = read_le<float>(f.data(*t));
  }
  if (const st::TensorInfo* t = h.find(prefix + ".weight_correction")) {
    l.correction_shape = t->shape;
    l.correction_dtype = t->dtype;
    if (t->dtype == st::Dtype::F32) l.correction = read_le<float>(f.data(*t));
  }
  if (const st::TensorInfo* t = h.find(prefix + ".bias")) {
    if (!float_dtype_of(t->dtype, l.bias_dtype))
      return make_error(ErrorKind::OpDtype, {"bias", "F32, BF16 or F16", st::dtype_name(t->dtype)});
    l.bias_shape = t->shape;
    auto v = read_floats(f, *t, "bias");
    W4A8_TRY(v);
    l.bias = std::move(*v);
  }
  return l;
}

st::TensorSpec float_tensor(std::string name, FloatDtype dtype, Shape shape, const std::vector<float>& v) {
  st::TensorSpec t{std::move(name), st_dtype_of(dtype), std::move(shape), {}};
  if (dtype == FloatDtype::F32) {
    t.bytes.resize(v.size() * 4);
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), v.size() * 4);
  } else {
    t.bytes.resize(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint16_t h = dtype == FloatDtype::BF16 ? f32_to_bf16_rne(v[i]) : f32_to_f16_rne(v[i]);
      std::memcpy(&t.bytes[i * 2], &h, 2);
    }
  }
  return t;
}

std::string layer_marker(std::int64_t group_size, std::int64_t convrot_groupsize) {
  return "{\"format\": \"asym_w4a8_int8\", \"group_size\": " + std::to_string(group_size) +
         ", \"convrot\": true, \"convrot_groupsize\": " + std::to_string(convrot_groupsize) + "}";
}

std::vector<st::TensorSpec> layer_tensors(const Layer& l, const std::string& prefix) {
  std::vector<st::TensorSpec> out;
  out.push_back({prefix + ".weight", st::Dtype::I8, l.weight_shape, l.weight});
  out.push_back({prefix + ".weight_s_rel", l.s_rel_dtype, l.s_rel_shape, l.s_rel});  // FP8 or F32 bytes
  out.push_back(float_tensor(prefix + ".weight_s_channel", FloatDtype::F32, l.s_channel_shape, l.s_channel));
  if (l.has_codebook()) out.push_back(float_tensor(prefix + ".weight_codebook", FloatDtype::F32, *l.codebook_shape, l.codebook));
  if (l.has_correction())
    out.push_back(float_tensor(prefix + ".weight_correction", FloatDtype::F32, *l.correction_shape, l.correction));
  if (l.has_bias()) out.push_back(float_tensor(prefix + ".bias", l.bias_dtype, *l.bias_shape, l.bias));
  const std::string marker = layer_marker(l.group_size, l.convrot_groupsize);
  out.push_back({prefix + ".comfy_quant", st::Dtype::U8, {marker.size()},
                 std::vector<std::uint8_t>(marker.begin(), marker.end())});
  return out;
}

}  // namespace w4a8::gemm
