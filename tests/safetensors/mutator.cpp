#include "mutator.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <array>
#include <set>

#include "safetensors/writer.hpp"

namespace w4a8::st::test {
namespace {

constexpr std::array<std::string_view, static_cast<std::size_t>(Mutation::kCount)> kNames = {
    "None",       "HeaderByteFlip", "HeaderByteSet", "Truncate", "Extend",     "LengthEdit",
    "HeaderSplice", "OffsetEdit", "DtypeEdit",      "ShapeEdit",     "DuplicateKey", "NaN",    "Surrogate",
    "Whitespace", "HugeNumber",     "Form",          "MetadataEdit", "RootEdit", "ControlChar", "UnicodeText"};

struct Rng {
  std::mt19937_64& r;
  std::uint64_t below(std::uint64_t n) { return n ? std::uniform_int_distribution<std::uint64_t>(0, n - 1)(r) : 0; }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(r) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
};

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6)), s += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += char(0xE0 | (c >> 12)), s += char(0x80 | ((c >> 6) & 0x3F)), s += char(0x80 | (c & 0x3F));
  } else {
    s += char(0xF0 | (c >> 18)), s += char(0x80 | ((c >> 12) & 0x3F));
    s += char(0x80 | ((c >> 6) & 0x3F)), s += char(0x80 | (c & 0x3F));
  }
  return s;
}

std::string random_text(Rng& g, std::size_t max_len) {
  static const std::vector<char32_t> pool = {'a', 'b', 'z', 'A', '0', '9', '.', '_', '-', ' ', '"', '\\', '/', '`',
                                             '\n', '\t', 0x01, 0x1F, 0x7F, 0x80, 0xE9, 0x2028, 0xFEFF, 0xFFFF,
                                             0x1F600, 0x10FFFF, 0x4E2D};
  std::string s;
  const std::size_t n = g.below(max_len + 1);
  for (std::size_t i = 0; i < n; ++i) s += utf8(g.pick(pool));
  return s;
}

// A code point from any plane (surrogates aside): planes uniformly, then the code point in it, with
// extra weight on the ranges where Unicode versions and Rust/Python disagree most (combining marks,
// format characters, recent additions in the BMP and plane 1).
char32_t any_plane_code_point(Rng& g) {
  static const std::vector<std::pair<char32_t, char32_t>> hot = {
      {0x300, 0x36F}, {0x900, 0xDFF}, {0x1AB0, 0x1B7F}, {0x200B, 0x206F}, {0xFE00, 0xFE0F}, {0xFFF0, 0xFFFF},
      {0x10D00, 0x10FFF}, {0x11000, 0x11FFF}, {0x16FE0, 0x16FFF}, {0x1D100, 0x1D2FF}, {0x1E000, 0x1E8FF},
      {0x1F000, 0x1FBFF}, {0xE0000, 0xE01EF}, {0x2FFC, 0x2FFF}, {0x31EF, 0x31EF}};
  char32_t cp = 0;
  do {
    if (g.chance(0.4)) {
      const auto& [lo, hi] = g.pick(hot);
      cp = lo + char32_t(g.below(hi - lo + 1));
    } else {
      cp = char32_t(g.below(17)) << 16 | char32_t(g.below(0x10000));
    }
  } while (cp >= 0xD800 && cp <= 0xDFFF);
  return cp;
}

std::string any_plane_text(Rng& g) {
  std::string s;
  for (std::size_t n = 1 + g.below(8); n > 0; --n) s += utf8(any_plane_code_point(g));
  return s;
}

std::string random_name(Rng& g) {
  switch (g.below(4)) {
    case 0: return "model.layers." + std::to_string(g.below(40)) + ".mlp.weight";
    case 1: return std::string(1, char('a' + g.below(26)));
    default: return random_text(g, 8);
  }
}

// Every code point as \uXXXX (surrogate pairs above the BMP): same string, different text.
std::string escape_all(std::string_view s) {
  std::string out = "\"";
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    if (cp >= 0x10000) {
      const char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04X", unsigned(0xD800 + (v >> 10)));
      out += buf;
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(0xDC00 + (v & 0x3FF)));
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
    }
    out += buf;
  }
  return out + "\"";
}

