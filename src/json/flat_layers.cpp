#include "json/flat_layers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/key_slots.hpp"

#include "json/flat_cursor.hpp"
#include "json/parse.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {
namespace {

constexpr std::size_t kRootDepth = 1;    // containers open around a root member's value
constexpr std::size_t kMarkerDepth = 2;  // around a marker (the root, "layers")

// A string token (quotes included) as json.loads decodes it. pre: flat::Cursor::skip_string took it.
std::string decode_string(std::string_view token) {
  ParseResult r = detail::loads_general(token);
  return r.ok() ? std::move(r->text) : std::string();  // (always ok: the token was checked)
}

// A key at c: its bytes when it is spelled without escapes (view: the text itself), else decoded
// into `decoded`. @return false when it is not a string json.loads accepts.
[[gnu::always_inline]] inline bool read_key(flat::Cursor& c, std::string_view& key, std::string& decoded, bool& escaped) {
  const char* const b = c.p;
  escaped = false;
  if (c.unescaped_string(key)) return true;
  c.p = b;
  if (!c.skip_string()) return false;
  decoded = decode_string({b, static_cast<std::size_t>(c.p - b)});
  key = decoded;
  escaped = true;
  return true;
}

// Where layer j's marker starts in the text.
std::uint32_t marker_at(const FlatLayers& layers, const FlatLayer& l, std::string_view text) {
  return static_cast<std::uint32_t>(layers.marker(l, text).data() - text.data());
}

// Python's dict on repeated layer keys: the first place, the last value. Without repeats the layers
// stay as they are and the table of their positions is left in `layers`. With repeats, each key's
// first layer takes the marker of its latest one (becoming indirect) and the later ones go, in
// place: no table is left. key_at(i): layer i's key.
template <class KeyAt>
void resolve_repeats(std::string_view text, FlatLayers& layers, const KeyAt& key_at) {
  const std::size_t n = layers.size();
  KeySlots seen;
  seen.rebuild(0, n, key_at);
  bool repeats = false;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::size_t at = seen.slot(key_at(i), key_at);
    if (seen[at] == KeySlots::kEmpty) {
      seen.put(at, i);
      continue;
    }
    layers.take_marker(seen[at], marker_at(layers, layers[i], text));  // (its key stays the one it has)
    layers.drop(i);
    repeats = true;
  }
  if (!repeats) {
    layers.set_key_slots(std::move(seen));
    return;
  }
  seen = KeySlots();
  layers.remove_dropped();
  layers.set_increasing(false);
}

void resolve_repeats(std::string_view text, FlatLayers& layers) {
  // Each key's length is kept, 2 bytes (0xFFFF: found again), so a probe reads the text only where
  // lengths agree. (Views, at 16 bytes a layer, were the peak for a document of escaped keys, 3.8x
  // its header; finding the key's end at every probe made a 1.5 M-layer header 25 % slower.)
  constexpr std::uint32_t kFindAgain = 0xFFFF;
  std::vector<std::uint16_t> length(layers.size());
  for (std::uint32_t i = 0; i < layers.size(); ++i)
    length[i] = static_cast<std::uint16_t>(std::min<std::size_t>(layers.key(layers[i], text).size(), kFindAgain));
  resolve_repeats(text, layers, [&](std::uint32_t i) {
    const FlatLayer& l = layers[i];
    if (l.indirect() || length[i] == kFindAgain) return layers.key(l, text);
    return std::string_view(text.data() + l.at(), length[i]);
  });
}

}  // namespace

void FlatLayers::take_marker(std::size_t j, std::uint32_t marker_at) {
  FlatLayer& l = layer(j);
  if (!l.indirect()) {  // its key is plain, where the layer says
    indirect_.push_back({l.at(), marker_at});
    l = FlatLayer(static_cast<std::uint32_t>(indirect_.size() - 1), false, true);
  } else {
    indirect_[l.at()].marker_at = marker_at;
  }
}

void FlatLayers::remove_dropped() {
  const std::size_t n = size();
  std::size_t w = 0;
  bool changed = false;  // the kept layer before is not this one's layer before in the document, or took another marker
  for (std::size_t r = 0; r < n; ++r) {
    FlatLayer l = layer(r);
    if (l.indirect() && l.at() == kDroppedAt) {
      changed = true;
      continue;
    }
    if (changed && l.repeats()) l = FlatLayer(l.at(), false);
    layer(w++) = l;
    changed = l.indirect();  // (conservative: an indirect layer's marker may be another's now)
  }
  const std::size_t blocks = (w + kBlock - 1) / kBlock;
  blocks_.resize(blocks);
  if (blocks > 0) {
    std::vector<FlatLayer>& last = blocks_.back();
    last.erase(last.begin() + static_cast<std::ptrdiff_t>(w - (blocks - 1) * kBlock), last.end());
  }
}

std::string_view FlatLayers::key(const FlatLayer& l, std::string_view text) const {
  std::uint32_t at = l.at();
  if (l.indirect()) {
    at = indirect_[at].key_at;
    if ((at & kDecoded) != 0) {
      const std::string_view d = decoded().substr(at & ~kDecoded);
      std::size_t n = 0, i = 0;
      for (unsigned shift = 0;; shift += 7) {  // (add_decoded_key's LEB128 length)
        const auto b = static_cast<unsigned char>(d[i++]);
        n |= std::size_t{b & 0x7Fu} << shift;
        if (b < 0x80) break;
      }
      return d.substr(i, n);
    }
  }
  const char* const b = text.data() + at;
  const void* q = std::memchr(b, '"', text.size() - at);  // (the read saw it: the key has no escapes)
  return {b, static_cast<std::size_t>(static_cast<const char*>(q) - b)};
}

