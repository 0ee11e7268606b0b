// Reference W4A8 GEMM throughput: literal vs fast (each ISA), single- and multi-threaded, on real
// layer shapes. GOPS counts 2*M*N*K operations of the whole call (decode, rotation, quantization,
// integer GEMM, epilogue); GOPS_per_core divides by the threads used. The literal path is measured on
// a 64-row slice of the M=4096 shape (same N, K; it is ~100x slower and rows are independent).
#include <benchmark/benchmark.h>

#include <random>

#include "gemm/int_kernels.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

struct Problem {
  Layer layer;
  Activations x;
};

Problem make_problem(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  std::mt19937 rng(1);
  Problem p;
  p.layer = make_zero_layer(n, k, 16, 256);
  for (auto& b : p.layer.weight) b = std::uint8_t(rng());
  std::uniform_int_distribution<int> sb(0x30, 0x48);
  for (auto& s : p.layer.s_rel) s = std::uint8_t(sb(rng));
  p.layer.codebook_shape = Shape{16};
  p.layer.codebook = {-0.98f, -0.79f, -0.64f, -0.5f, -0.38f, -0.26f, -0.16f, -0.05f,
                      0.05f,  0.16f,  0.27f,  0.38f, 0.5f,   0.64f,  0.79f,  0.98f};
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

BENCHMARK(BM_Gemm)->Apply(big_layer);
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
