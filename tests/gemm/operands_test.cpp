// Operand validation: one defect per enum value, each applied to a random valid operand set, must
// give exactly the message upstream's f-string would print (built here by hand from the spec), and
// earlier checks win when defects combine (the order law).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "gemm/operands.hpp"

namespace w4a8::gemm {
namespace {

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
      d.s_rel.dtype = st::Dtype::F32;
      b.want = "s_rel must be F8_E4M3, got F32";
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

// Law 1: each defect alone gives exactly its message.
RC_GTEST_PROP(Operands, EachDefectGivesItsExactMessage, ()) {
  const auto defect = Defect(*rc::gen::inRange(0, int(Defect::kCount)));
  const Built b = build(defect);
  const Status s = validate_operands(b.d);
  RC_ASSERT(!s.ok());
  RC_ASSERT(s.error().message == b.want);
}

// Law 2: the valid set passes (the kCount "defect" leaves it untouched).
RC_GTEST_PROP(Operands, ValidSetPasses, ()) {
  const Built b = build(Defect::kCount);
  RC_ASSERT(validate_operands(b.d).ok());
}

// Law 3 (order): combined with a later-checked shape defect, a packed-weight defect still wins.
RC_GTEST_PROP(Operands, EarlierCheckWins, ()) {
  Built b = build(Defect::SChannelShape);
  b.d.codebook->shape = {3};
  b.d.input.shape = {1, 3};
  RC_ASSERT(validate_operands(b.d).error().message == b.want);
  b.d.weight.dtype = st::Dtype::U8;
  RC_ASSERT(validate_operands(b.d).error().message == "packed weight must be a 2D int8 tensor");
}

TEST(Operands, HandDerivedCases) {
  OperandDesc d;
  d.weight = {st::Dtype::I8, {3, 8}};  // K = 16
  d.s_rel = {st::Dtype::F8_E4M3, {3, 1}};
  d.s_channel = {st::Dtype::F32, {3}};
  d.input = {st::Dtype::BF16, {5, 16}};
  d.group_size = 16;
  d.convrot_groupsize = 16;
  EXPECT_TRUE(validate_operands(d).ok());
  d.input.shape = {16};  // upstream accepts any [..., K]
  EXPECT_TRUE(validate_operands(d).ok());
  d.input.shape = {};
  EXPECT_EQ(validate_operands(d).error().kind, ErrorKind::UsageError);
  d.input.shape = {2, 3, 16};
  EXPECT_TRUE(validate_operands(d).ok());
  d.s_rel.shape = {3, 2};
  EXPECT_EQ(validate_operands(d).error().message, "s_rel must have shape (3, 1), got (3, 2)");
  d.s_rel.shape = {3, 1};
  d.convrot_groupsize = 0;  // upstream: ZeroDivisionError (no ValueError): reported as usage error
  EXPECT_EQ(validate_operands(d).error().kind, ErrorKind::UsageError);
  d.convrot_groupsize = -16;  // Python: 16 % -16 == 0, so only the Hadamard check catches it
  EXPECT_EQ(validate_operands(d).error().message, "Regular Hadamard size must be a power of 4, got -16");
  // Upstream's math.log(size, 4) % 1 rejects 4^29 even though it is a power of 4.
  d.convrot_groupsize = std::int64_t(1) << 58;
  d.weight.shape = {3, std::uint64_t(1) << 57};
  d.s_rel.shape = {3, std::uint64_t(1) << 54};
  d.input.shape = {1, std::uint64_t(1) << 58};
  EXPECT_EQ(validate_operands(d).error().message,
            "Regular Hadamard size must be a power of 4, got 288230376151711744");
  // K beyond 64 bits is printed exactly.
  d.weight.shape = {1, std::uint64_t(1) << 63};
  d.group_size = 3;
  EXPECT_EQ(validate_operands(d).error().message,
            "K=18446744073709551616 must be divisible by 16, group_size=3, and convrot_groupsize="
            "288230376151711744; group_size must be >=4 and divide 16 or be a multiple of 16");
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

}  // namespace
}  // namespace w4a8::gemm
