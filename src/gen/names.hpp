// Layer names and shapes of real diffusion transformers, and names that stress Python's repr().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "gen/choice_source.hpp"

namespace w4a8::gen {

struct LinearSite {
  std::string prefix;      // e.g. "model.diffusion_model.double_blocks.3.img_attn.qkv"
  std::uint64_t n = 0, k = 0;  // the real layer's out/in features
};

// A linear layer of Flux, Qwen-Image or Wan 2.1 (block index and site chosen by src), with an
// optional "model.diffusion_model." root.
LinearSite realistic_site(ChoiceSource& src);
// A prefix made to stress repr(): quotes of both kinds, backslashes, control characters, C1 and
// line-separator code points, non-BMP emoji, printable non-ASCII. Always valid UTF-8, never empty.
std::string stress_prefix(ChoiceSource& src);
// The pieces stress_prefix() joins (for tests: each is valid UTF-8 that the oracle's repr() knows).
std::span<const std::string_view> stress_pieces();

}  // namespace w4a8::gen
