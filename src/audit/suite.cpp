#include "audit/suite.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include <filesystem>

#include <unistd.h>

#include "gemm/reference.hpp"
#include "gemm/tensor_io.hpp"
#include "io/atomic_file.hpp"
#include "io/read_file.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::audit {

namespace {

using gemm::FloatDtype;
using gemm::ScaleDtype;
constexpr FloatDtype kDtypes[] = {FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16};

std::string join_path(const std::string& dir, const std::string& name) {
  return (std::filesystem::path(dir) / name).string();
}

// splitmix64: portable, so a seed gives the same suite with any standard library.
struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int below(int n) { return int(next() % std::uint64_t(n)); }    // [0, n)
  int range(int lo, int hi) { return lo + below(hi - lo + 1); }  // [lo, hi]
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  float normal() {                                               // Box-Muller
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
};

std::int64_t lcm3(std::int64_t a, std::int64_t b, std::int64_t c) { return std::lcm(std::lcm(a, b), c); }
// The legal K (a multiple of lcm(16, G, R), of lcm(32, G, R) at 6 bits) nearest to want (at_least:
// the smallest >= want), at least one unit.
std::uint64_t legal_k(std::uint64_t want, std::int64_t g, std::int64_t r, int bits, bool at_least = false) {
  const auto unit = std::uint64_t(lcm3(bits == 6 ? 32 : 16, g, r));
  const std::uint64_t q = std::max<std::uint64_t>(1, at_least ? (want + unit - 1) / unit : (want + unit / 2) / unit);
  return q * unit;
}

// A shape row of a grid: M, N, wanted K, G, R, and the storage (comfy-kitchen 0.2.40 also writes
// 6-bit codes and F32 group scales).
struct Shape {
  std::uint64_t m, n, k;
  std::int64_t g, r;
  int bits = 4;
  ScaleDtype scales = ScaleDtype::Fp8E4M3;
};

std::string make_id(const CaseSpec& c, std::size_t index) {
  std::string id = std::to_string(index);
  while (id.size() < 4) id.insert(id.begin(), '0');
  id += "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) + "_g" +
        std::to_string(c.g) + "_r" + std::to_string(c.r) + (c.bits == 6 ? "_6b" : "") +
        (c.scale_dtype == ScaleDtype::F32 ? "_sf32" : "") + (c.codebook ? "_cb" : "_uni") +
        (c.correction ? "_corr" : "") + (c.bias ? "_b" + std::string(gemm::float_dtype_name(c.bias_dtype)) : "") +
        "_x" + std::string(gemm::float_dtype_name(c.x_dtype)) + "_o" +
        std::string(gemm::float_dtype_name(c.out_dtype)) + "_" + std::string(data_kind_name(c.data));
  return id;
}

std::string covers_text(const CaseSpec& c) {
  std::string s;
  auto add = [&](const std::string& t) { s += s.empty() ? t : "; " + t; };
  if (c.m == 1) add("single row (GEMV path)");
  if (c.m % 16 == 1 && c.m > 1) add("one row past a 16-row tile");
  if (c.m % 16 != 0 && c.m > 16 && c.m % 16 != 1) add("ragged last row tile");
  if (c.m >= 4096) add("large M");
  if (c.n % 8 != 0) add("N not a multiple of 8 (ragged column tile)");
  if ((c.k & (c.k - 1)) != 0) add("K not a power of two");
  if (c.k >= 8192 || c.n >= 8192) add("K or N >= 8192");
  if (c.g < 16) add("G < 16 (several groups per 16-element decode vector)");
  if (c.g > 16 && c.g % 32 != 0) add("G an odd multiple of 16");
  if (std::uint64_t(c.r) == c.k) add("one ConvRot block per row");
  if (c.correction) add("correction path (float GEMM)");
  if (c.bits == 6) add("6-bit codes (nibble plane + 2-bit plane, values c - 32)");
  if (c.scale_dtype == ScaleDtype::F32) add("F32 group scales (not FP8-representable; negative, zero, huge)");
  switch (c.data) {
    case DataKind::Ties:
      add(c.x_dtype == FloatDtype::F32
              ? "quantization and decode products exactly on .5 (round half to even; odd scales: no reciprocal multiply)"
              : "quantization and decode products exactly on .5 (round half to even); rows whose eager roundings decide x_q");
      break;
    case DataKind::LargeAcc:
      add("|acc| > 2^24: the int32->float conversion rounds");
      break;
    case DataKind::Saturate:
      add("outliers, decode products clamped at +-127, large bias");
      break;
    case DataKind::ZeroRows:
      add("all-zero activation rows (scale floor 1e-30) and zero weight rows");
      break;
    case DataKind::Random:
      break;
  }
  return s;
}

// Features of case i of a grid, rotated so that every dtype pair and data kind appears.
CaseSpec make_spec(const Shape& sh, std::size_t i, std::uint64_t seed, DataKind data, bool correction) {
  CaseSpec c;
  c.m = sh.m, c.n = sh.n, c.g = sh.g, c.r = sh.r;
  c.bits = sh.bits, c.scale_dtype = sh.scales;
  // |acc| > 2^24 needs 127 * 127 * K > 2^24: K >= 1041.
  c.k = data == DataKind::LargeAcc ? legal_k(std::max<std::uint64_t>(sh.k, 1041), sh.g, sh.r, sh.bits, true)
                                   : legal_k(sh.k, sh.g, sh.r, sh.bits);
  c.x_dtype = kDtypes[i % 3];
  c.out_dtype = kDtypes[(i / 3) % 3];
  c.bias_dtype = kDtypes[(i / 9 + i) % 3];
  c.codebook = (i / 2) % 2 == 1 && sh.bits == 4;  // 6-bit storage is uniform only
  c.bias = i % 4 != 3;
  c.correction = correction && sh.bits == 4;
  c.data = data;
  c.seed = seed * 1000003ull + i;
  return c;
}

void finish(std::vector<CaseSpec>& cases) {
  for (std::size_t i = 0; i < cases.size(); ++i) {
    cases[i].id = make_id(cases[i], i);
    cases[i].file = "cases/" + cases[i].id + ".safetensors";
    cases[i].covers = covers_text(cases[i]);
  }
}

constexpr std::int64_t kGs[] = {4, 8, 16, 32, 48, 64, 128};
constexpr std::int64_t kRs[] = {4, 16, 64, 256, 1024, 4096};

// Adds one case per shape, data kinds cycling; every 7th case (and one per grid at least) takes the
// correction path.
void add_shapes(std::vector<CaseSpec>& out, const std::vector<Shape>& shapes, std::uint64_t seed,
                std::size_t kinds_offset) {
  for (const auto& sh : shapes) {
    const std::size_t i = out.size();
    const DataKind d = kAllDataKinds[(i + kinds_offset) % 5];
    const bool corr = i % 7 == 5 && d != DataKind::LargeAcc;
    out.push_back(make_spec(sh, i, seed, d, corr));
  }
}

std::vector<Shape> small_shapes() {
  return {{1, 16, 16, 16, 16},     {7, 24, 48, 4, 4},      {8, 40, 64, 8, 16},    {13, 48, 208, 16, 16},
          {16, 33, 96, 32, 16},    {17, 64, 256, 16, 256}, {33, 13, 144, 48, 16}, {1, 96, 320, 64, 64},
          {2, 8, 1100, 16, 16},    {16, 17, 128, 128, 64}, {7, 8, 80, 16, 4},     {13, 72, 336, 48, 16},
          {1, 40, 1024, 16, 1024}, {8, 24, 48, 16, 16},    {33, 32, 112, 16, 16}, {17, 9, 64, 4, 64},
          {3, 56, 192, 64, 64},    {16, 16, 160, 32, 4},   {1, 120, 400, 16, 16}, {9, 48, 256, 8, 256}};
}

// comfy-kitchen 0.2.40's storage variants, small: 6-bit codes (5 cases, every data kind, two with F32
// scales) and 4-bit codes with F32 group scales (5 cases, one on the correction path).
std::vector<Shape> small_storage_shapes() {
  constexpr auto F8 = ScaleDtype::Fp8E4M3, F32 = ScaleDtype::F32;
  return {{1, 16, 32, 16, 16, 6, F8},    {7, 24, 96, 48, 16, 6, F8},   {13, 40, 256, 32, 64, 6, F32},
          {17, 9, 320, 64, 64, 6, F8},   {33, 48, 128, 16, 4, 6, F32}, {8, 24, 48, 4, 4, 4, F32},
          {16, 40, 208, 16, 16, 4, F32}, {3, 56, 192, 64, 64, 4, F32}, {13, 33, 336, 48, 16, 4, F32},
          {1, 64, 1024, 8, 256, 4, F32}};
}

// The same variants at the standard grid's sizes (M up to 257, N and K up to 8448).
std::vector<Shape> standard_storage_shapes() {
  constexpr auto F8 = ScaleDtype::Fp8E4M3, F32 = ScaleDtype::F32;
  return {{1, 8200, 8192, 16, 256, 6, F8},     {16, 3072, 3072, 64, 1024, 6, F32}, {129, 1536, 2048, 128, 256, 6, F8},
          {257, 2048, 2048, 32, 1024, 6, F32}, {1, 8192, 8448, 32, 256, 4, F32},   {33, 2056, 4096, 16, 4096, 4, F32},
          {128, 1000, 1024, 48, 64, 4, F32},   {8, 1000, 1040, 16, 16, 4, F32}};
}

// M values the contract edges call for, each with N and K from 16 to 8192+ (not only powers of two).
std::vector<Shape> standard_shapes(bool full) {
  const std::uint64_t ms[] = {1, 7, 8, 13, 16, 17, 33, 128, 129, 257, 4096};
  // (N, K) pairs by size class; the large ones only for small M (bounded suite time).
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> nk_small = {{16, 16},  {24, 48},   {40, 80},   {13, 208},
                                                                         {72, 336}, {100, 256}, {129, 400}, {64, 1040}};
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> nk_large = {
      {1000, 1024}, {3072, 3072}, {2056, 4096}, {8200, 8192}, {8192, 8448}};
  std::vector<Shape> out;
  std::size_t gi = 0, ri = 0;
  auto next_gr = [&](std::uint64_t k) {
    // Cycle G and R; R no larger than the wanted K (a block needs K >= R).
    std::int64_t g = kGs[gi++ % 7], r = kRs[ri++ % 6];
    while (std::uint64_t(r) > std::max<std::uint64_t>(k, 4)) r /= 4;
    return std::pair{g, std::max<std::int64_t>(r, 4)};
  };
  for (const auto m : ms) {
    const std::size_t per_m = full ? nk_small.size() : (m >= 128 ? 4 : 6);
    for (std::size_t j = 0; j < per_m; ++j) {
      const auto& nk = nk_small[(j * 3 + m) % nk_small.size()];
      auto [g, r] = next_gr(nk.second);
      out.push_back({m, nk.first, nk.second, g, r});
    }
    const std::size_t large = full ? nk_large.size() : (m <= 17 ? 2 : m <= 257 ? 1 : 1);
    for (std::size_t j = 0; j < large; ++j) {
      auto nk = nk_large[(j + m) % nk_large.size()];
      if (!full && m >= 128) nk = {nk.first > 2056 ? 1536 : nk.first, std::min<std::uint64_t>(nk.second, 2048)};
      if (!full && m >= 4096) nk = {1024, 1024};
      auto [g, r] = next_gr(nk.second);
      out.push_back({m, nk.first, nk.second, g, r});
    }
  }
  return out;
}

// ---- data ----------------------------------------------------------------------------------------

float rnd_to(FloatDtype d, float v) { return gemm::round_to(d, v); }

std::uint8_t random_scale_byte(Rng& rng, bool codebook) {
  // Mostly where v * s spans the int8 grid (some products clamp), a few anywhere except NaN.
  int v = rng.below(10) == 0 ? rng.below(256) : codebook ? rng.range(0x50, 0x76) : rng.range(0x28, 0x5E);
  if ((v & 0x7F) == 0x7F) v ^= 1;
  return std::uint8_t(v);
}

std::uint8_t random_scale_byte_6bit(Rng& rng) {
  // |v| <= 32: scales up to 7 reach the clamp at the extreme codes, most products stay inside.
  int v = rng.below(10) == 0 ? rng.below(256) : rng.range(0x20, 0x4E);
  if ((v & 0x7F) == 0x7F) v ^= 1;
  return std::uint8_t(v);
}

// F32 group scales from the FP8 bytes the data kind chose: exactly those values, except for random
// data, where most are moved off the FP8 grid and a few are negative, zero, huge or subnormal.
void store_f32_scales(gemm::Layer& l, const std::vector<std::uint8_t>& fp8, DataKind data, Rng& rng) {
  for (std::size_t i = 0; i < fp8.size(); ++i) {
    float v = gemm::fp8_e4m3fn_to_f32(fp8[i]);
    if (data == DataKind::Random) {
      const int pick = rng.below(40);
      v = pick == 0   ? -v
          : pick == 1 ? 0.0f
          : pick == 2 ? 1.0e6f
          : pick == 3 ? 1.0e-40f
                      : v * float(0.75 + 0.5 * rng.uniform());
    }
    std::memcpy(l.s_rel.data() + 4 * i, &v, 4);
  }
}

void fill_layer(gemm::Layer& l, const CaseSpec& c, Rng& rng) {
  const std::uint64_t n = c.n, k = c.k, groups = k / std::uint64_t(c.g);
  const int bits = c.bits;
  const std::uint64_t row_bytes = gemm::packed_row_bytes(k, bits);
  // Group scales are chosen as FP8 bytes [N, K/G] and stored as such or as F32 (store_f32_scales).
  std::vector<std::uint8_t> sb(n * groups);
  auto put_code = [&](std::uint64_t i, std::uint64_t j, std::uint8_t code) {
    gemm::pack_code_bits(l.weight.data() + i * row_bytes, k, j, bits, code);
  };
  if (c.codebook) {
    l.codebook_shape = gemm::Shape{16};
    l.codebook.resize(16);
    if (c.data == DataKind::Ties) {
      for (int i = 0; i < 16; ++i) l.codebook[i] = float(i - 8) + 0.5f;  // x.5 levels: ties with odd scales
    } else {
      for (auto& v : l.codebook) v = 0.5f * rng.normal();
      std::sort(l.codebook.begin(), l.codebook.end());
      l.codebook.front() = -1.0f, l.codebook.back() = 1.0f;
    }
  }
  for (auto& b : l.weight) b = std::uint8_t(rng.next());
  for (auto& s : sb) s = bits == 6 ? random_scale_byte_6bit(rng) : random_scale_byte(rng, c.codebook);
  for (auto& s : l.s_channel) s = float(1e-4 + 1e-2 * rng.uniform());
  switch (c.data) {
    case DataKind::Ties: {
      // Decode products v * s exactly on .5: odd (uniform v) times x.5 scales, or x.5 levels times odd scales.
      constexpr std::uint8_t half_scales[] = {0x30, 0x3C, 0x42, 0x46, 0x4A, 0x4E};  // 0.5 1.5 2.5 3.5 5 7
      constexpr std::uint8_t odd_scales[] = {0x38, 0x40, 0x44, 0x48, 0x4A, 0x4C};   // 1 2 3 4 5 6 (odd ones tie)
      for (auto& s : sb) s = c.codebook ? odd_scales[rng.below(6)] : half_scales[rng.below(6)];
      break;
    }
    case DataKind::LargeAcc: {
      // w_q = +-127 everywhere (extreme codes, scale past the clamp), a few small codes so acc is
      // not a multiple of a large power of two; rows 0 and 1 all of one sign (largest |acc|).
      const std::uint8_t big = c.codebook ? 0x76 : 0x5A;  // 224 or 20: |v * s| > 127 at the extreme codes
      for (auto& s : sb) s = big;
      const auto top = std::uint8_t((1u << bits) - 1);
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint64_t j = 0; j < k; ++j) {
          std::uint8_t code = ((j * 7 + i) % 3) ? top : 0;
          if (i == 0)
            code = top;
          else if (i == 1)
            code = 0;
          else if (rng.below(64) == 0)
            code = std::uint8_t(rng.below(1 << bits));
          put_code(i, j, code);
        }
      break;
    }
    case DataKind::Saturate:
      for (auto& s : sb) s = rng.below(2) ? 0x7E : 0xFE;   // +-448: every non-zero product clamps
      for (std::size_t i = 0; i < l.codebook.size(); ++i)  // levels of |v| >= 0.3: 0.3 * 448 > 127
        l.codebook[i] = (i < 8 ? -1.f : 1.f) * float(0.3 + 0.7 * rng.uniform());
      break;
    case DataKind::ZeroRows:
      for (std::uint64_t i = 0; i < n; i += 3) {
        if (!c.codebook)
          for (std::uint64_t j = 0; j < k; ++j) put_code(i, j, std::uint8_t(1u << (bits - 1)));  // value 0
        std::fill_n(sb.begin() + i * groups, groups, std::uint8_t(i % 2 ? 0x00 : 0x80));         // +-0 scale
      }
      for (std::uint64_t i = 1; i < n; i += 5) l.s_channel[i] = 0.0f;
      break;
    case DataKind::Random:
      break;
  }
  if (c.scale_dtype == ScaleDtype::F32)
    store_f32_scales(l, sb, c.data, rng);
  else
    l.s_rel = std::move(sb);
  if (c.correction) {
    // comfy-kitchen's asymmetric quantizer stores 8 * group_scale + min: about the group's midpoint,
    // a tenth or so of its weights' size, not a rounding-level detail. Up to 20 / 127 of the channel's
    // largest decoded weight here, so a kernel that drops it, reads the wrong group or applies it at
    // the wrong point moves outputs by more than any legal rounding, under either policy.
    l.correction_shape = gemm::Shape{groups, n};
    l.correction.resize(groups * n);
    for (std::uint64_t g = 0; g < groups; ++g)
      for (std::uint64_t i = 0; i < n; ++i)
        l.correction[g * n + i] = float(l.s_channel[i] * (40.0 * rng.uniform() - 20.0));
  }
  if (c.bias) {
    l.bias_shape = gemm::Shape{n};
    l.bias_dtype = c.bias_dtype;
    l.bias.resize(n);
    const float mag = c.data == DataKind::Saturate ? 1000.f : 2.f;
    for (auto& v : l.bias) v = rnd_to(c.bias_dtype, mag * rng.normal());
  }
}

