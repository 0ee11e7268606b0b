#include "fuzz/container_mutator.hpp"

#include <algorithm>
#include <cstring>
#include <charconv>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/container_mutator_tree.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::fuzz {
namespace {

using tree::Id;
using tree::Kind;
using tree::kNil;
using tree::Tree;
using Rng = std::minstd_rand;

// Dtype names and bit widths, as the safetensors format defines them (a second copy on purpose:
// the mutator must not depend on the reader it feeds).
struct DtypeBits {
  std::string_view name;
  unsigned bits;
};
constexpr DtypeBits kDtypes[] = {
    {"BOOL", 8}, {"F4", 4}, {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8}, {"I8", 8}, {"F8_E5M2", 8}, {"F8_E4M3", 8},
    {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16}, {"U16", 16}, {"F16", 16}, {"BF16", 16},
    {"I32", 32}, {"U32", 32}, {"F32", 32}, {"C64", 64}, {"F64", 64}, {"I64", 64}, {"U64", 64}};
constexpr std::string_view kBadDtypes[] = {"Q4", "f32", "F8_E4M3FN", "", "U4", "I4", "F128"};
constexpr std::string_view kNumbers[] = {"0", "1", "2", "3", "4", "7", "8", "15", "16", "17", "32", "64", "255", "256",
                                         "-1", "-0", "00", "01", "1.0", "1e3", "1e400", "1.5", "100000000", "100000001",
                                         "2147483648", "4294967296", "9223372036854775807", "9223372036854775808",
                                         "18446744073709551615", "18446744073709551616", "true", "false", "null",
                                         "NaN", "Infinity"};
constexpr std::string_view kKeys[] = {"dtype", "shape", "data_offsets", "__metadata__", "_quantization_metadata",
                                      "quant_format", "format_version", "layers", "format", "group_size",
                                      "convrot_groupsize", "convrot", "x.weight", "x.comfy_quant", "x.weight_s_rel",
                                      "x.weight_s_channel", "x.weight_scale", "x.weight_scale_2", "x.input_scale", "a",
                                      "", "\\u0000", "\\ud800", "\\u00e9", "\xc3\xa9"};
constexpr std::string_view kStrings[] = {"asym_w4a8_int8", "float8_e4m3fn", "int8_tensorwise", "convrot_w4a4", "nvfp4",
                                         "mxfp8", "1.0", "{\\\"format\\\": \\\"asym_w4a8_int8\\\"}",
                                         "{\\\"layers\\\": {}}", "16", "\\ud800", "\\u0000", "x\\ny"};

// The header length of a container, or nothing when its prefix points past the end.
bool header_len(const std::uint8_t* d, std::size_t n, std::size_t& len) {
  if (n < 8 || st::declared_header_len({d, 8}) > n - 8) return false;
  len = static_cast<std::size_t>(st::declared_header_len({d, 8}));
  return true;
}

// Everything one mutation works in, reused by the next (libFuzzer mutates from one thread), so a
// mutation allocates nothing once these have grown.
struct Scratch {
  Tree t;
  std::vector<std::uint8_t> in;    // the input, which the tree views (the output overwrites it)
  std::vector<std::uint8_t> data;  // the data region being built
  std::vector<std::uint8_t> buf;   // room for a raw byte mutation
  std::string header;              // the emitted header
  std::vector<Id> all, containers;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// 8-byte length prefix, header, data; 0 when that exceeds max.
std::size_t assemble(std::string_view header, const std::vector<std::uint8_t>& data, std::uint8_t* out, std::size_t max) {
  const std::size_t total = 8 + header.size() + data.size();
  if (total > max) return 0;
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(std::uint64_t{header.size()} >> (8 * i));
  std::memcpy(out + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out + 8 + header.size(), data.data(), data.size());
  return total;
}

std::size_t below(Rng& r, std::size_t n) { return n <= 1 ? 0 : r() % n; }

std::string_view number_text(Tree& t, std::uint64_t v) {
  char b[24];
  return t.keep({b, static_cast<std::size_t>(std::to_chars(b, b + sizeof b, v).ptr - b)});
}

// The i-th child of c (kNil past the end) and the number of children.
Id kid(const Tree& t, Id c, std::size_t i) {
  Id k = t[c].first;
  while (k != kNil && i-- > 0) k = t[k].next;
  return k;
}
std::size_t kid_count(const Tree& t, Id c) {
  std::size_t n = 0;
  for (Id k = t[c].first; k != kNil; k = t[k].next) ++n;
  return n;
}

// Links the chain first..last (last's next is overwritten) in before c's child at index at.
void insert_kids(Tree& t, Id c, std::size_t at, Id first, Id last) {
  if (at == 0) {
    t[last].next = t[c].first;
    t[c].first = first;
    return;
  }
  const Id prev = kid(t, c, at - 1);
  t[last].next = t[prev].next;
  t[prev].next = first;
}

// Makes slot hold value v (kind, text, children; slot keeps its place among its siblings).
void assign(Tree& t, Id slot, Id v) {
  const Id next = t[slot].next;
  t[slot] = t[v];
  t[slot].next = next;
}

Id chain(Tree& t, Id a, Id b) {
  t[a].next = b;
  return a;
}

Id fresh_value(Tree& t, Rng& r, int depth = 0) {
  switch (below(r, depth > 1 ? 3 : 6)) {
    case 0: return t.add(Kind::Scalar, kNumbers[below(r, std::size(kNumbers))]);
    case 1: return t.add(Kind::String, below(r, 2) ? kDtypes[below(r, std::size(kDtypes))].name : kStrings[below(r, std::size(kStrings))]);
    case 2: return t.add(Kind::String, kKeys[below(r, std::size(kKeys))]);
    case 3: {
      const Id a = t.add(Kind::Array);
      Id last = kNil;
      for (std::size_t i = below(r, 4); i-- > 0;) {
        const Id item = t.add(Kind::Scalar, kNumbers[below(r, 12)]);
        (last == kNil ? t[a].first : t[last].next) = item;
        last = item;
      }
      return a;
    }
    case 4: {  // a tensor entry
      const auto& dt = kDtypes[below(r, std::size(kDtypes))];
      const std::string_view n = kNumbers[below(r, 12)];
      const Id dim = t.add(Kind::Scalar, n), zero = t.add(Kind::Scalar, "0"), end = t.add(Kind::Scalar, n);
      const Id shape = t.add(Kind::Array), offs = t.add(Kind::Array), e = t.add(Kind::Object);
      const Id k_dtype = t.add(Kind::String, "dtype"), v_dtype = t.add(Kind::String, dt.name);
      const Id k_shape = t.add(Kind::String, "shape"), k_offs = t.add(Kind::String, "data_offsets");
      t[shape].first = dim;
      t[offs].first = chain(t, zero, end);
      t[e].first = chain(t, k_dtype, chain(t, v_dtype, chain(t, k_shape, chain(t, shape, chain(t, k_offs, offs)))));
      return e;
    }
    default: {
      const Id o = t.add(Kind::Object);
      Id last = kNil;
      for (std::size_t i = below(r, 3); i-- > 0;) {
        const Id k = t.add(Kind::String, kKeys[below(r, std::size(kKeys))]);
        const Id v = fresh_value(t, r, depth + 1);
        (last == kNil ? t[o].first : t[last].next) = chain(t, k, v);
        last = v;
      }
      return o;
    }
  }
}

void collect(const Tree& t, Id n, Scratch& s) {
  s.all.push_back(n);
  if (t[n].kind == Kind::Array || t[n].kind == Kind::Object) {
    s.containers.push_back(n);
    for (Id k = t[n].first; k != kNil; k = t[k].next) collect(t, k, s);
  }
}

// Whether n is a member name (only asked now and then: not worth recording while collecting).
bool is_key(const Tree& t, const std::vector<Id>& containers, Id n) {
  for (Id c : containers)
    if (t[c].kind == Kind::Object)
      for (Id k = t[c].first; k != kNil && t[k].next != kNil; k = t[t[k].next].next)
        if (k == n) return true;
  return false;
}

// Another number near or far from a scalar's value.
std::string_view tweak_number(Tree& t, std::string_view s, Rng& r) {
  std::uint64_t v = 0;
  bool plain = !s.empty() && s.size() <= 19;
  for (char c : s) {
    plain = plain && c >= '0' && c <= '9';
    if (plain) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!plain) v = 0;
  switch (below(r, plain ? 6 : 2)) {
    case 0: return kNumbers[below(r, std::size(kNumbers))];
    case 1: {
      std::string longer(s);  // on the stack unless long
      longer += static_cast<char>('0' + below(r, 10));
      return t.keep(longer);
    }
    case 2: return number_text(t, v + 1);
    case 3: return number_text(t, v - 1);
    case 4: return number_text(t, v * 2);
    default: return number_text(t, v / 2);
  }
}

// One structural edit somewhere in the tree.
void edit(Scratch& s, Id root, Rng& r, RawMutate raw) {
  Tree& t = s.t;
  s.all.clear();
  s.containers.clear();
  collect(t, root, s);
  const Id c = s.containers.empty() ? kNil : s.containers[below(r, s.containers.size())];
  const std::size_t step = c != kNil && t[c].kind == Kind::Object ? 2 : 1;  // objects hold key, value pairs
  const std::size_t count = c != kNil ? kid_count(t, c) : 0, units = count / step;
  switch (below(r, 8)) {
    case 0:  // delete a member or item
      if (units) {
        const std::size_t i = below(r, units) * step;
        const Id after = kid(t, c, i + step);
        (i == 0 ? t[c].first : t[kid(t, c, i - 1)].next) = after;
        return;
      }
      break;
    case 1:  // duplicate one (a repeated key is a case of its own for both readers)
      if (units && count < 4096) {
        const std::size_t i = below(r, units) * step, at = below(r, units + 1) * step;
        const Id from = kid(t, c, i);
        const Id first = t.copy(from);
        Id last = first;
        if (step == 2) last = t[first].next = t.copy(t[from].next);
        insert_kids(t, c, at, first, last);
        return;
      }
      break;
    case 2:  // swap two
      if (units >= 2) {
        const std::size_t i = below(r, units) * step, j = below(r, units) * step;
        for (std::size_t k = 0; k < step; ++k) {
          const Id a = kid(t, c, i + k), b = kid(t, c, j + k);
          std::swap(t[a].kind, t[b].kind);
          std::swap(t[a].text, t[b].text);
          std::swap(t[a].first, t[b].first);
        }
        return;
      }
      break;
    case 3:  // insert a fresh member or item
      if (c != kNil) {
        const std::size_t at = below(r, units + 1) * step;
        Id key = kNil;
        if (step == 2) {
          if (below(r, 3)) key = t.add(Kind::String, kKeys[below(r, std::size(kKeys))]);
          else key = t.add(Kind::String, t.keep("t" + std::to_string(below(r, 100))));
        }
        const Id v = fresh_value(t, r);
        if (key != kNil) t[key].next = v;
        insert_kids(t, c, at, key != kNil ? key : v, v);
        return;
      }
      break;
    default: break;
  }
  const Id n = s.all[below(r, s.all.size())];
  switch (below(r, 4)) {
    case 0:  // another kind of value (keys stay strings)
      if (n != root && !is_key(t, s.containers, n)) assign(t, n, fresh_value(t, r));
      return;
    case 1:
      if (t[n].kind == Kind::Scalar) {
        const std::string_view v = tweak_number(t, t[n].text, r);
        t[n].text = v;
      } else if (t[n].kind == Kind::String) {
        t[n].text = below(r, 2) ? kDtypes[below(r, std::size(kDtypes))].name : kKeys[below(r, std::size(kKeys))];
      }
      return;
    case 2:
      if (t[n].kind == Kind::String) t[n].text = below(r, 2) ? kBadDtypes[below(r, std::size(kBadDtypes))] : kStrings[below(r, std::size(kStrings))];
      else if (t[n].kind == Kind::Scalar) t[n].text = kNumbers[below(r, std::size(kNumbers))];
      return;
    default:  // raw bytes inside one scalar or string (quotes kept)
      if ((t[n].kind == Kind::String || t[n].kind == Kind::Scalar) && raw) {
        const std::string_view inner = t[n].text;
        s.buf.assign(inner.begin(), inner.end());
        s.buf.resize(inner.size() + 16);
        const std::size_t len = std::min(raw(s.buf.data(), inner.size(), s.buf.size()), s.buf.size());
        const std::string_view v = t.keep({reinterpret_cast<const char*>(s.buf.data()), len});
        t[n].text = v;
      }
      return;
  }
}

// The value of obj's first member named key, or kNil.
Id member(const Tree& t, Id obj, std::string_view key) {
  for (Id k = t[obj].first; k != kNil && t[k].next != kNil; k = t[t[k].next].next)
    if (t[k].text == key) return t[k].next;
  return kNil;
}

// Contiguous data_offsets for every tensor entry whose size follows from its dtype and shape, in
// document order; the data region is resized to the new end. false when it would exceed limit.
bool repair_offsets(Tree& t, Id root, std::vector<std::uint8_t>& data, std::size_t limit) {
  if (t[root].kind != Kind::Object) return true;
  std::uint64_t offset = 0;
  for (Id k = t[root].first; k != kNil && t[k].next != kNil; k = t[t[k].next].next) {
    const Id e = t[k].next;
    if (t[e].kind != Kind::Object || t[k].text == "__metadata__") continue;
    const Id dt = member(t, e, "dtype"), shape = member(t, e, "shape"), offs = member(t, e, "data_offsets");
    if (dt == kNil || shape == kNil || offs == kNil || t[dt].kind != Kind::String || t[shape].kind != Kind::Array ||
        t[offs].kind != Kind::Array)
      continue;
    unsigned bits = 0;
    for (const auto& d : kDtypes)
      if (t[dt].text == d.name) bits = d.bits;
    if (bits == 0) continue;
    std::uint64_t count = 1;
    bool ok = true;
    for (Id dim = t[shape].first; ok && dim != kNil; dim = t[dim].next) {
      const std::string_view x = t[dim].text;
      ok = t[dim].kind == Kind::Scalar && !x.empty() && x.size() <= 12 && x.find_first_not_of("0123456789") == std::string_view::npos;
      if (!ok) break;
      std::uint64_t v = 0;
      for (char ch : x) v = v * 10 + static_cast<std::uint64_t>(ch - '0');
      count *= v;
      ok = count <= limit * 8;
    }
    if (!ok || count * bits % 8 != 0) continue;
    const std::uint64_t size = count * bits / 8;
    if (offset + size > limit) return false;
    const Id begin = t.add(Kind::Scalar, number_text(t, offset)), end = t.add(Kind::Scalar, number_text(t, offset + size));
    t[offs].first = chain(t, begin, end);
    offset += size;
  }
  data.resize(offset, 0);
  return true;
}

void pad_to_8(std::string& header) {
  while ((8 + header.size()) % 8) header += ' ';
}

// header (raw bytes) and data written to out, the header mutated by raw first.
std::size_t raw_header_mutation(Scratch& s, std::string_view header, std::uint8_t* out, std::size_t max, RawMutate raw) {
  if (max < 8 + s.data.size()) return 0;
  const std::size_t room = std::min<std::size_t>(max - 8 - s.data.size(), header.size() + 64);
  if (room < header.size()) return 0;
  s.buf.assign(header.begin(), header.end());
  s.buf.resize(room);
  const std::size_t len = std::min(raw(s.buf.data(), header.size(), room), room);
  return assemble({reinterpret_cast<const char*>(s.buf.data()), len}, s.data, out, max);
}

}  // namespace

std::size_t mutate_container(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed, RawMutate raw) {
  Rng r(seed);
  const auto plain = [&] { return raw ? raw(data, size, max_size) : size; };
  std::size_t len = 0;
  const bool container = header_len(data, size, len);
  const std::size_t pick = below(r, 10);
  if (!container || pick == 0) return plain();  // 1 in 10: raw bytes anywhere (prefix and data too)
  Scratch& s = scratch();
  s.in.assign(data, data + size);  // the tree views it; data is the output
  s.data.assign(s.in.begin() + static_cast<std::ptrdiff_t>(8 + len), s.in.end());
  const std::string_view header(reinterpret_cast<const char*>(s.in.data()) + 8, len);
  s.t.clear();
  const Id root = s.t.parse(header);
  if (root == kNil || pick == 1) {
    const std::size_t n = raw ? raw_header_mutation(s, header, data, max_size, raw) : 0;
    return n ? n : plain();
  }
  for (std::size_t edits = 1 + below(r, 3); edits-- > 0;) edit(s, root, r, raw);
  if (below(r, 4) != 0 && !repair_offsets(s.t, root, s.data, max_size)) return plain();
  s.header.clear();
  s.t.emit(root, s.header);
  if (below(r, 2)) pad_to_8(s.header);
  const std::size_t n = assemble(s.header, s.data, data, max_size);
  return n ? n : plain();
}

std::size_t cross_over_containers(const std::uint8_t* a, std::size_t na, const std::uint8_t* b, std::size_t nb,
                                  std::uint8_t* out, std::size_t max_out, unsigned seed) {
  Rng r(seed);
  std::size_t la = 0, lb = 0;
  if (!header_len(a, na, la) || !header_len(b, nb, lb)) return 0;
  Scratch& s = scratch();
  s.t.clear();
  Tree& t = s.t;
  const Id ta = t.parse({reinterpret_cast<const char*>(a) + 8, la}), tb = t.parse({reinterpret_cast<const char*>(b) + 8, lb});
  if (ta == kNil || tb == kNil || t[ta].kind != Kind::Object || t[tb].kind != Kind::Object) return 0;
  const std::size_t nkb = kid_count(t, tb);
  if (nkb < 2) return 0;
  std::size_t nka = kid_count(t, ta);
  for (std::size_t k = 1 + below(r, 3); k-- > 0;) {
    const std::size_t from = below(r, nkb / 2) * 2, at = below(r, nka / 2 + 1) * 2;
    const Id key = kid(t, tb, from);
    const Id first = t.copy(key);
    const Id value = t.copy(t[key].next);
    t[first].next = value;
    insert_kids(t, ta, at, first, value);
    nka += 2;
  }
  s.data.assign(a + 8 + la, a + na);
  s.data.insert(s.data.end(), b + 8 + lb, b + nb);
  if (!repair_offsets(t, ta, s.data, max_out)) return 0;
  s.header.clear();
  t.emit(ta, s.header);
  pad_to_8(s.header);
  return assemble(s.header, s.data, out, max_out);
}

}  // namespace w4a8::fuzz
