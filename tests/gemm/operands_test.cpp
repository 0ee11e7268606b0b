// Operand validation, per comfy-kitchen release: one defect per enum value, each applied to a random
// valid operand set, must give exactly the message upstream's f-string would print (built here by
// hand from the documented rules), and earlier checks win when defects combine (the order law).
// Profile 0.2.35 (K = 2 * cols, one combined contract message) is tested with the Defect enum below,
// profile 0.2.40 (K from the scale grid, 4/6 bits) with Defect40. Random multi-defect sets are
// checked against the real comfy-kitchen by gemm_ck_golden_test / gemm_ck_live_test.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "gemm/operands.hpp"

namespace w4a8::gemm {
namespace {

using upstream::ComfyKitchen;
constexpr ComfyKitchen kV35 = ComfyKitchen::V0_2_35;
constexpr ComfyKitchen kV40 = ComfyKitchen::V0_2_40;

std::string tup(std::initializer_list<std::uint64_t> v) {
  std::string s = "(";
  std::size_t i = 0;
  for (auto x : v) s += (i++ ? ", " : "") + std::to_string(x);
  return s + (v.size() == 1 ? ",)" : ")");
}

enum class Defect {
  WeightRank, WeightDtype, GroupTooSmall, KNot16, KNotGroup, KNotConvrot, GroupShape, SRelShape,
  SChannelShape, CorrectionShape, CodebookShape, InputK, HadamardNotPow4, SRelDtype, InputDtype,
  BiasShape, kCount
};

struct Built {
  OperandDesc d;
  std::string want;  // expected message; empty = accepted
};

// A valid operand set (N, K, G, R) with optional tensors, then exactly one defect.
Built build(Defect defect) {
  const std::int64_t g = *rc::gen::element<std::int64_t>(4, 8, 16, 32);
  const std::int64_t r = *rc::gen::element<std::int64_t>(4, 16, 64);
  const std::uint64_t unit = std::uint64_t(std::max<std::int64_t>({16, g, r}));
  const std::uint64_t k = unit * *rc::gen::inRange<std::uint64_t>(1, 6);
  const std::uint64_t n = *rc::gen::inRange<std::uint64_t>(1, 50), m = *rc::gen::inRange<std::uint64_t>(1, 9);
  const std::uint64_t groups = k / std::uint64_t(g);
  Built b;
  OperandDesc& d = b.d;
  d.weight = {st::Dtype::I8, {n, k / 2}};
  d.s_rel = {st::Dtype::F8_E4M3, {n, groups}};
  d.s_channel = {st::Dtype::F32, {n}};
  d.codebook = TensorDesc{st::Dtype::F32, {16}};
  d.correction = TensorDesc{st::Dtype::F32, {groups, n}};
  d.bias = TensorDesc{st::Dtype::BF16, {n}};
  d.input = {st::Dtype::F32, {m, k}};
  d.group_size = g;
  d.convrot_groupsize = r;
  const std::string contract_tail = "; group_size must be >=4 and divide 16 or be a multiple of 16";
  auto contract = [&](std::uint64_t kk, std::int64_t gg, std::int64_t rr) {
    return "K=" + std::to_string(kk) + " must be divisible by 16, group_size=" + std::to_string(gg) +
           ", and convrot_groupsize=" + std::to_string(rr) + contract_tail;
  };
  switch (defect) {
    case Defect::WeightRank:
      d.weight.shape = *rc::gen::element(Shape{n}, Shape{n, k / 2, 1}, Shape{});
      b.want = "packed weight must be a 2D int8 tensor";
      break;
    case Defect::WeightDtype:
      d.weight.dtype = *rc::gen::element(st::Dtype::U8, st::Dtype::F32, st::Dtype::I32);
      b.want = "packed weight must be a 2D int8 tensor";
      break;
    case Defect::GroupTooSmall:
      d.group_size = *rc::gen::inRange<std::int64_t>(-5, 4);
      b.want = contract(k, d.group_size, r);
      break;
    case Defect::KNot16: {
      const std::uint64_t half = *rc::gen::suchThat(rc::gen::inRange<std::uint64_t>(1, 200),
                                                    [](std::uint64_t h) { return (2 * h) % 16 != 0; });
      d.weight.shape = {n, half};
      b.want = contract(2 * half, g, r);
      break;
    }
    case Defect::KNotGroup:
      d.group_size = 48;
      d.weight.shape = {n, 8};  // K = 16
      b.want = contract(16, 48, r);
      break;
    case Defect::KNotConvrot:
      d.convrot_groupsize = std::int64_t(k) * 4;
      b.want = contract(k, g, d.convrot_groupsize);
      break;
    case Defect::GroupShape:
      d.group_size = *rc::gen::element<std::int64_t>(5, 6, 12, 24, 40);
      d.weight.shape = {n, std::uint64_t(d.group_size) * 8 * 3};  // K divisible by 16 and by G
      d.convrot_groupsize = 4;
      b.want = contract(std::uint64_t(d.group_size) * 16 * 3, d.group_size, 4);
      break;
    case Defect::SRelShape:
      d.s_rel.shape = *rc::gen::element(Shape{n, groups + 1}, Shape{groups, n + 1}, Shape{n});
      b.want = "s_rel must have shape " + tup({n, groups}) + ", got " + shape_repr(d.s_rel.shape);
      break;
    case Defect::SChannelShape:
      d.s_channel.shape = *rc::gen::element(Shape{n + 1}, Shape{n, 1}, Shape{});
      b.want = "s_channel must have shape " + tup({n}) + ", got " + shape_repr(d.s_channel.shape);
      break;
    case Defect::CorrectionShape:
      d.correction->shape = *rc::gen::element(Shape{n, groups + 1}, Shape{groups}, Shape{groups, n, 1});
      b.want = "correction must have shape " + tup({groups, n}) + ", got " + shape_repr(d.correction->shape);
      break;
    case Defect::CodebookShape:
      d.codebook->shape = *rc::gen::element(Shape{15}, Shape{16, 1}, Shape{});
      b.want = "codebook must have shape (16,), got " + shape_repr(d.codebook->shape);
      break;
    case Defect::InputK: {
      const std::uint64_t xk = *rc::gen::suchThat(rc::gen::inRange<std::uint64_t>(0, 2000),
                                                  [&](std::uint64_t v) { return v != k; });
      d.input.shape = {m, xk};
      b.want = "Input K=" + std::to_string(xk) + " does not match qdata K=" + std::to_string(k);
      break;
    }
    case Defect::HadamardNotPow4:
      d.convrot_groupsize = *rc::gen::element<std::int64_t>(-16, -4, 2, 8, 32);
      d.weight.shape = {n, 32};  // K = 64: divisible by every candidate
      d.s_rel.shape = {n, 64 / std::uint64_t(g)};
      d.correction->shape = {64 / std::uint64_t(g), n};
      d.input.shape = {m, 64};
      b.want = "Regular Hadamard size must be a power of 4, got " + std::to_string(d.convrot_groupsize);
      break;
    case Defect::SRelDtype:
      d.s_rel.dtype = st::Dtype::BF16;
      b.want = "s_rel must be F8_E4M3 or F32, got BF16";
      break;
    case Defect::InputDtype:
      d.input.dtype = st::Dtype::I8;
      b.want = "input must be F32, BF16 or F16, got I8";
      break;
    case Defect::BiasShape:
      d.bias->shape = {n + 1};
      b.want = "bias must have shape " + tup({n}) + ", got " + tup({n + 1});
      break;
    case Defect::kCount:
      break;
  }
  return b;
}

// Law 1 (0.2.35): each defect alone gives exactly its message.
RC_GTEST_PROP(Operands035, EachDefectGivesItsExactMessage, ()) {
  const auto defect = Defect(*rc::gen::inRange(0, int(Defect::kCount)));
  const Built b = build(defect);
  const Status s = validate_operands(b.d, kV35);
  RC_ASSERT(!s.ok());
  RC_ASSERT(s.error().message == b.want);
}

// Law 2 (0.2.35): the valid set passes (the kCount "defect" leaves it untouched).
RC_GTEST_PROP(Operands035, ValidSetPasses, ()) {
  const Built b = build(Defect::kCount);
  RC_ASSERT(validate_operands(b.d, kV35).ok());
  RC_ASSERT(validate_operands(b.d, kV40).ok());  // a valid 4-bit set is valid in both releases
}

// Law 3 (0.2.35 order): combined with a later-checked shape defect, a packed-weight defect still wins.
RC_GTEST_PROP(Operands035, EarlierCheckWins, ()) {
  Built b = build(Defect::SChannelShape);
  b.d.codebook->shape = {3};
  b.d.input.shape = {1, 3};
  RC_ASSERT(validate_operands(b.d, kV35).error().message == b.want);
  b.d.weight.dtype = st::Dtype::U8;
  RC_ASSERT(validate_operands(b.d, kV35).error().message == "packed weight must be a 2D int8 tensor");
}

TEST(Operands035, HandDerivedCases) {
  OperandDesc d;
  d.weight = {st::Dtype::I8, {3, 8}};  // K = 16
  d.s_rel = {st::Dtype::F8_E4M3, {3, 1}};
  d.s_channel = {st::Dtype::F32, {3}};
  d.input = {st::Dtype::BF16, {5, 16}};
  d.group_size = 16;
  d.convrot_groupsize = 16;
  EXPECT_TRUE(validate_operands(d, kV35).ok());
  d.input.shape = {16};  // upstream accepts any [..., K]
  EXPECT_TRUE(validate_operands(d, kV35).ok());
  d.input.shape = {};
  EXPECT_EQ(validate_operands(d, kV35).error().kind, ErrorKind::UsageError);
  d.input.shape = {2, 3, 16};
  EXPECT_TRUE(validate_operands(d, kV35).ok());
  d.s_rel.shape = {3, 2};
  EXPECT_EQ(validate_operands(d, kV35).error().message, "s_rel must have shape (3, 1), got (3, 2)");
  d.s_rel.shape = {3, 1};
  d.convrot_groupsize = 0;  // upstream: ZeroDivisionError (no ValueError): reported as usage error
  EXPECT_EQ(validate_operands(d, kV35).error().kind, ErrorKind::UsageError);
  d.convrot_groupsize = -16;  // Python: 16 % -16 == 0, so only the Hadamard check catches it
  EXPECT_EQ(validate_operands(d, kV35).error().message, "Regular Hadamard size must be a power of 4, got -16");
  // Upstream's math.log(size, 4) % 1 rejects 4^29 even though it is a power of 4.
  d.convrot_groupsize = std::int64_t(1) << 58;
  d.weight.shape = {3, std::uint64_t(1) << 57};
  d.s_rel.shape = {3, std::uint64_t(1) << 54};
  d.input.shape = {1, std::uint64_t(1) << 58};
  EXPECT_EQ(validate_operands(d, kV35).error().message,
            "Regular Hadamard size must be a power of 4, got 288230376151711744");
  // K beyond 64 bits is printed exactly.
  d.weight.shape = {1, std::uint64_t(1) << 63};
  d.group_size = 3;
  EXPECT_EQ(validate_operands(d, kV35).error().message,
            "K=18446744073709551616 must be divisible by 16, group_size=3, and convrot_groupsize="
            "288230376151711744; group_size must be >=4 and divide 16 or be a multiple of 16");
}


// ---- profile 0.2.40 (comfy-kitchen >= 0.2.36): K from the scale grid, 4 or 6 bits ---------------

enum class Defect40 {
  WeightRank, WeightDtype, SRelRank, GroupSize, RowWidth, KZero, SixBitK32, SixBitG16, SixBitCodebook,
  SixBitCorrection, KNot16, KNotConvrot, SRelRows, SChannelShape, CorrectionShape, CodebookShape, InputK,
  HadamardNotPow4, SRelDtype, kCount
};

// A valid 4- or 6-bit operand set, then exactly one defect, with the message upstream would print.
Built build40(Defect40 defect) {
  const int bits = *rc::gen::element(4, 6);
  const std::int64_t g = bits == 6 ? *rc::gen::element<std::int64_t>(16, 32) : *rc::gen::element<std::int64_t>(4, 8, 16, 32);
  const std::int64_t r = *rc::gen::element<std::int64_t>(4, 16, 64);
  const std::uint64_t unit = std::uint64_t(std::max<std::int64_t>({32, g, r}));
  const std::uint64_t k = unit * *rc::gen::inRange<std::uint64_t>(1, 6);
  const std::uint64_t n = *rc::gen::inRange<std::uint64_t>(1, 50), m = *rc::gen::inRange<std::uint64_t>(1, 9);
  const std::uint64_t groups = k / std::uint64_t(g), cols = k * std::uint64_t(bits) / 8;
  Built b;
  OperandDesc& d = b.d;
  d.weight = {st::Dtype::I8, {n, cols}};
  d.s_rel = {*rc::gen::element(st::Dtype::F8_E4M3, st::Dtype::F32), {n, groups}};
  d.s_channel = {st::Dtype::F32, {n}};
  if (bits == 4) {
    d.codebook = TensorDesc{st::Dtype::F32, {16}};
    d.correction = TensorDesc{st::Dtype::F32, {groups, n}};
  }
  d.bias = TensorDesc{st::Dtype::BF16, {n}};
  d.input = {st::Dtype::F32, {m, k}};
  d.group_size = g;
  d.convrot_groupsize = r;
  const std::string ks = std::to_string(k);
  switch (defect) {
    case Defect40::WeightRank:
      d.weight.shape = *rc::gen::element(Shape{n}, Shape{n, cols, 1}, Shape{});
      b.want = "packed weight must be a 2D int8 tensor";
      break;
    case Defect40::WeightDtype:
      d.weight.dtype = *rc::gen::element(st::Dtype::U8, st::Dtype::F32);
      b.want = "packed weight must be a 2D int8 tensor";
      break;
    case Defect40::SRelRank:
      d.s_rel.shape = *rc::gen::element(Shape{n * groups}, Shape{n, groups, 1});
      b.want = "s_rel must be 2D [N, K/group_size]";
      break;
    case Defect40::GroupSize:
      d.group_size = *rc::gen::element<std::int64_t>(-4, 0, 3, 5, 12, 24, 40);
      b.want = "group_size=" + std::to_string(d.group_size) + " must be >=4 and divide 16 or be a multiple of 16";
      break;
    case Defect40::RowWidth: {
      const std::uint64_t c2 = *rc::gen::suchThat(rc::gen::inRange<std::uint64_t>(0, 4 * cols + 4),
                                                  [&](std::uint64_t c) { return c * 8 != k * 4 && c * 8 != k * 6; });
      d.weight.shape = {n, c2};
      b.want = "packed row width " + std::to_string(c2) + " does not match K=" + ks + " at 4 or 6 bits";
      break;
    }
    case Defect40::KZero:
      d.s_rel.shape = {n, 0};
      b.want = "packed row width " + std::to_string(cols) + " does not match K=0 at 4 or 6 bits";
      break;
    case Defect40::SixBitK32:  // K = 48 at 6 bits (36 bytes a row), G = 16
      d.group_size = 16;
      d.s_rel.shape = {n, 3};
      d.weight.shape = {n, 36};
      b.want = "6-bit storage needs K divisible by 32 and group_size a multiple of 16, got K=48, group_size=16";
      break;
    case Defect40::SixBitG16:  // K = 64 at 6 bits with G = 8
      d.group_size = 8;
      d.s_rel.shape = {n, 8};
      d.weight.shape = {n, 48};
      b.want = "6-bit storage needs K divisible by 32 and group_size a multiple of 16, got K=64, group_size=8";
      break;
    case Defect40::SixBitCodebook:
    case Defect40::SixBitCorrection:
      d.weight.shape = {n, k * 6 / 8};
      if (g % 16 != 0) {  // keep the layout legal so the uniform-only rule is the one that fires
        d.group_size = 16;
        d.s_rel.shape = {n, k / 16};
      }
      d.codebook.reset();
      d.correction.reset();
      if (defect == Defect40::SixBitCodebook) d.codebook = TensorDesc{st::Dtype::F32, {16}};
      else d.correction = TensorDesc{st::Dtype::F32, {k / std::uint64_t(d.group_size), n}};
      b.want = "6-bit storage is uniform and symmetric: no codebook or correction";
      break;
    case Defect40::KNot16:  // K = 8 or 24 through the scale grid at G = 4
      d.group_size = 4;
      d.s_rel.shape = {n, *rc::gen::element<std::uint64_t>(2, 6)};
      d.weight.shape = {n, d.s_rel.shape[1] * 2};
      d.codebook.reset();
      d.correction.reset();
      b.want = "K=" + std::to_string(d.s_rel.shape[1] * 4) + " must be divisible by 16 and convrot_groupsize=" +
               std::to_string(r);
      break;
    case Defect40::KNotConvrot:
      d.convrot_groupsize = std::int64_t(k) * 4;
      b.want = "K=" + ks + " must be divisible by 16 and convrot_groupsize=" + std::to_string(d.convrot_groupsize);
      break;
    case Defect40::SRelRows:
      d.s_rel.shape = {n + 1, groups};
      b.want = "s_rel must have shape " + tup({n, groups}) + ", got " + tup({n + 1, groups});
      break;
    case Defect40::SChannelShape:
      d.s_channel.shape = *rc::gen::element(Shape{n + 1}, Shape{n, 1}, Shape{});
      b.want = "s_channel must have shape " + tup({n}) + ", got " + shape_repr(d.s_channel.shape);
      break;
    case Defect40::CorrectionShape:
      if (bits == 6) {  // at 6 bits any correction is refused earlier: use 4 bits
        d.weight.shape = {n, k / 2};
      }
      d.correction = TensorDesc{st::Dtype::F32, *rc::gen::element(Shape{n, groups + 1}, Shape{groups}, Shape{groups, n, 1})};
      b.want = "correction must have shape " + tup({groups, n}) + ", got " + shape_repr(d.correction->shape);
      break;
    case Defect40::CodebookShape:
      if (bits == 6) d.weight.shape = {n, k / 2};
      d.codebook = TensorDesc{st::Dtype::F32, *rc::gen::element(Shape{15}, Shape{16, 1}, Shape{})};
      b.want = "codebook must have shape (16,), got " + shape_repr(d.codebook->shape);
      break;
    case Defect40::InputK: {
      const std::uint64_t xk = *rc::gen::suchThat(rc::gen::inRange<std::uint64_t>(0, 2000),
                                                  [&](std::uint64_t v) { return v != k; });
      d.input.shape = {m, xk};
      b.want = "Input K=" + std::to_string(xk) + " does not match qdata K=" + ks;
      break;
    }
    case Defect40::HadamardNotPow4:
      d.convrot_groupsize = *rc::gen::element<std::int64_t>(-16, -4, 2, 8, 32);
      d.group_size = 16;
      d.s_rel.shape = {n, 4};  // K = 64: divisible by every candidate
      d.weight.shape = {n, 64 * std::uint64_t(bits) / 8};
      if (d.correction) d.correction->shape = {4, n};
      d.input.shape = {m, 64};
      b.want = "Regular Hadamard size must be a power of 4, got " + std::to_string(d.convrot_groupsize);
      break;
    case Defect40::SRelDtype:
      d.s_rel.dtype = st::Dtype::F16;
      b.want = "s_rel must be F8_E4M3 or F32, got F16";
      break;
    case Defect40::kCount:
      break;
  }
  return b;
}

RC_GTEST_PROP(Operands040, EachDefectGivesItsExactMessage, ()) {
  const auto defect = Defect40(*rc::gen::inRange(0, int(Defect40::kCount)));
  const Built b = build40(defect);
  const Status s = validate_operands(b.d, kV40);
  RC_ASSERT(!s.ok());
  RC_ASSERT(s.error().message == b.want);
}

RC_GTEST_PROP(Operands040, ValidSetPasses, ()) {
  const Built b = build40(Defect40::kCount);
  RC_ASSERT(validate_operands(b.d, kV40).ok());
}

// Order law: the listed checks are applied in this order, so with every defect of a set present the
// first one's message wins; dropping defects from the front reveals the next.
TEST(Operands040, SeveralDefectsReportTheFirstInUpstreamOrder) {
  OperandDesc d;
  d.weight = {st::Dtype::I8, {3, 48}};      // 6-bit row width for K = 64 ...
  d.s_rel = {st::Dtype::F32, {3, 8}};       // ... with G = 8: layout defect
  d.s_channel = {st::Dtype::F32, {4}};      // s_channel defect
  d.codebook = TensorDesc{st::Dtype::F32, {15}};  // codebook on 6 bits, wrong shape
  d.input = {st::Dtype::F32, {2, 60}};      // input defect
  d.group_size = 8;
  d.convrot_groupsize = 64;
  EXPECT_EQ(validate_operands(d, kV40).error().message,
            "6-bit storage needs K divisible by 32 and group_size a multiple of 16, got K=64, group_size=8");
  d.group_size = 16;
  d.s_rel.shape = {3, 4};
  EXPECT_EQ(validate_operands(d, kV40).error().message, "6-bit storage is uniform and symmetric: no codebook or correction");
  d.weight.shape = {3, 32};                  // 4 bits now
  EXPECT_EQ(validate_operands(d, kV40).error().message, "s_channel must have shape (3,), got (4,)");
  d.s_channel.shape = {3};
  EXPECT_EQ(validate_operands(d, kV40).error().message, "codebook must have shape (16,), got (15,)");
  d.codebook->shape = {16};
  EXPECT_EQ(validate_operands(d, kV40).error().message, "Input K=60 does not match qdata K=64");
  d.input.shape = {2, 64};
  EXPECT_TRUE(validate_operands(d, kV40).ok());
  // The same K/R defect reads differently per release: 0.2.35 derives K from the row width.
  d.convrot_groupsize = 256;
  EXPECT_EQ(validate_operands(d, kV40).error().message, "K=64 must be divisible by 16 and convrot_groupsize=256");
  EXPECT_EQ(validate_operands(d, kV35).error().message,
            "K=64 must be divisible by 16, group_size=16, and convrot_groupsize=256; group_size must be >=4 and "
            "divide 16 or be a multiple of 16");
  // G is checked before the row width; the s_rel rank before G.
  d.group_size = 5;
  d.weight.shape = {3, 7};
  EXPECT_EQ(validate_operands(d, kV40).error().message, "group_size=5 must be >=4 and divide 16 or be a multiple of 16");
  d.s_rel.shape = {12};
  EXPECT_EQ(validate_operands(d, kV40).error().message, "s_rel must be 2D [N, K/group_size]");
  d.weight.dtype = st::Dtype::U8;
  EXPECT_EQ(validate_operands(d, kV40).error().message, "packed weight must be a 2D int8 tensor");
}

TEST(Operands040, HandDerivedCases) {
  OperandDesc d;
  d.weight = {st::Dtype::I8, {3, 24}};  // 6 bits, K = 32
  d.s_rel = {st::Dtype::F8_E4M3, {3, 2}};
  d.s_channel = {st::Dtype::F32, {3}};
  d.input = {st::Dtype::BF16, {5, 32}};
  d.group_size = 16;
  d.convrot_groupsize = 16;
  EXPECT_TRUE(validate_operands(d, kV40).ok());
  // 0.2.35 reads the same row as 4-bit K = 48: its s_rel shape check fails.
  EXPECT_EQ(validate_operands(d, kV35).error().message, "s_rel must have shape (3, 3), got (3, 2)");
  d.convrot_groupsize = 0;  // K % 0: ZeroDivisionError upstream
  EXPECT_EQ(validate_operands(d, kV40).error().message,
            "convrot_groupsize=0: upstream raises ZeroDivisionError: integer modulo by zero");
  d.convrot_groupsize = -16;  // Python: 32 % -16 == 0
  EXPECT_EQ(validate_operands(d, kV40).error().message, "Regular Hadamard size must be a power of 4, got -16");
  d.convrot_groupsize = 16;
  d.input.shape = {};
  EXPECT_EQ(validate_operands(d, kV40).error().message, "input is 0-d: upstream raises IndexError: tuple index out of range");
  // K from a huge scale grid: printed exactly, the product never overflows.
  d.input.shape = {1, 32};
  d.s_rel.shape = {3, std::uint64_t(1) << 63};
  d.group_size = std::int64_t(1) << 62;
  EXPECT_EQ(validate_operands(d, kV40).error().message,
            "packed row width 24 does not match K=42535295865117307932921825928971026432 at 4 or 6 bits");
}

TEST(Operands, ReleaseToProfile) {
  EXPECT_EQ(comfy_kitchen_for_release("0.2.30"), kV35);
  EXPECT_EQ(comfy_kitchen_for_release("0.2.35"), kV35);
  EXPECT_EQ(comfy_kitchen_for_release("0.2.36"), kV40);
  EXPECT_EQ(comfy_kitchen_for_release("0.2.39"), kV40);
  EXPECT_EQ(comfy_kitchen_for_release("0.2.40"), kV40);
  EXPECT_EQ(comfy_kitchen_for_release("0.2.100"), kV40);
  EXPECT_EQ(comfy_kitchen_for_release("1.0"), kV40);
  EXPECT_EQ(comfy_kitchen_for_release("0.2"), kV35);
  for (const char* bad : {"", "0..2", "0.2.", ".1", "0.2.40rc1", "v0.2.40", "99999999999999999999999"})
    EXPECT_FALSE(comfy_kitchen_for_release(bad).has_value()) << bad;
}

TEST(Operands, HugeShapesAreRefusedNotAllocated) {
  OperandDesc d;
  d.weight = {st::Dtype::I8, {std::uint64_t(1) << 40, 8}};
  d.s_rel = {st::Dtype::F8_E4M3, {std::uint64_t(1) << 40, 1}};
  d.s_channel = {st::Dtype::F32, {std::uint64_t(1) << 40}};
  d.input = {st::Dtype::F32, {1, 16}};
  d.group_size = 16;
  d.convrot_groupsize = 16;
  EXPECT_EQ(validate_operands(d).error().kind, ErrorKind::OpTooLarge);
}

// A valid 4-bit layer [n, 64] (G = 16, R = 16) and an F32 input of `input` shape.
OperandDesc small_layer(std::uint64_t n, Shape input, bool correction = false) {
  OperandDesc d;
  d.weight = {st::Dtype::I8, {n, 32}};
  d.s_rel = {st::Dtype::F8_E4M3, {n, 4}};
  d.s_channel = {st::Dtype::F32, {n}};
  if (correction) d.correction = TensorDesc{st::Dtype::F32, {4, n}};
  d.input = {st::Dtype::F32, std::move(input)};
  d.group_size = 16;
  d.convrot_groupsize = 16;
  return d;
}

// Empty problems past upstream's checks. Messages copied from comfy-kitchen 0.2.40 and 0.2.35 (their
// eager w4a8_int8_linear on such operands, ~/.cache/w4a8check/ck-venv, torch 2.15 CPU, 2026-12-06):
// the integer path raises, the correction path (F.linear) returns an empty or zero result; the
// library computes every one of them unless asked for upstream's behaviour (EmptyProblem::AsUpstream).
TEST(Operands, EmptyProblemsAsUpstream) {
  const std::string cat = "torch.cat(): expected a non-empty list of Tensors";
  for (ComfyKitchen ck : {kV35, kV40}) {
    for (const Shape& x : {Shape{0, 64}, Shape{2, 0, 64}, Shape{0, 0, 64}}) {
      EXPECT_TRUE(validate_operands(small_layer(3, x), ck).ok());
      const Status s = validate_operands(small_layer(3, x), ck, EmptyProblem::AsUpstream);
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.error().kind, ErrorKind::OpEmptyBatch);
      EXPECT_EQ(s.error().message, cat);
      EXPECT_EQ(s.error().type(), "ValueError");
      EXPECT_EQ(error_info(s.error().kind).exit, ExitClass::Reject);
      EXPECT_TRUE(validate_operands(small_layer(3, x, true), ck, EmptyProblem::AsUpstream).ok());
    }
    EXPECT_TRUE(validate_operands(small_layer(3, {1, 64}), ck, EmptyProblem::AsUpstream).ok());
    EXPECT_TRUE(validate_operands(small_layer(3, {64}), ck, EmptyProblem::AsUpstream).ok());  // 1-D: M = 1
    // N = 0 (chunk sizing divides by N * 4) comes before M = 0.
    for (const Shape& x : {Shape{2, 64}, Shape{0, 64}}) {
      const Status n0 = validate_operands(small_layer(0, x), ck, EmptyProblem::AsUpstream);
      ASSERT_FALSE(n0.ok());
      EXPECT_EQ(n0.error().kind, ErrorKind::UsageError);
      EXPECT_EQ(n0.error().message, "N=0: upstream raises ZeroDivisionError: integer division or modulo by zero");
      EXPECT_TRUE(validate_operands(small_layer(0, x), ck).ok());
      EXPECT_TRUE(validate_operands(small_layer(0, x, true), ck, EmptyProblem::AsUpstream).ok());
    }
    // Upstream's checks come first (the Hadamard size is built before the chunks), ours after
    // (upstream adds the bias only to the concatenated chunks).
    OperandDesc h = small_layer(3, {0, 64});
    h.convrot_groupsize = 8;
    EXPECT_EQ(validate_operands(h, ck, EmptyProblem::AsUpstream).error().kind, ErrorKind::OpHadamardSize);
    OperandDesc b = small_layer(3, {0, 64});
    b.bias = TensorDesc{st::Dtype::F32, {5}};
    EXPECT_EQ(validate_operands(b, ck, EmptyProblem::AsUpstream).error().kind, ErrorKind::OpEmptyBatch);
    EXPECT_EQ(validate_operands(b, ck).error().kind, ErrorKind::OpBiasShape);
  }
  // K = 0 passes 0.2.35's checks (K = 2 * cols) and fails its ConvRot reshape, for any M and N.
  for (const Shape& x : {Shape{2, 0}, Shape{0, 0}}) {
    OperandDesc d = small_layer(0, x);
    d.weight.shape = {0, 0};
    d.s_rel.shape = {0, 0};
    const Status s = validate_operands(d, kV35, EmptyProblem::AsUpstream);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message,
              "K=0: upstream raises RuntimeError: cannot reshape tensor of 0 elements into shape [-1, 0, 16] because the "
              "unspecified dimension size -1 can be any value and is ambiguous");
    EXPECT_TRUE(validate_operands(d, kV35).ok());
  }
}

