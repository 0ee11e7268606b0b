#include "audit/suite.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "audit/atomic_file.hpp"
#include "gemm/tensor_io.hpp"
#include "json/dump.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::audit {

namespace {

using gemm::FloatDtype;
constexpr FloatDtype kDtypes[] = {FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16};

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
// The legal K (a multiple of lcm(16, G, R)) nearest to want (at_least: the smallest >= want), at
// least one unit.
std::uint64_t legal_k(std::uint64_t want, std::int64_t g, std::int64_t r, bool at_least = false) {
  const auto unit = std::uint64_t(lcm3(16, g, r));
  const std::uint64_t q = std::max<std::uint64_t>(1, at_least ? (want + unit - 1) / unit : (want + unit / 2) / unit);
  return q * unit;
}

// A shape row of a grid: M, N, wanted K, G, R.
struct Shape {
  std::uint64_t m, n, k;
  std::int64_t g, r;
};

std::string make_id(const CaseSpec& c, std::size_t index) {
  std::string id = std::to_string(index);
  while (id.size() < 4) id.insert(id.begin(), '0');
  id += "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) + "_k" + std::to_string(c.k) + "_g" +
        std::to_string(c.g) + "_r" + std::to_string(c.r) + (c.codebook ? "_cb" : "_uni") +
        (c.correction ? "_corr" : "") + (c.bias ? "_b" + std::string(dtype_name(c.bias_dtype)) : "") + "_x" +
        std::string(dtype_name(c.x_dtype)) + "_o" + std::string(dtype_name(c.out_dtype)) + "_" +
        std::string(data_kind_name(c.data));
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
  switch (c.data) {
    case DataKind::Ties:
      add("quantization and decode products exactly on .5 (round half to even)");
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
  // |acc| > 2^24 needs 127 * 127 * K > 2^24: K >= 1041.
  c.k = data == DataKind::LargeAcc ? legal_k(std::max<std::uint64_t>(sh.k, 1041), sh.g, sh.r, true)
                                   : legal_k(sh.k, sh.g, sh.r);
  c.x_dtype = kDtypes[i % 3];
  c.out_dtype = kDtypes[(i / 3) % 3];
  c.bias_dtype = kDtypes[(i / 9 + i) % 3];
  c.codebook = (i / 2) % 2 == 1;
  c.bias = i % 4 != 3;
  c.correction = correction;
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

void fill_layer(gemm::Layer& l, const CaseSpec& c, Rng& rng) {
  const std::uint64_t n = c.n, k = c.k, groups = k / std::uint64_t(c.g);
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
  for (auto& s : l.s_rel) s = random_scale_byte(rng, c.codebook);
  for (auto& s : l.s_channel) s = float(1e-4 + 1e-2 * rng.uniform());
  switch (c.data) {
    case DataKind::Ties: {
      // Decode products v * s exactly on .5: odd (uniform v) times x.5 scales, or x.5 levels times odd scales.
      constexpr std::uint8_t half_scales[] = {0x30, 0x3C, 0x42, 0x46, 0x4A, 0x4E};  // 0.5 1.5 2.5 3.5 5 7
      constexpr std::uint8_t odd_scales[] = {0x38, 0x40, 0x44, 0x48, 0x4A, 0x4C};   // 1 2 3 4 5 6 (odd ones tie)
      for (auto& s : l.s_rel) s = c.codebook ? odd_scales[rng.below(6)] : half_scales[rng.below(6)];
      break;
    }
    case DataKind::LargeAcc: {
      // w_q = +-127 everywhere (extreme codes, scale past the clamp), a few small codes so acc is
      // not a multiple of a large power of two; rows 0 and 1 all of one sign (largest |acc|).
      const std::uint8_t big = c.codebook ? 0x76 : 0x5A;  // 224 or 20: |v * s| > 127 at the extreme codes
      for (auto& s : l.s_rel) s = big;
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint64_t j = 0; j < k / 2; ++j) {
          auto code = [&](std::uint64_t col) -> std::uint8_t {
            if (i == 0) return 15;
            if (i == 1) return 0;
            if (rng.below(64) == 0) return std::uint8_t(rng.below(16));
            return ((col * 7 + i) % 3) ? 15 : 0;
          };
          l.weight[i * (k / 2) + j] = std::uint8_t(code(2 * j) | (code(2 * j + 1) << 4));
        }
      break;
    }
    case DataKind::Saturate:
      for (auto& s : l.s_rel) s = rng.below(2) ? 0x7E : 0xFE;  // +-448: every non-zero product clamps
      break;
    case DataKind::ZeroRows:
      for (std::uint64_t i = 0; i < n; i += 3) {
        if (!c.codebook) std::fill_n(l.weight.begin() + i * (k / 2), k / 2, std::uint8_t(0x88));  // value 0
        std::fill_n(l.s_rel.begin() + i * groups, groups, std::uint8_t(i % 2 ? 0x00 : 0x80));     // +-0 scale
      }
      for (std::uint64_t i = 1; i < n; i += 5) l.s_channel[i] = 0.0f;
      break;
    case DataKind::Random:
      break;
  }
  if (c.correction) {
    l.correction_shape = gemm::Shape{groups, n};
    l.correction.resize(groups * n);
    for (auto& v : l.correction) v = float(2e-3 * rng.uniform() - 1e-3);
  }
  if (c.bias) {
    l.bias_shape = gemm::Shape{n};
    l.bias_dtype = c.bias_dtype;
    l.bias.resize(n);
    const float mag = c.data == DataKind::Saturate ? 1000.f : 2.f;
    for (auto& v : l.bias) v = rnd_to(c.bias_dtype, mag * rng.normal());
  }
}

// A row whose rotated values y are (q + 0.5) * 2^e (and one 127 * 2^e, so scale = 2^e exactly):
// x = H y is exact in the dtype, and so is any order of evaluating rot(x), so x_rot / scale sits
// exactly on a .5 tie for every implementation. Non-zeros per block are limited so x stays exact in
// bf16 (1) and f16 (4).
void tie_row(float* x, const CaseSpec& c, Rng& rng) {
  const std::int64_t r = c.r, k = std::int64_t(c.k);
  const int e = -3 - rng.below(4);
  const float unit = std::ldexp(1.0f, e);
  const std::int64_t nnz = c.x_dtype == FloatDtype::F32   ? r
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
      x[b + i] = float(std::ldexp(s, -p));  // exact: dyadic with < 24 significant bits
    }
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
        break;
      case DataKind::LargeAcc:
        if (i + 1 < c.m || c.m == 1) {  // constant rows rotate to themselves: x_q = +-127 everywhere
          const float v = (i % 2 ? -1.f : 1.f) * (0.5f + float(rng.uniform()));
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
  } else if (grid == "standard") {
    add_shapes(cases, small_shapes(), seed, 0);
    add_shapes(cases, standard_shapes(false), seed, 2);
  } else if (grid == "full") {
    add_shapes(cases, small_shapes(), seed, 0);
    for (std::size_t rep = 0; rep < 5; ++rep) add_shapes(cases, standard_shapes(true), seed, rep);
  } else {
    return make_error(ErrorKind::UsageError, {"unknown grid '" + std::string(grid) + "' (small, standard, full)"});
  }
  finish(cases);
  return cases;
}

CaseData generate_case(const CaseSpec& c) {
  Rng rng(c.seed);
  CaseData d;
  d.layer = gemm::make_zero_layer(c.n, c.k, c.g, c.r);
  fill_layer(d.layer, c, rng);
  d.x = make_acts(c, rng);
  return d;
}

Status write_suite(const std::string& dir, const Manifest& m, const Progress& progress) {
  const std::string manifest_path = join_path(dir, "manifest.json");
  if (path_exists(manifest_path))
    return make_error(ErrorKind::UsageError,
                      {dir + " already holds an audit suite (manifest.json); choose a new --out"});
  W4A8_TRY(make_dirs(join_path(dir, "cases")));
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
    if (!bytes.ok()) return std::move(bytes).error();
    W4A8_TRY(write_file_atomic(join_path(dir, c.file), *bytes));
  }
  if (progress) progress(m.cases.size(), m.cases.size(), "");
  // One case a line, so the manifest stays readable and diffable.
  json::Value head = manifest_to_json(m);
  head.members.pop_back();  // cases, written below
  std::string text = json::dump(head);
  text.pop_back();
  text += ", \"cases\": [\n";
  for (std::size_t i = 0; i < m.cases.size(); ++i)
    text += "  " + json::dump(case_to_json(m.cases[i])) + (i + 1 < m.cases.size() ? ",\n" : "\n");
  text += "]}\n";
  return write_text_atomic(manifest_path, text);
}

