// Reference W4A8 GEMM throughput: literal vs fast (each ISA), single- and multi-threaded, on real
// layer shapes. GOPS counts 2*M*N*K operations of the whole call (decode, rotation, quantization,
// integer GEMM, epilogue); GOPS_per_core divides by the threads used. The literal path is measured on
// a 64-row slice of the M=4096 shape (same N, K; it is ~100x slower and rows are independent).
// BM_Prepare / BM_Prepared split a layer's one-time decode from its per-batch cost (audits, small M);
// BM_AuditSuite runs a standard audit (docs/gemm.md) end to end. tools/upstream/ck_bench.py runs the
// BM_Prepared rows side by side with comfy-kitchen's eager path.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "gemm/int_kernels.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

struct Problem {
  Layer layer;
  Activations x;
};

// A random layer (bits 4 with the codebook, or 6 uniform; FP8 or F32 group scales) and activations.
Problem make_problem(std::uint64_t m, std::uint64_t n, std::uint64_t k, int bits = 4,
                     ScaleDtype scales = ScaleDtype::Fp8E4M3) {
  std::mt19937 rng(1);
  Problem p;
  p.layer = make_zero_layer(n, k, 16, 256, bits, scales);
  for (auto& b : p.layer.weight) b = std::uint8_t(rng());
  if (scales == ScaleDtype::F32) {
    for (std::size_t i = 0; i < p.layer.s_rel.size(); i += 4) {
      const float v = float(rng() % 64 + 1) / 16.0f;
      std::memcpy(&p.layer.s_rel[i], &v, 4);
    }
  } else {
    std::uniform_int_distribution<int> sb(0x30, 0x48);
    for (auto& s : p.layer.s_rel) s = std::uint8_t(sb(rng));
  }
  if (bits == 4) {
    p.layer.codebook_shape = Shape{16};
    p.layer.codebook = {-0.98f, -0.79f, -0.64f, -0.5f, -0.38f, -0.26f, -0.16f, -0.05f,
                        0.05f,  0.16f,  0.27f,  0.38f, 0.5f,   0.64f,  0.79f,  0.98f};
  }
  std::normal_distribution<float> nd;
  p.x.shape = {m, k};
  p.x.values.resize(m * k);
  for (auto& v : p.x.values) v = nd(rng);
  return p;
}