// The storage forms comfy-kitchen reads and sglang does not (docs/upstream.md "Who loads what"),
// recognised whatever other defect the layer has.
TEST(Operands, ComfyKitchenOnlyStorage) {
  auto desc = [](st::Dtype w, st::Dtype s, std::uint64_t cols, std::uint64_t groups, std::int64_t g) {
    OperandDesc d;
    d.weight = {w, {3, cols}};
    d.s_rel = {s, {3, groups}};
    d.group_size = g;
    return d;
  };
  for (ComfyKitchen ck : {kV35, kV40}) {
    EXPECT_TRUE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F32, 32, 4, 16), ck));
    EXPECT_TRUE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F32, 32, 5, 16), ck));  // row width wrong too
    EXPECT_TRUE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F32, 32, 4, 12), ck));  // G wrong too
    EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, 32, 4, 16), ck));  // sglang's own
    EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::BF16, 48, 4, 16), ck));
    EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::U8, st::Dtype::F32, 32, 4, 16), ck));
    EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, 40, 4, 16), ck));
    OperandDesc r3 = desc(st::Dtype::I8, st::Dtype::F32, 32, 4, 16);
    r3.weight.shape = {3, 32, 1};
    EXPECT_FALSE(comfy_kitchen_only_storage(r3, ck));
  }
  // 6-bit rows (K = 64: 48 bytes) with FP8 scales: only releases that read them.
  EXPECT_TRUE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, 48, 4, 16), kV40));
  EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, 48, 4, 16), kV35));
  EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, 0, 0, 16), kV40));
  EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, 48, 4, 0), kV40));
  // Huge sizes do not wrap around: 6 * K with K = (2^64 - 1) * (2^62) has no row that matches.
  EXPECT_FALSE(comfy_kitchen_only_storage(desc(st::Dtype::I8, st::Dtype::F8_E4M3, UINT64_MAX, UINT64_MAX,
                                               std::int64_t(1) << 62),
                                          kV40));
}

}  // namespace
}  // namespace w4a8::gemm