// A row whose rotated values y are (q + 0.5) * u (and one 127 * u, so scale = u exactly), u = c * 2^e:
// x = H y is exact in the dtype, and every order of evaluating rot(x) gives y exactly (the block's
// values lie on one grid and their sum stays within float32's 24 bits: explain.hpp
// rotation_is_exact), so x_rot / scale sits exactly on a .5 tie for every implementation. Non-zeros
// per block are limited so x stays exact in bf16 (1) and f16 (4), and for f32 so the sum stays in
// reach. f32 rows take c in {1, 7, 15}: with c = 7 or 15, x_rot * f32(1 / scale) misses the tie in
// about a third of the quotients (a reciprocal multiply for the division shows); bf16 and f16 have
// no bits to spare (c = 1).
void tie_row(float* x, const CaseSpec& c, Rng& rng) {
  const std::int64_t r = c.r, k = std::int64_t(c.k);
  const int e = -3 - rng.below(4);
  constexpr int kOddUnits[] = {1, 7, 15};
  const int odd = c.x_dtype == FloatDtype::F32 ? kOddUnits[rng.below(3)] : 1;
  const double unit = std::ldexp(double(odd), e);
  // A block's sum |x| is at most odd * R * nnz * 255 units of 2^(e - 1 - log4 R): keep it <= 2^24.
  const std::int64_t f32_nnz = std::max<std::int64_t>(1, std::min<std::int64_t>(r, (std::int64_t{1} << 24) / (255 * odd * r)));
  const std::int64_t nnz = c.x_dtype == FloatDtype::F32   ? f32_nnz
                           : c.x_dtype == FloatDtype::F16 ? std::min<std::int64_t>(r, 4)
                                                          : 1;
  std::vector<double> y(std::size_t(r), 0.0);
  int p = 0;
  for (std::int64_t t = r; t > 1; t /= 4) ++p;
  for (std::int64_t b = 0; b < k; b += r) {
    std::fill(y.begin(), y.end(), 0.0);
    // bf16 keeps 8 significant bits: next to the absmax element (block 0) only +-0.5 fits.
    const bool tight = b == 0 && c.x_dtype == FloatDtype::BF16;
    for (std::int64_t j = 0; j < nnz; ++j) {
      const std::int64_t pos = nnz == r ? j : 1 + rng.below(int(r - 1));
      const int q = tight                           ? rng.range(-1, 0)
                    : c.x_dtype == FloatDtype::BF16 ? rng.range(-64, 63)
                                                    : rng.range(-127, 126);
      y[std::size_t(pos)] = (double(q) + 0.5) * unit;
    }
    if (b == 0) y[0] = 127.0 * unit;
    for (std::int64_t i = 0; i < r; ++i) {
      double s = 0;
      for (std::int64_t j = 0; j < r; ++j)
        if (y[std::size_t(j)] != 0) s += gemm::hadamard_sign(r, j, i) * y[std::size_t(j)];
      x[b + i] = float(std::ldexp(s, -p));  // exact: < 24 significant bits
    }
  }
}

