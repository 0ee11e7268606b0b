// Seeded generator of safetensors containers for the differential test: valid files from the
// writer, then one defect class per Mutation, each applied to a fresh valid file.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::st::test {

enum class Mutation {
  None,            // writer output, untouched
  HeaderByteFlip,  // one bit of one header byte
  HeaderByteSet,   // one header byte set to a JSON-significant or non-UTF-8 byte
  Truncate,        // file cut short (inside the length field, header or data)
  Extend,          // bytes appended
  LengthEdit,      // the u64 length field rewritten
  HeaderSplice,    // a header byte range replaced by a JSON fragment (newlines, broken tokens)
  OffsetEdit,      // one data_offsets value changed (gaps, overlaps, ties, end < begin, huge)
  DtypeEdit,       // another, unknown or oddly typed dtype
  ShapeEdit,       // dims changed: +-1, 0, huge, negative, float, -0, wrong types
  DuplicateKey,    // repeated tensor names, __metadata__, fields, metadata keys
  NaN,             // NaN / Infinity literals anywhere
  Surrogate,       // lone / paired surrogate escapes, raw surrogate bytes
  Whitespace,      // JSON and non-JSON whitespace around and between tokens
  HugeNumber,      // numbers at and past u64, exponents, fractions, leading zeros
  Form,            // array-form tensors, {"F32": null} dtypes, unknown/missing/extra fields, nesting
  MetadataEdit,    // __metadata__ of every JSON type, in every position
  RootEdit,        // non-object roots, trailing data, BOM
  ControlChar,     // raw and escaped control characters in keys and values
  UnicodeText,     // code points from every plane where messages print them ({:?} or raw) or keys sort
  kCount
};

std::string_view mutation_name(Mutation m);

struct Generated {
  std::vector<std::uint8_t> bytes;
  Mutation mutation = Mutation::None;
  std::string note;  // what was done (diagnostics)
};

class Mutator {
 public:
  explicit Mutator(std::uint64_t seed) : rng_(seed) {}
  Generated make(Mutation m);

 private:
  std::mt19937_64 rng_;
};

}  // namespace w4a8::st::test
