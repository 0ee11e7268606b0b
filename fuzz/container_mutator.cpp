#include "fuzz/container_mutator.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gen/raw_json.hpp"

namespace w4a8::fuzz {
namespace {

using gen::raw::Node;
using gen::raw::Type;
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

std::uint64_t le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

struct Container {
  std::string header;              // the JSON text
  std::vector<std::uint8_t> data;  // everything after it
};

std::optional<Container> split(const std::uint8_t* d, std::size_t n) {
  if (n < 8) return std::nullopt;
  const std::uint64_t len = le64(d);
  if (len > n - 8) return std::nullopt;
  return Container{std::string(reinterpret_cast<const char*>(d + 8), len), std::vector<std::uint8_t>(d + 8 + len, d + n)};
}

std::size_t assemble(const Container& c, std::uint8_t* out, std::size_t max) {
  const std::size_t total = 8 + c.header.size() + c.data.size();
  if (total > max) return 0;
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(std::uint64_t{c.header.size()} >> (8 * i));
  std::memcpy(out + 8, c.header.data(), c.header.size());
  if (!c.data.empty()) std::memcpy(out + 8 + c.header.size(), c.data.data(), c.data.size());
  return total;
}

std::size_t below(Rng& r, std::size_t n) { return n <= 1 ? 0 : r() % n; }

Node scalar(std::string_view s) { return Node{Type::Scalar, std::string(s), {}}; }
Node string(std::string_view s) { return Node{Type::String, "\"" + std::string(s) + "\"", {}}; }

Node fresh_value(Rng& r, int depth = 0) {
  switch (below(r, depth > 1 ? 3 : 6)) {
    case 0: return scalar(kNumbers[below(r, std::size(kNumbers))]);
    case 1: return string(below(r, 2) ? kDtypes[below(r, std::size(kDtypes))].name : kStrings[below(r, std::size(kStrings))]);
    case 2: return string(kKeys[below(r, std::size(kKeys))]);
    case 3: {
      Node a{Type::Array, {}, {}};
      for (std::size_t i = below(r, 4); i-- > 0;) a.kids.push_back(scalar(kNumbers[below(r, 12)]));
      return a;
    }
    case 4: {  // a tensor entry
      const auto& dt = kDtypes[below(r, std::size(kDtypes))];
      const std::string n(kNumbers[below(r, 12)]);
      Node e{Type::Object, {}, {}};
      e.kids = {string("dtype"), string(dt.name), string("shape"), Node{Type::Array, {}, {scalar(n)}},
                string("data_offsets"), Node{Type::Array, {}, {scalar("0"), scalar(n)}}};
      return e;
    }
    default: {
      Node o{Type::Object, {}, {}};
      for (std::size_t i = below(r, 3); i-- > 0;) {
        o.kids.push_back(string(kKeys[below(r, std::size(kKeys))]));
        o.kids.push_back(fresh_value(r, depth + 1));
      }
      return o;
    }
  }
}

void collect(Node& n, std::vector<Node*>& all, std::vector<Node*>& containers) {
  all.push_back(&n);
  if (n.type == Type::Array || n.type == Type::Object) {
    containers.push_back(&n);
    for (Node& k : n.kids) collect(k, all, containers);
  }
}

// Another number near or far from a scalar's value.
std::string tweak_number(const std::string& s, Rng& r) {
  std::uint64_t v = 0;
  bool plain = !s.empty() && s.size() <= 19;
  for (char c : s) plain = plain && c >= '0' && c <= '9';
  if (plain) v = std::stoull(s);
  switch (below(r, plain ? 6 : 2)) {
    case 0: return std::string(kNumbers[below(r, std::size(kNumbers))]);
    case 1: return s + std::string(1, static_cast<char>('0' + below(r, 10)));
    case 2: return std::to_string(v + 1);
    case 3: return std::to_string(v - 1);
    case 4: return std::to_string(v * 2);
    default: return std::to_string(v / 2);
  }
}

// One structural edit somewhere in the tree.
void edit(Node& root, Rng& r, RawMutate raw) {
  std::vector<Node*> all, containers;
  collect(root, all, containers);
  Node* c = containers.empty() ? nullptr : containers[below(r, containers.size())];
  const std::size_t step = c && c->type == Type::Object ? 2 : 1;  // objects hold key, value pairs
  const std::size_t units = c ? c->kids.size() / step : 0;
  switch (below(r, 8)) {
    case 0:  // delete a member or item
      if (units) {
        const std::size_t i = below(r, units) * step;
        c->kids.erase(c->kids.begin() + static_cast<std::ptrdiff_t>(i), c->kids.begin() + static_cast<std::ptrdiff_t>(i + step));
        return;
      }
      break;
    case 1:  // duplicate one (a repeated key is a case of its own for both readers)
      if (units && c->kids.size() < 4096) {
        const std::size_t i = below(r, units) * step, at = below(r, units + 1) * step;
        std::vector<Node> copy(c->kids.begin() + static_cast<std::ptrdiff_t>(i), c->kids.begin() + static_cast<std::ptrdiff_t>(i + step));
        c->kids.insert(c->kids.begin() + static_cast<std::ptrdiff_t>(at), copy.begin(), copy.end());
        return;
      }
      break;
    case 2:  // swap two
      if (units >= 2) {
        const std::size_t i = below(r, units) * step, j = below(r, units) * step;
        for (std::size_t k = 0; k < step; ++k) std::swap(c->kids[i + k], c->kids[j + k]);
        return;
      }
      break;
    case 3:  // insert a fresh member or item
      if (c) {
        const std::size_t at = below(r, units + 1) * step;
        std::vector<Node> add;
        if (step == 2) add.push_back(below(r, 3) ? string(kKeys[below(r, std::size(kKeys))]) : string("t" + std::to_string(below(r, 100))));
        add.push_back(fresh_value(r));
        c->kids.insert(c->kids.begin() + static_cast<std::ptrdiff_t>(at), add.begin(), add.end());
        return;
      }
      break;
    default: break;
  }
  Node* n = all[below(r, all.size())];
  switch (below(r, 4)) {
    case 0:  // another kind of value (keys stay strings)
      if (n != &root) {
        bool is_key = false;
        for (Node* p : containers)
          if (p->type == Type::Object)
            for (std::size_t i = 0; i < p->kids.size(); i += 2) is_key |= &p->kids[i] == n;
        if (!is_key) *n = fresh_value(r);
      }
      return;
    case 1:
      if (n->type == Type::Scalar) n->text = tweak_number(n->text, r);
      else if (n->type == Type::String) *n = string(below(r, 2) ? kDtypes[below(r, std::size(kDtypes))].name : kKeys[below(r, std::size(kKeys))]);
      return;
    case 2:
      if (n->type == Type::String) *n = string(below(r, 2) ? kBadDtypes[below(r, std::size(kBadDtypes))] : kStrings[below(r, std::size(kStrings))]);
      else if (n->type == Type::Scalar) n->text = std::string(kNumbers[below(r, std::size(kNumbers))]);
      return;
    default:  // raw bytes inside one scalar or string (quotes kept)
      if ((n->type == Type::String || n->type == Type::Scalar) && raw) {
        const bool q = n->type == Type::String && n->text.size() >= 2;
        std::string inner = q ? n->text.substr(1, n->text.size() - 2) : n->text;
        std::vector<std::uint8_t> buf(inner.begin(), inner.end());
        buf.resize(inner.size() + 16);
        const std::size_t len = raw(buf.data(), inner.size(), buf.size());
        inner.assign(reinterpret_cast<const char*>(buf.data()), std::min(len, buf.size()));
        n->text = q ? "\"" + inner + "\"" : inner;
      }
      return;
  }
}

const Node* member(const Node& obj, std::string_view key) {
  for (std::size_t i = 0; i + 1 < obj.kids.size(); i += 2)
    if (obj.kids[i].text.size() == key.size() + 2 && obj.kids[i].text.compare(1, key.size(), key) == 0) return &obj.kids[i + 1];
  return nullptr;
}

// Contiguous data_offsets for every tensor entry whose size follows from its dtype and shape, in
// document order; the data region is resized to the new end. false when it would exceed limit.
bool repair_offsets(Node& root, std::vector<std::uint8_t>& data, std::size_t limit) {
  if (root.type != Type::Object) return true;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i + 1 < root.kids.size(); i += 2) {
    Node& e = root.kids[i + 1];
    if (e.type != Type::Object || root.kids[i].text == "\"__metadata__\"") continue;
    const Node* dt = member(e, "dtype");
    const Node* shape = member(e, "shape");
    const Node* offs = member(e, "data_offsets");
    if (!dt || !shape || !offs || dt->type != Type::String || shape->type != Type::Array || offs->type != Type::Array) continue;
    unsigned bits = 0;
    for (const auto& d : kDtypes)
      if (dt->text.size() == d.name.size() + 2 && dt->text.compare(1, d.name.size(), d.name) == 0) bits = d.bits;
    if (bits == 0) continue;
    std::uint64_t count = 1;
    bool ok = true;
    for (const Node& dim : shape->kids) {
      ok = ok && dim.type == Type::Scalar && !dim.text.empty() && dim.text.size() <= 12 &&
           dim.text.find_first_not_of("0123456789") == std::string::npos;
      if (!ok) break;
      count *= std::stoull(dim.text);
      ok = count <= limit * 8;
    }
    if (!ok || count * bits % 8 != 0) continue;
    const std::uint64_t size = count * bits / 8;
    if (offset + size > limit) return false;
    for (std::size_t k = 0; k + 1 < e.kids.size(); k += 2)
      if (&e.kids[k + 1] == offs) e.kids[k + 1] = Node{Type::Array, {}, {scalar(std::to_string(offset)), scalar(std::to_string(offset + size))}};
    offset += size;
  }
  data.resize(offset, 0);
  return true;
}

void pad_to_8(std::string& header) {
  while ((8 + header.size()) % 8) header += ' ';
}

std::size_t raw_header_mutation(Container c, std::uint8_t* data, std::size_t max, RawMutate raw) {
  if (max < 8 + c.data.size()) return 0;
  std::vector<std::uint8_t> buf(c.header.begin(), c.header.end());
  const std::size_t room = std::min<std::size_t>(max - 8 - c.data.size(), c.header.size() + 64);
  if (room < buf.size()) return 0;
  buf.resize(room);
  const std::size_t len = raw(buf.data(), c.header.size(), room);
  c.header.assign(reinterpret_cast<const char*>(buf.data()), std::min(len, room));
  return assemble(c, data, max);
}

}  // namespace