void set_counters(benchmark::State& st, std::uint64_t m, std::uint64_t n, std::uint64_t k, unsigned threads) {
  const double ops = 2.0 * double(m) * double(n) * double(k) * 1e-9;
  st.counters["GOPS"] = benchmark::Counter(ops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GOPS_per_core"] = benchmark::Counter(ops / threads, benchmark::Counter::kIsIterationInvariantRate);
}

// Args: M, N, K, impl (0 literal, 1 fast), isa (Isa enum), threads.
void BM_Gemm(benchmark::State& st) {
  const auto m = std::uint64_t(st.range(0)), n = std::uint64_t(st.range(1)), k = std::uint64_t(st.range(2));
  const Impl impl = st.range(3) ? Impl::Fast : Impl::Literal;
  GemmOptions opt;
  opt.isa = Isa(st.range(4));
  opt.threads = unsigned(st.range(5));
  if (impl == Impl::Fast && resolve_isa(opt.isa) != opt.isa) {
    st.SkipWithError("ISA not available on this CPU");
    return;
  }
  const Problem p = make_problem(m, n, k);
  for (auto _ : st) {
    auto r = gemm(impl, p.layer, p.x, opt);
    benchmark::DoNotOptimize(r);
  }
  st.SetLabel(std::string(impl == Impl::Literal ? "literal" : "fast/") +
              (impl == Impl::Fast ? std::string(isa_name(opt.isa)) : ""));
  set_counters(st, m, n, k, impl == Impl::Literal ? 1 : opt.threads);
}

// The integer panel kernel alone (the GEMM's inner loop), one core: Args M, N, K, isa.
void BM_IntKernel(benchmark::State& st) {
  const auto m = std::int64_t(st.range(0)), n = std::int64_t(st.range(1)), k = std::int64_t(st.range(2));
  const Isa isa = Isa(st.range(3));
  if (resolve_isa(isa) != isa) {
    st.SkipWithError("ISA not available on this CPU");
    return;
  }
  const kernels::PanelFn fn = isa == Isa::Avx512Vnni ? kernels::panel_avx512vnni
                              : isa == Isa::Avx2      ? kernels::panel_avx2
                                                      : kernels::panel_scalar;
  std::mt19937 rng(2);
  std::vector<std::int8_t> x(std::size_t(m * k)), panels(std::size_t((n / 64) * k * 64));
  for (auto& v : x) v = std::int8_t(int(rng() % 256) - 128);
  for (auto& v : panels) v = std::int8_t(int(rng() % 255) - 127);
  std::vector<std::int32_t> wsum(std::size_t(n), 0), acc(std::size_t(m * n));
  for (auto _ : st) {
    for (std::int64_t p = 0; p < n / 64; ++p)
      for (std::int64_t r0 = 0; r0 < m; r0 += 48)
        fn(&x[std::size_t(r0 * k)], std::min<std::int64_t>(48, m - r0), k, &panels[std::size_t(p * k * 64)],
           &wsum[std::size_t(p * 64)], &acc[std::size_t(r0 * n + p * 64)], n, 64);
    benchmark::DoNotOptimize(acc.data());
  }
  st.SetLabel(std::string(isa_name(isa)));
  set_counters(st, std::uint64_t(m), std::uint64_t(n), std::uint64_t(k), 1);
}

constexpr int kScalar = int(Isa::Scalar), kAvx2 = int(Isa::Avx2), kVnni = int(Isa::Avx512Vnni);

void big_layer(benchmark::internal::Benchmark* b) {
  b->Args({64, 3072, 3072, 0, kScalar, 1});  // literal, 64-row slice
  for (int isa : {kAvx2, kVnni})
    for (int t : {1, 2}) b->Args({4096, 3072, 3072, 1, isa, t});
  b->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();
}

void decode_bound(benchmark::internal::Benchmark* b) {
  for (int m : {1, 16}) {
    b->Args({m, 8192, 8192, 0, kScalar, 1});
    for (int isa : {kAvx2, kVnni})
      for (int t : {1, 2}) b->Args({m, 8192, 8192, 1, isa, t});
  }
  b->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
}

// One-time cost of a prepared layer (decode to w_q, pack panels): Args N, K, bits, F32 scales, threads.
void BM_Prepare(benchmark::State& st) {
  const auto n = std::uint64_t(st.range(0)), k = std::uint64_t(st.range(1));
  const Problem p = make_problem(1, n, k, int(st.range(2)), st.range(3) ? ScaleDtype::F32 : ScaleDtype::Fp8E4M3);
  GemmOptions opt;
  opt.threads = unsigned(st.range(4));
  for (auto _ : st) {
    auto r = prepare_layer(p.layer, opt);
    benchmark::DoNotOptimize(r);
  }
  st.counters["weights_per_s"] = benchmark::Counter(double(n * k), benchmark::Counter::kIsIterationInvariantRate);
  st.SetLabel(std::to_string(st.range(2)) + "-bit " + (st.range(3) ? "f32" : "fp8") + " scales");
}

// Per-batch cost through a prepared layer: Args M, N, K, isa, threads. GOPS as BM_Gemm.
void BM_Prepared(benchmark::State& st) {
  const auto m = std::uint64_t(st.range(0)), n = std::uint64_t(st.range(1)), k = std::uint64_t(st.range(2));
  GemmOptions opt;
  opt.isa = Isa(st.range(3));
  opt.threads = unsigned(st.range(4));
  if (resolve_isa(opt.isa) != opt.isa) {
    st.SkipWithError("ISA not available on this CPU");
    return;
  }
  const Problem p = make_problem(m, n, k);
  auto prep = prepare_layer(p.layer, opt);
  if (!prep.ok()) {
    st.SkipWithError(prep.error().message.c_str());
    return;
  }
  for (auto _ : st) {
    auto r = gemm_prepared(*prep, p.x, opt);
    benchmark::DoNotOptimize(r);
  }
  st.SetLabel("prepared/" + std::string(isa_name(opt.isa)));
  set_counters(st, m, n, k, opt.threads);
}

// A standard audit: the linear layers of a 3072-wide diffusion transformer block stack plus a few
// 8192-wide ones (Args: threads). Each layer is prepared once and runs 4 activation batches of M = 4,
// as an audit comparing a kernel with the reference at small M does.
void BM_AuditSuite(benchmark::State& st) {
  struct Shape3 { std::uint64_t n, k; int count; };
  const Shape3 suite[] = {{3072, 3072, 200}, {12288, 3072, 40}, {3072, 12288, 40}, {8192, 8192, 4}};
  GemmOptions opt;
  opt.threads = unsigned(st.range(0));
  std::uint64_t layers = 0;
  double ops = 0;
  for (auto _ : st) {
    layers = 0;
    ops = 0;
    for (const auto& s : suite) {
      const Problem p = make_problem(4, s.n, s.k);  // one random layer per shape, prepared `count` times
      for (int c = 0; c < s.count; ++c) {
        auto prep = prepare_layer(p.layer, opt);
        for (int b = 0; b < 4; ++b) {
          auto r = gemm_prepared(*prep, p.x, opt);
          benchmark::DoNotOptimize(r);
        }
        ++layers;
        ops += 4 * 2.0 * 4 * double(s.n) * double(s.k);
      }
    }
  }
  st.counters["layers"] = double(layers);
  st.counters["GOPS"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Gemm)->Apply(big_layer);
// Unprepared fast path at M = 256 on the 8192 layer (the prepared comparison's third row).
BENCHMARK(BM_Gemm)->Args({256, 8192, 8192, 1, kVnni, 1})->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK(BM_Prepare)
    ->Args({8192, 8192, 4, 0, 1})
    ->Args({8192, 8192, 6, 0, 1})
    ->Args({8192, 8192, 4, 1, 1})
    ->Args({8192, 8192, 4, 0, 2})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();
BENCHMARK(BM_Prepared)
    ->Args({1, 8192, 8192, kVnni, 1})
    ->Args({16, 8192, 8192, kVnni, 1})
    ->Args({256, 8192, 8192, kVnni, 1})
    ->Args({1, 8192, 8192, kAvx2, 1})
    ->Args({16, 8192, 8192, kAvx2, 1})
    ->Args({256, 8192, 8192, kAvx2, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5)
    ->UseRealTime();
BENCHMARK(BM_AuditSuite)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Gemm)->Apply(decode_bound);
BENCHMARK(BM_IntKernel)
    ->Args({384, 3072, 3072, kScalar})
    ->Args({384, 3072, 3072, kAvx2})
    ->Args({384, 3072, 3072, kVnni})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace w4a8::gemm

BENCHMARK_MAIN();