struct TensorModel {
  std::vector<std::pair<std::string, std::string>> fields;  // JSON key text, JSON value text
  bool array_form = false;
  std::string& field(std::string_view key) {
    for (auto& f : fields)
      if (f.first == "\"" + std::string(key) + "\"") return f.second;
    fields.emplace_back("\"" + std::string(key) + "\"", "null");
    return fields.back().second;
  }
  std::string render() const {
    std::string out;
    if (array_form) {
      out = "[";
      for (std::string_view k : {"\"dtype\"", "\"shape\"", "\"data_offsets\""})
        for (const auto& f : fields)
          if (f.first == k) out += (out.size() > 1 ? "," : "") + f.second;
      return out + "]";
    }
    out = "{";
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i].first + ":" + fields[i].second;
    return out + "}";
  }
};

struct Member {
  std::string key;  // JSON text
  bool tensor = false;
  TensorModel t;
  std::string raw;  // value text when !tensor
};

struct HeaderModel {
  std::vector<Member> members;
  std::string lead, trail, sep = ",", colon = ":";
  std::string render() const {
    std::string out = lead + "{";
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (i) out += sep;
      out += members[i].key + colon + (members[i].tensor ? members[i].t.render() : members[i].raw);
    }
    return out + "}" + trail;
  }
  std::vector<std::size_t> tensor_indices() const {
    std::vector<std::size_t> v;
    for (std::size_t i = 0; i < members.size(); ++i)
      if (members[i].tensor) v.push_back(i);
    return v;
  }
};