std::size_t mutate_container(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed, RawMutate raw) {
  Rng r(seed);
  const auto plain = [&] { return raw ? raw(data, size, max_size) : size; };
  auto c = split(data, size);
  const std::size_t pick = below(r, 10);
  if (!c || pick == 0) return plain();  // 1 in 10: raw bytes anywhere (prefix and data too)
  std::optional<Node> tree = gen::raw::parse(c->header);
  if (!tree || pick == 1) {
    const std::size_t n = raw ? raw_header_mutation(*c, data, max_size, raw) : 0;
    return n ? n : plain();
  }
  for (std::size_t edits = 1 + below(r, 3); edits-- > 0;) edit(*tree, r, raw);
  if (below(r, 4) != 0 && !repair_offsets(*tree, c->data, max_size)) return plain();
  c->header = gen::raw::emit(*tree);
  if (below(r, 2)) pad_to_8(c->header);
  const std::size_t n = assemble(*c, data, max_size);
  return n ? n : plain();
}

std::size_t cross_over_containers(const std::uint8_t* a, std::size_t na, const std::uint8_t* b, std::size_t nb,
                                  std::uint8_t* out, std::size_t max_out, unsigned seed) {
  Rng r(seed);
  auto ca = split(a, na), cb = split(b, nb);
  if (!ca || !cb) return 0;
  auto ta = gen::raw::parse(ca->header), tb = gen::raw::parse(cb->header);
  if (!ta || !tb || ta->type != Type::Object || tb->type != Type::Object || tb->kids.size() < 2) return 0;
  for (std::size_t k = 1 + below(r, 3); k-- > 0;) {
    const std::size_t from = below(r, tb->kids.size() / 2) * 2, at = below(r, ta->kids.size() / 2 + 1) * 2;
    ta->kids.insert(ta->kids.begin() + static_cast<std::ptrdiff_t>(at), tb->kids.begin() + static_cast<std::ptrdiff_t>(from),
                    tb->kids.begin() + static_cast<std::ptrdiff_t>(from + 2));
  }
  ca->data.insert(ca->data.end(), cb->data.begin(), cb->data.end());
  if (!repair_offsets(*ta, ca->data, max_out)) return 0;
  ca->header = gen::raw::emit(*ta);
  pad_to_8(ca->header);
  return assemble(*ca, out, max_out);
}

}  // namespace w4a8::fuzz