Result<Manifest> read_suite(const std::string& dir) {
  auto text = read_text(join_path(dir, "manifest.json"), 64u << 20);
  if (!text.ok()) return std::move(text).error();
  return parse_manifest(*text);
}

Result<CaseData> load_case(const std::string& dir, const Manifest& m, const CaseSpec& c) {
  auto f = st::File::open(join_path(dir, c.file));
  if (!f.ok()) return std::move(f).error();
  CaseData d;
  auto layer = gemm::load_layer(*f, m.layer_prefix, c.g, c.r);
  if (!layer.ok()) return std::move(layer).error();
  d.layer = std::move(*layer);
  const st::TensorInfo* xt = f->header().find(m.input_key);
  if (!xt) return make_error(ErrorKind::UsageError, {c.file + " has no tensor " + m.input_key});
  if (!gemm::float_dtype_of(xt->dtype, d.x.dtype) || d.x.dtype != c.x_dtype)
    return make_error(ErrorKind::UsageError, {c.file + ": input dtype differs from the manifest's x_dtype"});
  auto xv = gemm::read_floats(*f, *xt, "input");
  if (!xv.ok()) return std::move(xv).error();
  d.x.shape = xt->shape;
  d.x.values = std::move(*xv);
  if (d.layer.N() != c.n || d.layer.K() != c.k || d.x.M() != c.m || d.x.K() != c.k)
    return make_error(ErrorKind::UsageError, {c.file + ": stored shapes differ from the manifest entry"});
  return d;
}

}  // namespace w4a8::audit
