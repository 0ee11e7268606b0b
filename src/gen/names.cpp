#include "gen/names.hpp"

#include <array>
#include <string_view>

namespace w4a8::gen {
namespace {

struct Site {
  std::string_view path;  // after the block index
  std::uint64_t n, k;
};
struct Family {
  std::string_view block;  // "double_blocks", ...
  std::uint64_t blocks;
  std::span<const Site> sites;
};

// Flux.1-dev (hidden 3072, MLP 12288, 19 double + 38 single blocks).
constexpr Site kFluxDouble[] = {
    {"img_attn.qkv", 9216, 3072}, {"img_attn.proj", 3072, 3072}, {"img_mlp.0", 12288, 3072},
    {"img_mlp.2", 3072, 12288},   {"txt_attn.qkv", 9216, 3072},  {"txt_mod.lin", 18432, 3072}};
constexpr Site kFluxSingle[] = {{"linear1", 21504, 3072}, {"linear2", 3072, 15360}, {"modulation.lin", 9216, 3072}};
// Qwen-Image (hidden 3072, 60 blocks).
constexpr Site kQwen[] = {{"attn.to_q", 3072, 3072},         {"attn.to_k", 3072, 3072},
                          {"attn.add_q_proj", 3072, 3072},   {"attn.to_out.0", 3072, 3072},
                          {"img_mlp.net.0.proj", 12288, 3072}, {"img_mlp.net.2", 3072, 12288},
                          {"img_mod.1", 18432, 3072}};
// Wan 2.1 14B (hidden 5120, FFN 13824, 40 blocks).
constexpr Site kWan[] = {{"self_attn.q", 5120, 5120}, {"self_attn.o", 5120, 5120}, {"cross_attn.k", 5120, 5120},
                         {"ffn.0", 13824, 5120},      {"ffn.2", 5120, 13824}};
constexpr Family kFamilies[] = {{"double_blocks", 19, kFluxDouble},
                                {"single_blocks", 38, kFluxSingle},
                                {"transformer_blocks", 60, kQwen},
                                {"blocks", 40, kWan}};

// Pieces a stress name is assembled from (UTF-8): what repr() escapes (quotes, backslash, ASCII and
// C1 controls, DEL, separators, format characters, private use, unassigned and noncharacter code
// points) next to what it prints raw, and characters assigned in one Unicode version but not an
// earlier one (printable only from some Python on). Every code point is in repr_oracle.cpp's table.
constexpr std::string_view kStressPieces[] = {
    "blocks.0.attn", "'", "\"", "\\", "\n", "\t", "\r", "\x7f", "\x01", "\xc2\x85" /*U+0085*/,
    "\xc2\xa0" /*NBSP*/, "\xe2\x80\xa8" /*U+2028*/, "\xe2\x80\x8b" /*ZWSP*/, "\xf0\x9f\x98\x80" /*emoji*/,
    "\xc3\xa9" /*e acute*/, "\xe5\xb1\x82" /*CJK*/, "\xcd\xb8" /*unassigned U+0378*/,
    "\xef\xbf\xbe" /*U+FFFE*/, "\xf3\xa0\x80\x81" /*tag U+E0001*/, " ", ".", "x",
    "\x7f", "a\x7f", "\x1b", "\xc2\x80" /*U+0080*/, "\xc2\x9f" /*U+009F*/, "\xc2\xad" /*soft hyphen*/,
    "\xe2\x80\x8e" /*LRM*/, "\xef\xbb\xbf" /*U+FEFF*/, "\xee\x80\x80" /*private U+E000*/,
    "\xef\xa3\xbf" /*private U+F8FF*/, "\xf3\xb0\x80\x80" /*plane 15 U+F0000*/,
    "\xf4\x8f\xbf\xbd" /*plane 16 U+10FFFD*/, "\xe3\x80\x80" /*ideographic space*/,
    "\xe2\x80\xa9" /*U+2029*/, "\xf0\x9d\x90\x80" /*math bold A*/, "\xe0\xa1\xb0" /*U+0870, Unicode 14*/,
    "\xf0\x9f\x9b\x9c" /*U+1F6DC, Unicode 15*/, "\xe2\xbf\xbc" /*U+2FFC, Unicode 15.1*/,
    "\xf0\x9f\xab\xa9" /*U+1FAE9, Unicode 16*/, "'\"", "\xc2\xb2" /*superscript two*/};

}  // namespace

LinearSite realistic_site(ChoiceSource& src) {
  const Family& f = kFamilies[src.below(std::size(kFamilies))];
  const Site& s = f.sites[src.below(f.sites.size())];
  LinearSite out;
  if (src.flip()) out.prefix = "model.diffusion_model.";
  out.prefix += std::string(f.block) + "." + std::to_string(src.below(f.blocks)) + "." + std::string(s.path);
  out.n = s.n;
  out.k = s.k;
  return out;
}

std::span<const std::string_view> stress_pieces() { return kStressPieces; }

std::string stress_prefix(ChoiceSource& src) {
  std::string out;
  const std::uint64_t parts = 1 + src.below(4);
  for (std::uint64_t i = 0; i < parts; ++i) out += kStressPieces[src.below(std::size(kStressPieces))];
  return out;
}

}  // namespace w4a8::gen