// A bf16 or f16 row that rotates exactly in every order (rotation_is_exact) to values the dtype
// cannot hold, so the eager policy's rounding of the rotated values (and of the divisor and the
// quotient) decides some x_q: an implementation that declares the eager policy but rotates and
// divides in float32 gets them wrong there. A few dtype values per block, of 5 significant bits at
// exponents up to 5 (bf16) or 9 (f16) apart; the row is drawn again (up to 64 times) until the two
// policies' x_q differ.
void eager_row(float* x, const CaseSpec& c, Rng& rng) {
  const std::int64_t r = c.r, k = std::int64_t(c.k);
  const auto n = static_cast<std::size_t>(k);
  std::vector<float> rot(n);
  std::vector<std::int8_t> qf(n), qe(n);
  const int spread = c.x_dtype == FloatDtype::F16 ? 10 : 6;  // f16 holds 11 bits: spread wider
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::fill_n(x, k, 0.0f);
    for (std::int64_t b = 0; b < k; b += r)
      for (int j = 0; j < 3; ++j) {
        const int mant = rng.range(16, 31) * (rng.below(2) ? 1 : -1);
        x[b + rng.below(int(r))] = float(std::ldexp(double(mant), -4 - rng.below(spread)));
      }
    float sf = 0, se = 0;
    gemm::quantize_row(x, k, r, gemm::ActPolicy::F32, c.x_dtype, rot.data(), qf.data(), &sf);
    gemm::quantize_row(x, k, r, gemm::ActPolicy::Eager, c.x_dtype, rot.data(), qe.data(), &se);
    if (qf != qe) return;
  }
}