FlatLayers::Text FlatLayers::read(const FlatLayer& l, std::string_view text, std::string_view previous) const {
  const std::string_view k = key(l, text);
  flat::Cursor c{nullptr, text.data() + text.size()};
  c.max_depth = static_cast<std::size_t>(kMaxDepth);  // (the read checked the depth against its own limit)
  if (l.indirect()) {
    c.p = text.data() + indirect_[l.at()].marker_at;
  } else {
    c.p = k.data() + k.size() + 1;
    c.ws();
    c.take(':');
    c.ws();
  }
  const char* const b = c.p;
  if (l.repeats() && !previous.empty()) return {k, {b, previous.size()}};
  c.skip(kMarkerDepth);  // (succeeds: the read checked this object)
  return {k, {b, static_cast<std::size_t>(c.p - b)}};
}

FlatRead read_flat_layers(std::string_view text, const LoadsOptions& opt) {
  FlatRead out;
  if (text.size() >= FlatLayer::kIndirect) return out;  // (offsets are 30-bit)
  flat::Cursor c{text.data(), text.data() + text.size()};
  c.max_depth = static_cast<std::size_t>(std::clamp(opt.max_depth, 1, kMaxDepth));
  // Non-ASCII bytes are checked in strings, where they belong (strict UTF-8: a marker's bytes are
  // parsed as bytes, where a WTF-8 surrogate is an error); anywhere else one is a syntax error.
  // json.loads checks the whole text first, so a failure reported here is the first one only if the
  // text is WTF-8 (else loads_str's failure is Unicode, as here then).
  const auto invalid = [&] {
    if (c.failure == ParseFailure::Unicode) {  // (in a string: the general parser's, surrogates and all)
      out.layers = FlatLayers();
      return std::move(out);
    }
    out.shape = MetadataShape::Invalid;
    out.error.failure = find_invalid_wtf8(text, true) == std::string_view::npos ? c.failure : ParseFailure::Unicode;
    out.error.offset = static_cast<std::size_t>(c.p - text.data());
    out.error.digits = c.digits;
    out.error.in_array = c.in_array;
    out.error.calling = c.calling;
    out.layers = FlatLayers();
    return std::move(out);
  };
  std::optional<FlatLayers> layers;  // the last "layers" object so far
  std::string decoded;  // a key decoded from escapes
  bool escaped = false;
  c.ws();
  if (c.p == c.end || *c.p != '{') {  // valid JSON of another kind, or none
    if (!c.skip(0)) return invalid();
    c.ws();
    if (c.p != c.end) return invalid();
    out.shape = MetadataShape::NotObject;
    return out;
  }
  ++c.p;
  c.ws();
  if (!c.take('}')) {
    while (true) {
      std::string_view key;
      if (!read_key(c, key, decoded, escaped)) return invalid();
      c.ws();
      if (!c.take(':')) return invalid();
      c.ws();
      if (key != "layers") {
        // Upstream reads only "layers": another member (repeated or not: the dict keeps its last
        // value, unread) need only be valid JSON.
        if (!c.skip(kRootDepth)) return invalid();
      } else if (c.p == c.end || *c.p != '{') {
        layers.reset();  // not an object: upstream's error, unless a later "layers" replaces it
        if (!c.skip(kRootDepth)) return invalid();
      } else {
        ++c.p;
        layers.emplace();  // (a "layers" before this one is replaced, as the dict replaces it)
        std::string_view last;  // the last object marker skip() read
        bool increasing = true;  // keys in increasing order are unique without a search
        std::string prev_decoded;  // the layer before's key, when decoded
        std::string_view prev_key;  // the layer before's
        c.ws();
        if (!c.take('}')) {
          while (true) {
            if (!read_key(c, key, decoded, escaped)) return invalid();
            c.ws();
            if (!c.take(':')) return invalid();
            c.ws();
            // A marker spelled as the one before is that object again: skip() reads exactly the
            // bytes up to its '}', so the same bytes give the same answer and the same end.
            const char* const b = c.p;
            const auto left = static_cast<std::size_t>(c.end - c.p);
            const bool repeats = !last.empty() && left >= last.size() && std::memcmp(c.p, last.data(), last.size()) == 0;
            if (repeats) {
              c.p += last.size();
            } else {
              if (!c.skip(kMarkerDepth)) return invalid();
              // (a marker that is not an object is upstream's error when its turn comes: kept as it is)
              last = *b == '{' ? std::string_view(b, static_cast<std::size_t>(c.p - b)) : std::string_view();
            }
            increasing = increasing && (layers->empty() || prev_key < key);
            if (escaped) {
              const auto m = static_cast<std::uint32_t>(b - text.data());
              layers->push_back(layers->indirect(layers->add_decoded_key(key), true, m));
              prev_decoded.swap(decoded);
              prev_key = prev_decoded;
            } else {
              layers->push_back(FlatLayer(static_cast<std::uint32_t>(key.data() - text.data()), repeats));
              prev_key = key;
            }
            c.ws();
            if (c.take('}')) break;
            if (!c.take(',')) return invalid();
            c.ws();
          }
        }
        if (!increasing) resolve_repeats(text, *layers);
        layers->set_increasing(increasing);
      }
      c.ws();
      if (c.take('}')) break;
      if (!c.take(',')) return invalid();
      c.ws();
    }
  }
  c.ws();
  if (c.p != c.end) return invalid();
  if (!layers) {
    out.shape = MetadataShape::NoLayers;
    return out;
  }
  out.shape = MetadataShape::Layers;
  out.layers = std::move(*layers);
  return out;
}

}  // namespace w4a8::json
