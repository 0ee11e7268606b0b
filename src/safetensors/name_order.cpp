#include "safetensors/name_order.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>

namespace w4a8::st::detail {
namespace {

constexpr std::size_t kMaxMergedRuns = 64;  // more ascending runs than this: the chunked sort
constexpr std::size_t kSmallRange = 16;     // ranges up to this size: insertion sort on whole names

// A name being sorted: its bytes (so sorting never reads the tensor table), its input position,
// and the 8 bytes it is currently sorted on.
struct Entry {
  std::uint64_t key;  // name bytes [depth, depth + 8), big-endian, zero-padded
  const char* p;
  std::uint32_t n;
  std::uint32_t index;
};

std::uint64_t chunk(const Entry& e, std::size_t depth) {
  std::uint64_t k = 0;
  if (depth + 8 <= e.n) {
    std::memcpy(&k, e.p + depth, 8);
    return std::endian::native == std::endian::little ? __builtin_bswap64(k) : k;
  }
  for (std::size_t i = 0; i < 8; ++i) k = k << 8 | (depth + i < e.n ? static_cast<unsigned char>(e.p[depth + i]) : 0u);
  return k;
}

// Name order for names that agree on their first `depth` bytes: 8-byte chunks compared as big-endian
// integers until they differ or a name ends (zero padding compares below every byte but NUL, so a
// tie there is settled by length). Negative, zero (equal names) or positive.
int compare_from(const Entry& a, const Entry& b, std::size_t depth) {
  const std::size_t m = std::min(a.n, b.n);
  for (; depth < m; depth += 8) {
    const std::uint64_t x = chunk(a, depth), y = chunk(b, depth);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.n == b.n ? 0 : (a.n < b.n ? -1 : 1);
}

// Strict name order (equal names: false).
bool name_less_from(const Entry& a, const Entry& b, std::size_t depth) { return compare_from(a, b, depth) < 0; }

// Name order, then input order.
bool less_from(const Entry& a, const Entry& b, std::size_t depth) {
  const int c = compare_from(a, b, depth);
  return c != 0 ? c < 0 : a.index < b.index;
}

bool same_name(const Entry& a, const Entry& b) { return a.n == b.n && std::memcmp(a.p, b.p, a.n) == 0; }

void insertion_sort(Entry* b, Entry* e, std::size_t depth) {
  for (Entry* i = b + 1; i < e; ++i) {
    const Entry x = *i;
    Entry* j = i;
    for (; j > b && less_from(x, j[-1], depth); --j) *j = j[-1];
    *j = x;
  }
}

// Bytes every name shares at its start.
std::size_t common_prefix(const Entry* e, std::size_t n) {
  std::size_t lcp = e[0].n;
  for (std::size_t i = 1; i < n && lcp > 0; ++i) {
    std::size_t m = std::min<std::size_t>(lcp, e[i].n);
    std::size_t k = 0;
    for (std::uint64_t x, y; k + 8 <= m; k += 8) {
      std::memcpy(&x, e[0].p + k, 8);
      std::memcpy(&y, e[i].p + k, 8);
      if (x != y) {  // the first differing byte: the lowest one in memory order
        const int bit = std::endian::native == std::endian::little ? __builtin_ctzll(x ^ y) : __builtin_clzll(x ^ y);
        m = k += static_cast<std::size_t>(bit / 8);
        break;
      }
    }
    while (k < m && e[0].p[k] == e[i].p[k]) ++k;
    lcp = k;
  }
  return lcp;
}

// Most-significant-digit refinement on 8-byte chunks with an explicit work list, so the cost is
// linear in the bytes that tell names apart (names share long prefixes such as "model.diffusion_model.").
// pre: every name starts with the same `lcp` bytes.
void chunked_sort(Entry* all, std::size_t n, std::size_t lcp) {
  struct Range {
    std::size_t begin, end, depth;  // entries whose names agree on bytes [0, depth)
  };
  std::vector<Range> work = {{0, n, lcp}};
  while (!work.empty()) {
    const Range r = work.back();
    work.pop_back();
    Entry* const b = all + r.begin;
    Entry* const e = all + r.end;
    if (r.end - r.begin <= kSmallRange) {
      insertion_sort(b, e, r.depth);
      continue;
    }
    for (Entry* p = b; p != e; ++p) p->key = chunk(*p, r.depth);
    std::sort(b, e, [](const Entry& x, const Entry& y) { return x.key < y.key; });
    for (Entry* run = b; run != e;) {
      Entry* q = run + 1;
      while (q != e && q->key == run->key) ++q;
      if (q - run > 1) {
        // Equal chunks: a name that ends within them is a prefix of the others (the padding
        // equals their NUL bytes), so it sorts first, shorter first, then by input position.
        const std::size_t end_depth = r.depth + 8;
        Entry* longer = std::partition(run, q, [&](const Entry& x) { return x.n <= end_depth; });
        std::sort(run, longer, [](const Entry& x, const Entry& y) { return x.n != y.n ? x.n < y.n : x.index < y.index; });
        if (q - longer > 1) work.push_back({std::size_t(longer - all), std::size_t(q - all), end_depth});
      }
      run = q;
    }
  }
}

}  // namespace

bool sort_by_name(std::vector<TensorInfo>& v) {
  const std::size_t n = v.size();  // n <= header bytes / 2 < 2^32
  if (n < 2) return false;
  std::unique_ptr<Entry[]> e(new Entry[n]);
  for (std::size_t i = 0; i < n; ++i)
    e[i] = {0, v[i].name.data(), static_cast<std::uint32_t>(v[i].name.size()), static_cast<std::uint32_t>(i)};
  // Names share long prefixes ("model.diffusion_model."): every comparison starts after them.
  const std::size_t lcp = common_prefix(e.get(), n);
  // Ascending runs (strictly: a repeat starts a new one). One run: sorted, no repeats, nothing to do.
  std::vector<std::size_t> runs = {0};
  for (std::size_t i = 1; i < n && runs.size() <= kMaxMergedRuns; ++i)
    if (!name_less_from(e[i - 1], e[i], lcp)) runs.push_back(i);
  if (runs.size() == 1) return false;
  if (runs.size() <= kMaxMergedRuns) {
    // The crate's writer emits names sorted within each dtype group: a few runs, merged pairwise.
    runs.push_back(n);
    const auto less = [lcp](const Entry& x, const Entry& y) { return less_from(x, y, lcp); };
    while (runs.size() > 2) {
      std::vector<std::size_t> merged = {0};
      for (std::size_t r = 0; r + 2 < runs.size(); r += 2) {
        std::inplace_merge(e.get() + runs[r], e.get() + runs[r + 1], e.get() + runs[r + 2], less);
        merged.push_back(runs[r + 2]);
      }
      if (runs.size() % 2 == 0) merged.push_back(runs.back());  // an odd run out waits a round
      runs = std::move(merged);
    }
  } else {
    chunked_sort(e.get(), n, lcp);
  }
  // Equal names are adjacent, in input order, and the last of them stays.
  bool dropped = false;
  for (std::size_t k = 0; k + 1 < n && !dropped; ++k) dropped = same_name(e[k], e[k + 1]);
  // In place, cycle by cycle (a done slot gets its own index), then the repeats squeezed out. Not
  // gathered into a second table: its first-touch page faults cost more than the scattered moves.
  for (std::uint32_t k = 0; k < n; ++k) {
    if (e[k].index == k) continue;
    TensorInfo held = std::move(v[k]);
    std::uint32_t j = k;
    while (true) {
      const std::uint32_t src = e[j].index;
      e[j].index = j;
      if (src == k) {
        v[j] = std::move(held);
        break;
      }
      // The next entry of the cycle is known a step ahead: fetch it while this one moves (the
      // table is larger than L2 at 20,000 tensors, and these moves are otherwise cache misses).
      __builtin_prefetch(&v[e[src].index]);
      v[j] = std::move(v[src]);
      j = src;
    }
  }
  if (dropped) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 1 < n && v[i].name == v[i + 1].name) continue;
      if (w != i) v[w] = std::move(v[i]);
      ++w;
    }
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(w), v.end());
  }
  return dropped;
}

}  // namespace w4a8::st::detail