gemm::Activations make_acts(const CaseSpec& c, Rng& rng) {
  gemm::Activations x;
  x.dtype = c.x_dtype;
  x.shape = {c.m, c.k};
  x.values.assign(c.m * c.k, 0.0f);
  const float huge = c.x_dtype == FloatDtype::F16 ? 1.0e3f : 1.0e30f;
  for (std::uint64_t i = 0; i < c.m; ++i) {
    float* row = x.values.data() + i * c.k;
    const int kind = rng.below(100);
    switch (c.data) {
      case DataKind::Ties:
        if (c.r <= 1024 && (i % 2 == 0 || c.m == 1)) {
          tie_row(row, c, rng);
          continue;
        }
        if (i % 4 == 1 && c.x_dtype != FloatDtype::F32) {
          eager_row(row, c, rng);
          continue;
        }
        break;
      case DataKind::LargeAcc:
        if (i + 1 < c.m || c.m == 1) {
          // Constant rows rotate to themselves: x_q = +-127 everywhere. 9 significant bits at most,
          // so every order rotates them exactly (explain.hpp rotation_is_exact) and their x_q are
          // known, not bounded: a kernel summing acc in float32 has no rounding tie to hide behind.
          const float v = (i % 2 ? -1.f : 1.f) * (0.5f + float(rng.below(256)) / 256.0f);
          std::fill_n(row, c.k, rnd_to(c.x_dtype, v));
          continue;
        }
        break;
      case DataKind::Saturate: {
        for (std::uint64_t j = 0; j < c.k; ++j) row[j] = rnd_to(c.x_dtype, rng.normal());
        row[rng.below(int(c.k))] = rnd_to(c.x_dtype, (rng.below(2) ? huge : -huge));
        if (i % 3 == 2) std::fill_n(row, c.k, rnd_to(c.x_dtype, huge));
        continue;
      }
      case DataKind::ZeroRows:
        if (i % 2 == 0) continue;  // stays zero
        break;
      case DataKind::Random:
        if (kind < 3) continue;  // an all-zero row now and then
        break;
    }
    const float mag = c.data == DataKind::Random && kind < 8 ? 100.f : 1.f;
    for (std::uint64_t j = 0; j < c.k; ++j) row[j] = rnd_to(c.x_dtype, mag * rng.normal());
  }
  for (auto& v : x.values) v = rnd_to(c.x_dtype, v);  // every value exactly what the file stores
  return x;
}

}  // namespace