// Replaces __metadata__ (or adds it at a random place) so one mutation tests one thing.
void set_metadata(Rng& g, HeaderModel& m, std::string raw) {
  for (auto& x : m.members)
    if (x.key == "\"__metadata__\"") { x.raw = std::move(raw); return; }
  m.members.insert(m.members.begin() + std::ptrdiff_t(g.below(m.members.size() + 1)),
                   {"\"__metadata__\"", false, {}, std::move(raw)});
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

struct Base {
  std::vector<TensorSpec> specs;  // in offset (= writer) order
  std::optional<std::vector<std::pair<std::string, std::string>>> metadata;
  HeaderModel model;              // same content, declaration order shuffled
  std::string data;
};

Base make_base(Rng& g, std::size_t min_tensors) {
  Base b;
  const std::size_t count = min_tensors + g.below(6);
  std::set<std::string> used = {"__metadata__"};
  for (std::size_t i = 0; i < count; ++i) {
    std::string name = random_name(g);
    while (!used.insert(name).second) name += char('a' + g.below(26));
    auto dtype = Dtype(g.below(std::size_t(Dtype::kCount)));
    std::vector<std::uint64_t> shape(g.below(4));
    for (auto& d : shape) d = g.chance(0.1) ? 0 : 1 + g.below(4);
    std::uint64_t n = 1;
    for (auto d : shape) n *= d;
    if (n * dtype_bits(dtype) % 8) dtype = Dtype::U8;
    std::vector<std::uint8_t> bytes(n * dtype_bits(dtype) / 8);
    for (auto& x : bytes) x = std::uint8_t(g.below(256));
    b.specs.push_back({name, dtype, shape, bytes});
  }
  if (g.chance(0.5)) {
    std::vector<std::pair<std::string, std::string>> m;
    std::set<std::string> keys;
    for (std::size_t i = g.below(4); i > 0; --i) {
      std::string k = g.chance(0.3) ? std::string("format") : random_text(g, 6);
      if (keys.insert(k).second) m.emplace_back(k, g.chance(0.2) ? std::string("pt") : random_text(g, 10));
    }
    b.metadata = m;
  }
  std::uint64_t off = 0;
  for (const auto& s : b.specs) {
    Member mem;
    mem.key = json_quote(s.name);
    mem.tensor = true;
    mem.t.fields = {{"\"dtype\"", "\"" + std::string(dtype_name(s.dtype)) + "\""},
                    {"\"shape\"", shape_text(s.shape)},
                    {"\"data_offsets\"", "[" + std::to_string(off) + "," + std::to_string(off + s.bytes.size()) + "]"}};
    off += s.bytes.size();
    b.data.append(s.bytes.begin(), s.bytes.end());
    b.model.members.push_back(std::move(mem));
  }
  std::shuffle(b.model.members.begin(), b.model.members.end(), g.r);
  if (b.metadata) {
    std::string raw = "{";
    for (std::size_t i = 0; i < b.metadata->size(); ++i)
      raw += (i ? "," : "") + json_quote((*b.metadata)[i].first) + ":" + json_quote((*b.metadata)[i].second);
    Member m{"\"__metadata__\"", false, {}, raw + "}"};
    b.model.members.insert(b.model.members.begin() + std::ptrdiff_t(g.below(b.model.members.size() + 1)), m);
  }
  return b;
}

std::vector<std::uint8_t> with_length(std::string_view header, std::string_view data) {
  std::vector<std::uint8_t> out;
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(std::uint8_t(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::uint64_t parse_u64(const std::string& s) { return std::strtoull(s.c_str(), nullptr, 10); }

// A random value that is wrong as a usize in serde's eyes (or right, at the extremes).
std::string odd_number(Rng& g) {
  static const std::vector<std::string> v = {
      "18446744073709551615", "18446744073709551616", "99999999999999999999999", "1e400", "-1",
      "-9223372036854775808", "-9223372036854775809", "00", "0.0", "1.5e3", "4294967296", "2305843009213693951",
      "2305843009213693952", "1E2", "-0", "0", "1", "9223372036854775808", "1e-400", "0e0", "+1", ".5", "1."};
  return g.pick(v);
}

std::string odd_value(Rng& g) {
  static const std::vector<std::string> v = {"null", "true", "false", "0", "-1", "1.5", "\"s\"", "[]", "{}",
                                             "[1]", "{\"a\":1}", "[[1]]", "\"\"", "NaN",
                                             "1e400", "-1e400", "1e-400", "18446744073709551616", "-0"};
  return g.pick(v);
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

void edit_offsets(Rng& g, HeaderModel& m, TensorModel& t, std::string& note) {
  std::string& off = t.field("data_offsets");
  std::uint64_t b = 0, e = 0;
  if (std::sscanf(off.c_str(), "[%" SCNu64 ",%" SCNu64 "]", &b, &e) != 2) return;
  switch (g.below(9)) {
    case 0: b += 1; break;
    case 1: e += 1; break;
    case 2: e = e ? e - 1 : 0; break;
    case 3: std::swap(b, e); break;
    case 4: b = e; break;
    case 5: {  // tie with another tensor
      auto idx = m.tensor_indices();
      const std::string other = m.members[g.pick(idx)].t.field("data_offsets");
      off = other;
      note += " tie";
      return;
    }
    case 6: e = UINT64_MAX; break;
    case 7: b = e = 1ull << 63; break;
    default: e = b + 2 * (e - b) + 1; break;
  }
  off = "[" + std::to_string(b) + "," + std::to_string(e) + "]";
}

void edit_dtype(Rng& g, TensorModel& t) {
  static const std::vector<std::string> odd = {"\"F33\"", "\"f32\"", "\"\"", "{\"F32\":null}", "{\"X\":null}", "3",
                                               "null", "[\"F32\"]", "{\"F32\":null,\"U8\":null}", "{\"F32\":{}}",
                                               "\"\\u0046\\u0033\\u0032\"", "{}", "\"F8_E4M3FN\"", "\"BOOL \""};
  if (g.chance(0.6)) {
    const auto d = Dtype(g.below(std::size_t(Dtype::kCount)));
    const std::string name(dtype_name(d));
    t.field("dtype") = g.chance(0.15) ? "{\"" + name + "\":null}" : "\"" + name + "\"";
  } else {
    t.field("dtype") = g.pick(odd);
  }
}

void edit_shape(Rng& g, TensorModel& t) {
  std::string& s = t.field("shape");
  std::vector<std::string> dims;
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') {
    std::string inner = s.substr(1, s.size() - 2);
    std::size_t p = 0;
    while (!inner.empty() && p <= inner.size()) {
      const std::size_t q = std::min(inner.find(',', p), inner.size());
      dims.push_back(inner.substr(p, q - p));
      p = q + 1;
    }
  }
  switch (g.below(7)) {
    case 0:
      if (!dims.empty()) { auto& d = dims[g.below(dims.size())]; d = std::to_string(parse_u64(d) + 1); }
      break;
    case 1:
      if (!dims.empty()) { auto& d = dims[g.below(dims.size())]; auto v = parse_u64(d); d = std::to_string(v ? v - 1 : 0); }
      break;
    case 2: dims.push_back(g.chance(0.5) ? "1" : "2"); break;
    case 3: if (!dims.empty()) dims.pop_back(); break;
    case 4: {
      const auto at = std::ptrdiff_t(g.below(dims.size() + 1));  // one draw per statement: same files
      dims.insert(dims.begin() + at, g.chance(0.5) ? "0" : odd_number(g));  // from every compiler
      break;
    }
    case 5: s = odd_value(g); return;
    default: dims.push_back("4294967296"), dims.push_back("4294967296"); break;
  }
  s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + dims[i];
  s += "]";
}

}  // namespace

std::string_view mutation_name(Mutation m) { return kNames[std::size_t(m)]; }

Generated Mutator::make(Mutation mu) {
  Rng g{rng_};
  Generated out;
  out.mutation = mu;
  const bool structured = mu >= Mutation::OffsetEdit;
  Base b = make_base(g, structured ? 1 : 0);
  HeaderModel& m = b.model;
  auto tensor = [&]() -> TensorModel& { return m.members[g.pick(m.tensor_indices())].t; };
  std::string& note = out.note;

  if (!structured) {
    WriteOptions opt;
    opt.metadata = b.metadata;
    opt.pad_to_8 = g.chance(0.7);
    out.bytes = mu == Mutation::None && g.chance(0.5) ? with_length(m.render(), b.data)
                                                      : serialize(b.specs, opt).value();
    auto& v = out.bytes;
    std::uint64_t n = 0;  // the writer's header length
    for (int i = 7; i >= 0; --i) n = (n << 8) | v[std::size_t(i)];
    switch (mu) {
      case Mutation::HeaderByteFlip: {
        const std::size_t i = 8 + g.below(n);
        v[i] ^= std::uint8_t(1u << g.below(8));
        note = "flip @" + std::to_string(i);
        break;
      }
      case Mutation::HeaderByteSet: {
        static const std::vector<std::uint8_t> set = {'"', '{', '}', '[', ']', ',', ':', '\\', '0', '9', '-', ' ',
                                                      'e', '.', 0xFF, 0x80, 0xC3, 0x00, 0x1F, 'n', 't'};
        const std::size_t i = 8 + g.below(n);
        v[i] = g.pick(set);
        note = "set @" + std::to_string(i);
        break;
      }
      case Mutation::Truncate: {
        const std::uint64_t cut = g.chance(0.2) ? g.below(8) : g.chance(0.5) ? 8 + g.below(n) : g.below(v.size());
        v.resize(cut);
        note = "truncate to " + std::to_string(cut);
        break;
      }
      case Mutation::Extend: {
        for (std::size_t k = 1 + g.below(16); k > 0; --k) v.push_back(g.chance(0.5) ? ' ' : std::uint8_t(g.below(256)));
        note = "extend";
        break;
      }
      case Mutation::LengthEdit: {
        const std::uint64_t size = v.size();
        const std::vector<std::uint64_t> choices = {n + 1, n - 1, n + 8, n - 8 * (n >= 8), 0, 1, 2, size - 8,
                                                    size - 7, 100'000'000, 100'000'001, UINT64_MAX, 1ull << 63,
                                                    1ull << 32 | n, g.below(size)};
        const std::uint64_t nn = g.pick(choices);
        for (int i = 0; i < 8; ++i) v[std::size_t(i)] = std::uint8_t(nn >> (8 * i));
        note = "n=" + std::to_string(nn);
        break;
      }
      case Mutation::HeaderSplice: {
        // Exercises serde_json's syntax messages and line/column positions.
        static const std::vector<std::string_view> frags = {
            "", "\n", " \n ", "\r\n", "\\u", "\\ud800", "\\udc00", "\\ud800\\u0041", "\\x", "\"", "1e",
            "1.", "-", "01", "1e999", "tru", "nul", "[", "]]", "{", "},", ",", ":", "\\", "\t\n", "\x01", "[[[[",
            "{\"a\":1}", "\"k\":", "\xC3\xA9", "\n\n{"};
        const std::size_t at = 8 + g.below(n);
        const std::size_t len = std::min<std::uint64_t>(g.below(4), 8 + n - at);
        const std::string_view f = g.pick(frags);
        std::vector<std::uint8_t> w(v.begin() + 8, v.begin() + std::ptrdiff_t(at));
        w.insert(w.end(), f.begin(), f.end());
        w.insert(w.end(), v.begin() + std::ptrdiff_t(at + len), v.end());
        const std::uint64_t nn = n - len + f.size();
        v.resize(8);
        for (int i = 0; i < 8; ++i) v[std::size_t(i)] = std::uint8_t(nn >> (8 * i));
        v.insert(v.end(), w.begin(), w.end());
        note = "splice @" + std::to_string(at) + " -" + std::to_string(len) + " +" + std::string(f);
        break;
      }
      default: break;
    }
    return out;
  }

  std::string header;
  switch (mu) {
    case Mutation::OffsetEdit: edit_offsets(g, m, tensor(), note); break;
    case Mutation::DtypeEdit: edit_dtype(g, tensor()); break;
    case Mutation::ShapeEdit: edit_shape(g, tensor()); break;
    case Mutation::DuplicateKey: {
      const auto idx = m.tensor_indices();
      const std::size_t i = g.pick(idx);
      switch (g.below(6)) {
        case 0: {  // same tensor again, maybe altered
          Member copy = m.members[i];
          if (g.chance(0.5)) edit_offsets(g, m, copy.t, note);
          if (g.chance(0.3)) edit_dtype(g, copy.t);
          m.members.insert(m.members.begin() + std::ptrdiff_t(g.below(m.members.size() + 1)), copy);
          note += " dup tensor";
          break;
        }
        case 1:
          m.members.push_back({"\"__metadata__\"", false, {}, g.chance(0.5) ? "null" : "{}"});
          if (g.chance(0.5)) m.members.insert(m.members.begin(), {"\"__metadata__\"", false, {}, "{\"a\":\"b\"}"});
          note = "dup __metadata__";
          break;
        case 2: {
          static const std::vector<std::string> f = {"dtype", "shape", "data_offsets"};
          const std::string key = g.pick(f);
          auto& t = m.members[i].t;
          t.fields.emplace_back("\"" + key + "\"", t.field(key));
          note = "dup field " + key;
          break;
        }
        case 3:
          set_metadata(g, m, "{\"k\":\"1\",\"k\":\"2\",\"j\":\"3\"}");
          note = "dup metadata key";
          break;
        case 4:
          m.members[i].t.fields.emplace_back("\"u\"", "1");
          m.members[i].t.fields.emplace_back("\"u\"", "[2]");
          note = "dup unknown field";
          break;
        default:  // the key spelled two ways
          m.members.push_back({escape_all(g.chance(0.5) ? "__metadata__" : "x"), false, {}, "{}"});
          note = "escaped key";
          break;
      }
      break;
    }
    case Mutation::NaN: {
      static const std::vector<std::string> lits = {"NaN", "Infinity", "-Infinity", "nan", "-NaN"};
      const std::string lit = g.pick(lits);
      auto& t = tensor();
      switch (g.below(5)) {
        case 0: t.field("shape") = "[" + lit + "]"; break;
        case 1: t.field("data_offsets") = "[0," + lit + "]"; break;
        case 2: set_metadata(g, m, "{\"a\":" + lit + "}"); break;
        case 3: t.fields.emplace_back("\"extra\"", lit); break;
        default: m.members.push_back({"\"n\"", false, {}, lit}); break;
      }
      note = lit;
      break;
    }
    case Mutation::Surrogate: {
      static const std::vector<std::string> s = {"\\ud800", "\\udc00", "\\ud83d\\ude00", "\\ud800\\u0041",
                                                 "\\ud800\\n", "\xed\xa0\x80", "\xf0\x9f\x98\x80", "\\uDBFF\\uDFFF",
                                                 "\\udbff", "\\uD834\\uDD1E", "\xed\xbf\xbf"};
      const std::string piece = g.pick(s);
      if (g.chance(0.6)) {
        auto& mem = m.members[g.pick(m.tensor_indices())];
        mem.key = mem.key.substr(0, mem.key.size() - 1) + piece + "\"";
      } else {
        set_metadata(g, m, "{\"k" + piece + "\":\"v" + piece + "\"}");
      }
      note = piece;
      break;
    }
    case Mutation::Whitespace: {
      static const std::vector<std::string> ok = {" ", "\t", "\n", "\r", "\r\n  ", ""};
      static const std::vector<std::string> bad = {"\f", "\v", std::string(1, '\0'), "\xc2\xa0", "\xef\xbb\xbf", "\x1c",
                                                   "\xe2\x80\xa8"};
      auto ws = [&] { return g.chance(0.75) ? g.pick(ok) : g.pick(bad); };
      switch (g.below(4)) {
        case 0: m.lead = ws(); break;
        case 1: m.trail = ws(), m.trail += ws(); break;
        case 2: m.sep = ws() + ",", m.sep += ws(); break;
        default: m.colon = ws() + ":", m.colon += ws(); break;
      }
      break;
    }
    case Mutation::HugeNumber: {
      auto& t = tensor();
      const std::string num = odd_number(g);
      if (g.chance(0.5)) {
        t.field("shape") = "[" + num + "]";
      } else {
        std::uint64_t b0 = 0, e0 = 0;
        std::sscanf(t.field("data_offsets").c_str(), "[%" SCNu64 ",%" SCNu64 "]", &b0, &e0);
        t.field("data_offsets") = g.chance(0.5) ? "[" + num + "," + std::to_string(e0) + "]"
                                                : "[" + std::to_string(b0) + "," + num + "]";
      }
      note = num;
      break;
    }
    case Mutation::Form: {
      auto& t = tensor();
      switch (g.below(7)) {
        case 0: t.array_form = true; break;
        case 1: std::shuffle(t.fields.begin(), t.fields.end(), g.r); break;
        case 2: {
          std::string key = "\"" + random_text(g, 4) + "\"";
          t.fields.emplace_back(std::move(key), odd_value(g));
          break;
        }
        case 3: {
          static const std::vector<std::size_t> depths = {1, 60, 124, 125, 126, 127};
          t.fields.emplace_back("\"deep\"", nested(g.pick(depths)));
          break;
        }
        case 4: t.fields.erase(t.fields.begin() + std::ptrdiff_t(g.below(t.fields.size()))); break;
        case 5: t.field("data_offsets") = g.chance(0.5) ? "[0]" : "[0,0,0]"; break;
        default:
          t.array_form = true;
          if (g.chance(0.5)) t.fields.pop_back(); else t.fields.emplace_back("\"x\"", "1");
          break;
      }
      note = t.render().substr(0, 40);
      break;
    }
    case Mutation::MetadataEdit: {
      static const std::vector<std::string> v = {"null", "{}", "{\"a\":1}", "{\"a\":null}", "[]", "\"s\"", "1", "true",
                                                 "{\"a\":{\"b\":\"c\"}}", "{\"a\":[\"x\"]}", "{\"\":\"\"}",
                                                 "{\"a\":\"b\",\"c\":\"\\u0000\"}", "[[\"a\",\"b\"]]"};
      set_metadata(g, m, g.pick(v));
      break;
    }
    case Mutation::RootEdit: {
      static const std::vector<std::string> roots = {"[]", "null", "1", "\"s\"", "", "{}x", "{},", "{}}", "{", "[{}]",
                                                     "\xef\xbb\xbf{}", std::string("{}\0", 3), "{} {}", "true"};
      header = g.chance(0.7) ? g.pick(roots) : m.render() + g.pick(std::vector<std::string>{" x", "]", "\n", ",{}"});
      if (header == "{}" || header.empty() || g.chance(0.5)) b.data.clear();
      note = "root";
      break;
    }
    case Mutation::ControlChar: {
      const char c = char(1 + g.below(31));
      const bool raw = g.chance(0.5);
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", unsigned(c));
      const std::string piece = raw ? std::string(1, c) : std::string(esc);
      if (g.chance(0.7)) {
        auto& mem = m.members[g.pick(m.tensor_indices())];
        mem.key = mem.key.substr(0, mem.key.size() - 1) + piece + "\x7f\"";
      } else {
        set_metadata(g, m, "{\"k\":\"" + piece + "\"}");
      }
      note = raw ? "raw control" : "escaped control";
      break;
    }
    case Mutation::UnicodeText: {
      const std::string text = any_plane_text(g);
      const std::string quoted = g.chance(0.25) ? escape_all(text) : json_quote(text);
      auto& t = tensor();
      switch (g.below(8)) {
        case 0: t.field("shape") = "[" + quoted + "]"; break;           // string "...", expected usize
        case 1: t.field("data_offsets") = "[0," + quoted + "]"; break;
        case 2: t.field("dtype") = g.chance(0.5) ? quoted : "{" + quoted + ":null}"; break;  // unknown variant
        case 3: m.members.push_back({quoted, false, {}, quoted}); break;  // expected struct TensorInfo
        case 4: set_metadata(g, m, g.chance(0.5) ? quoted : "{" + quoted + ":" + quoted + "}"); break;
        case 5: {  // a name printed raw by InvalidOffset
          auto& mem = m.members[g.pick(m.tensor_indices())];
          mem.key = quoted;
          edit_offsets(g, m, mem.t, note);
          break;
        }
        default: {  // accepted names that must sort in code point order
          for (const std::size_t i : m.tensor_indices())
            if (g.chance(0.7)) m.members[i].key = json_quote(any_plane_text(g) + std::to_string(i));
          break;
        }
      }
      note += " unicode";
      break;
    }
    default: break;
  }
  if (header.empty() && mu != Mutation::RootEdit) header = m.render();
  out.bytes = with_length(header, b.data);
  return out;
}

}  // namespace w4a8::st::test
