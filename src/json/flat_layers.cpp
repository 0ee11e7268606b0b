#include "json/flat_layers.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/key_slots.hpp"

#include "json/flat_cursor.hpp"

namespace w4a8::json {
namespace {

// Whether two layers share a key; if not, the table of their positions is left in `layers`. (The
// keys are found once, for the table's probes: 16 bytes a layer while it runs.)
bool has_repeat(std::string_view text, FlatLayers& layers) {
  std::vector<std::string_view> keys;
  keys.reserve(layers.size());
  for (const FlatLayer& l : layers) keys.push_back(l.key(text));
  const auto key_at = [&](std::uint32_t i) { return keys[i]; };
  const std::size_t n = keys.size();
  KeySlots seen;
  seen.rebuild(0, n, key_at);
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::size_t at = seen.slot(key_at(i), key_at);
    if (seen[at] != KeySlots::kEmpty) return true;
    seen.put(at, i);
  }
  layers.set_key_slots(std::move(seen));
  return false;
}

}  // namespace

std::string_view FlatLayer::key(std::string_view text) const {
  const char* const b = text.data() + key_at();
  const void* q = std::memchr(b, '"', text.size() - key_at());  // (the read saw it: the keys it takes have no escapes)
  return {b, static_cast<std::size_t>(static_cast<const char*>(q) - b)};
}

FlatLayer::Text FlatLayer::read(std::string_view text, std::string_view previous) const {
  const std::string_view k = key(text);
  flat::Cursor c{k.data() + k.size() + 1, text.data() + text.size()};
  c.ws();
  c.take(':');
  c.ws();
  const char* const b = c.p;
  if (repeats() && !previous.empty()) return {k, {b, previous.size()}};
  c.skip();  // (succeeds: the read checked this object)
  return {k, {b, static_cast<std::size_t>(c.p - b)}};
}

std::optional<FlatLayers> read_flat_layers(std::string_view text) {
  if (text.size() >= FlatLayer::kRepeats) return std::nullopt;  // (offsets are 31-bit)
  flat::Cursor c{text.data(), text.data() + text.size()};
  std::optional<FlatLayers> layers;
  c.ws();
  if (!c.take('{')) return std::nullopt;
  c.ws();
  if (!c.take('}')) {
    while (true) {
      std::string_view key;
      if (!c.unescaped_string(key)) return std::nullopt;
      c.ws();
      if (!c.take(':')) return std::nullopt;
      c.ws();
      if (key != "layers") {
        // Upstream reads only "layers": another member (repeated or not: the dict keeps its last
        // value, unread) need only be valid JSON.
        if (!c.skip()) return std::nullopt;
      } else {
        if (layers || !c.take('{')) return std::nullopt;  // a second "layers" replaces the first: the parser's
        layers.emplace();
        std::string_view last;  // the last marker skip() read
        bool increasing = true;  // keys in increasing order are unique without a search
        std::string_view prev_key;  // the layer before's
        c.ws();
        if (!c.take('}')) {
          while (true) {
            if (!c.unescaped_string(key)) return std::nullopt;
            c.ws();
            if (!c.take(':')) return std::nullopt;
            c.ws();
            // A marker spelled as the one before is that object again: skip() reads exactly the
            // bytes up to its '}', so the same bytes give the same answer and the same end.
            const char* const b = c.p;
            const auto left = static_cast<std::size_t>(c.end - c.p);
            const bool repeats = !last.empty() && left >= last.size() && std::memcmp(c.p, last.data(), last.size()) == 0;
            if (repeats) {
              c.p += last.size();
            } else {
              if (c.p == c.end || *c.p != '{' || !c.skip()) return std::nullopt;  // (not an object: upstream's error)
              last = {b, static_cast<std::size_t>(c.p - b)};
            }
            increasing = increasing && (layers->empty() || prev_key < key);
            prev_key = key;
            layers->push_back(FlatLayer(static_cast<std::uint32_t>(key.data() - text.data()), repeats));
            c.ws();
            if (c.take('}')) break;
            if (!c.take(',')) return std::nullopt;
            c.ws();
          }
        }
        if (!increasing && has_repeat(text, *layers)) return std::nullopt;
        layers->set_increasing(increasing);
      }
      c.ws();
      if (c.take('}')) break;
      if (!c.take(',')) return std::nullopt;
      c.ws();
    }
  }
  c.ws();
  if (c.p != c.end) return std::nullopt;
  return layers;  // (nullopt when there was no "layers": the general parser reports that)
}

}  // namespace w4a8::json