Result<std::vector<CaseSpec>> grid_cases(std::string_view grid, std::uint64_t seed) {
  std::vector<CaseSpec> cases;
  if (grid == "small") {
    add_shapes(cases, small_shapes(), seed, 0);
    add_shapes(cases, small_storage_shapes(), seed, 0);
  } else if (grid == "standard") {
    add_shapes(cases, small_shapes(), seed, 0);
    add_shapes(cases, small_storage_shapes(), seed, 0);
    add_shapes(cases, standard_shapes(false), seed, 2);
    add_shapes(cases, standard_storage_shapes(), seed, 1);
  } else if (grid == "full") {
    add_shapes(cases, small_shapes(), seed, 0);
    add_shapes(cases, small_storage_shapes(), seed, 0);
    for (std::size_t rep = 0; rep < 5; ++rep) add_shapes(cases, standard_shapes(true), seed, rep);
    add_shapes(cases, standard_storage_shapes(), seed, 1);
  } else {
    return make_error(ErrorKind::AuditUnknownGrid, {"'" + std::string(grid) + "'"});
  }
  finish(cases);
  return cases;
}

CaseData generate_case(const CaseSpec& c) {
  Rng rng(c.seed);
  CaseData d;
  d.layer = gemm::make_zero_layer(c.n, c.k, c.g, c.r, c.bits, c.scale_dtype);
  fill_layer(d.layer, c, rng);
  d.x = make_acts(c, rng);
  return d;
}

// Every case file is written and finished before any is published, then the manifest last: a run
// that fails (a full disk, `ulimit -f`) or is interrupted leaves no partial suite. Its temporaries go,
// the case files it published go when the manifest cannot be written, and so do the suite directory
// and its cases/ when this run made them and nothing else is in them. Missing parents are made, and
// stay.
Status write_suite(const std::string& dir, const Manifest& m, const Progress& progress) {
  namespace fs = std::filesystem;
  const std::string manifest_path = join_path(dir, "manifest.json");
  const std::string cases_dir = join_path(dir, "cases");
  std::error_code ec;
  if (fs::exists(manifest_path, ec)) return make_error(ErrorKind::AuditSuiteExists, {dir});
  fs::path own(dir);
  if (!own.has_filename()) own = own.parent_path();  // "suite/"
  if (const fs::path parent = own.parent_path(); !parent.empty() && (fs::create_directories(parent, ec), ec))
    return make_error(ErrorKind::IoWriteFailed, {parent.string(), ec.message()});
  bool made_dir = false, made_cases = false;
  if (const int err = io::make_output_dir(dir, made_dir); err != 0)
    return make_error(ErrorKind::IoWriteFailed, {dir, std::strerror(err)});
  if (const int err = io::make_output_dir(cases_dir, made_cases); err != 0) {
    if (made_dir) ::rmdir(dir.c_str());
    io::forget_output_dir();
    return make_error(ErrorKind::IoWriteFailed, {cases_dir, std::strerror(err)});
  }
  std::vector<io::AtomicFile> files;
  std::vector<std::string> published;
  auto undo = [&](Error e) {
    files.clear();  // unpublished temporaries
    for (const std::string& f : published) ::unlink(f.c_str());
    if (made_cases) ::rmdir(cases_dir.c_str());
    if (made_dir) ::rmdir(dir.c_str());
    io::forget_output_dir();
    return e;
  };
  files.reserve(m.cases.size());
  for (std::size_t i = 0; i < m.cases.size(); ++i) {
    const CaseSpec& c = m.cases[i];
    if (progress) progress(i, m.cases.size(), c.id);
    CaseData d = generate_case(c);
    auto t = gemm::layer_tensors(d.layer, m.layer_prefix);
    t.push_back(gemm::float_tensor(m.input_key, c.x_dtype, d.x.shape, d.x.values));
    st::WriteOptions wo;
    wo.metadata =
        std::vector<std::pair<std::string, std::string>>{{"w4a8check_audit_case", json::dump(case_to_json(c))}};
    auto bytes = st::serialize(t, wo);
    if (!bytes.ok()) return undo(std::move(bytes).error());
    auto f = io::AtomicFile::create(join_path(dir, c.file));
    if (!f.ok()) return undo(std::move(f).error());
    if (auto w = f->write(*bytes); !w.ok()) return undo(std::move(w).error());
    if (auto w = f->finish(); !w.ok()) return undo(std::move(w).error());
    files.push_back(std::move(*f));
  }
  if (progress) progress(m.cases.size(), m.cases.size(), "");
  for (io::AtomicFile& f : files) {
    if (auto p = f.publish(); !p.ok()) return undo(std::move(p).error());
    published.push_back(join_path(dir, m.cases[published.size()].file));
  }
  // One case a line, so the manifest stays readable and diffable.
  json::Value head = manifest_to_json(m);
  head.members.pop_back();  // cases, written below
  std::string text = json::dump(head);
  text.pop_back();
  text += ", \"cases\": [\n";
  for (std::size_t i = 0; i < m.cases.size(); ++i)
    text += "  " + json::dump(case_to_json(m.cases[i])) + (i + 1 < m.cases.size() ? ",\n" : "\n");
  text += "]}\n";
  if (auto w = io::write_file_atomic(manifest_path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
      !w.ok())
    return undo(std::move(w).error());
  io::forget_output_dir();
  return Ok{};
}

Result<Manifest> read_suite(const std::string& dir) {
  const std::string path = join_path(dir, "manifest.json");
  auto text = io::read_small_file(path, kMaxManifestBytes);
  if (!text.ok()) return std::move(text).error();
  return parse_manifest(*text, path);
}

namespace {

// The first field (manifest order, then fields only the file has) where the entries differ; "" if none.
std::string first_difference(const json::Value& manifest, const json::Value& embedded) {
  for (const auto& [k, v] : manifest.members) {
    const json::Value* o = embedded.get(k);
    if (!o) return "'" + k + "' (not in the file's copy)";
    if (!json::py_equal(v, *o)) return "'" + k + "' (manifest " + json::dump(v) + ", file " + json::dump(*o) + ")";
  }
  for (const auto& [k, v] : embedded.members)
    if (!manifest.get(k)) return "'" + k + "' (only in the file's copy)";
  return "";
}

}  // namespace

Result<CaseData> load_case(const std::string& dir, const Manifest& m, const CaseSpec& c) {
  const std::string path = join_path(dir, c.file);
  auto mismatch = [&](const std::string& what) { return make_error(ErrorKind::AuditCaseFile, {path, what}); };
  // A case file that cannot be read is a broken suite (exit 2, the file named), not the verdict that
  // the container's own error kind would give.
  auto unreadable = [&](const Error& e) {
    return make_error(ErrorKind::AuditCaseFile,
                      {path, "it cannot be read: " + std::string(e.type()) + ": " + e.message + " [" +
                                 std::string(e.code()) + "]"});
  };
  auto f = st::File::open(path);
  if (!f.ok()) return unreadable(f.error());
  // The file repeats its manifest entry: a manifest edited afterwards (another codebook, bias,
  // dtype, data kind...) would otherwise describe data the file does not hold.
  const std::string* meta = f->header().meta("w4a8check_audit_case");
  if (!meta) return mismatch("no w4a8check_audit_case metadata");
  auto embedded = json::loads_str(*meta);
  if (!embedded.ok() || !embedded->is_object()) return mismatch("its w4a8check_audit_case metadata is not a JSON object");
  if (const std::string diff = first_difference(c.entry.is_object() ? c.entry : case_to_json(c), *embedded);
      !diff.empty())
    return mismatch("the entries differ in " + diff);
  // The layer's own marker is what every real loader reads (its group and ConvRot sizes, its format),
  // where the reference takes them from the entry: an edited marker passed the built-ins and failed
  // an adapter that honours it. audit make writes exactly gemm::layer_marker's text.
  const std::string marker_name = m.layer_prefix + ".comfy_quant";
  const st::TensorInfo* mt = f->header().find(marker_name);
  const std::string want = gemm::layer_marker(c.g, c.r);
  const auto mb = mt != nullptr ? f->data(*mt) : std::span<const std::uint8_t>();
  if (mt == nullptr || mt->dtype != st::Dtype::U8 ||
      std::string_view(reinterpret_cast<const char*>(mb.data()), mb.size()) != want)
    return mismatch("its marker '" + marker_name + "' is not the entry's " + want);
  CaseData d;
  auto layer = gemm::load_layer(*f, m.layer_prefix, c.g, c.r);
  if (!layer.ok()) return unreadable(layer.error());
  d.layer = std::move(*layer);
  const st::TensorInfo* xt = f->header().find(m.input_key);
  if (!xt) return mismatch("no tensor '" + m.input_key + "'");
  if (!gemm::float_dtype_of(xt->dtype, d.x.dtype) || d.x.dtype != c.x_dtype)
    return mismatch("'" + m.input_key + "' is " + std::string(st::dtype_name(xt->dtype)) + ", the entry says x_dtype " +
                    std::string(gemm::float_dtype_name(c.x_dtype)));
  auto xv = gemm::read_floats(*f, *xt, "input");
  if (!xv.ok()) return unreadable(xv.error());
  d.x.shape = xt->shape;
  d.x.values = std::move(*xv);
  if (d.layer.N() != c.n || d.layer.K() != c.k || d.x.M() != c.m || d.x.K() != c.k)
    return mismatch("stored shapes differ from m, n, k");
  if (d.layer.bits() != c.bits || d.layer.scale_dtype() != c.scale_dtype)
    return mismatch("stored storage (" + std::to_string(d.layer.bits()) + "-bit, " +
                    std::string(scale_dtype_name(d.layer.scale_dtype())) + " scales) differs from bits, scale_dtype");
  if (c.codebook != d.layer.has_codebook() || c.correction != d.layer.has_correction() ||
      c.bias != d.layer.has_bias() || (c.bias && d.layer.bias_dtype != c.bias_dtype))
    return mismatch("the stored optional tensors differ from codebook, correction, bias, bias_dtype");
  return d;
}

}  // namespace w4a8::audit
