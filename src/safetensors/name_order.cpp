#include "safetensors/name_order.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "json/scan.hpp"

namespace w4a8::st::detail {
namespace {

constexpr std::size_t kMaxMergedRuns = 64;  // more ascending runs than this: the chunked sort
constexpr std::size_t kSmallRange = 16;     // ranges up to this size: insertion sort on whole names
constexpr std::uint32_t kAhead = 8;         // entries prefetched ahead of the moves
constexpr std::size_t kNear = 8;            // a name this close behind its place is moved there, not a new run

using Entry = NameOrder::Entry;

std::uint64_t chunk(const Entry& e, std::size_t depth) {
  std::uint64_t k = 0;  // a name's last chunk: its bytes first in memory, zeros after them
  if (depth + 8 <= e.n) std::memcpy(&k, e.p + depth, 8);
  else if (depth < e.n) std::memcpy(&k, e.p + depth, e.n - depth);
  return std::endian::native == std::endian::little ? __builtin_bswap64(k) : k;
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

// Name order, then input order.
bool less_from(const Entry& a, const Entry& b, std::size_t depth) {
  const int c = compare_from(a, b, depth);
  return c != 0 ? c < 0 : a.index < b.index;
}

// Starts loading a tensor-table entry that a move will read soon (both its cache lines: an entry may
// straddle two).
void prefetch_entry(const TensorInfo* t) {
  __builtin_prefetch(t);
  __builtin_prefetch(reinterpret_cast<const char*>(t) + sizeof(TensorInfo) - 1);
}

bool same_name(const Entry& a, const Entry& b) { return a.n == b.n && std::memcmp(a.p, b.p, a.n) == 0; }

// The first position >= from where the names differ, or the shorter length (one is a prefix of the
// other, or they are equal), or `limit` if that comes first. pre: they agree on [0, from).
std::uint32_t mismatch_from(const Entry& a, const Entry& b, std::uint32_t from, std::uint32_t limit = UINT32_MAX) {
  return static_cast<std::uint32_t>(json::scan::mismatch(a.p, b.p, from, std::min({a.n, b.n, limit})));
}

// a < b in name order, given k = mismatch_from(a, b, ...).
bool name_less_at(const Entry& a, const Entry& b, std::uint32_t k) {
  if (k == a.n || k == b.n) return a.n < b.n;
  return static_cast<unsigned char>(a.p[k]) < static_cast<unsigned char>(b.p[k]);
}

// Merges the ascending runs x = [a, a_end) and y = [b, b_end) (x before y in the input) into out,
// with LCP values (Entry::h). h of the heads against the last entry written tells most steps apart
// without reading a name: the head sharing more with it is the smaller; only equal values compare
// bytes, from there on. So the cost is the entries plus the bytes that tell names apart, and the
// names (scattered over the header) are rarely touched. Equal names: x's first (input order).
// pre: the first entry of each run has h = the bytes every name shares (its LCP with the last
// entry written before, for every entry of either run).
void lcp_merge(const Entry* a, const Entry* a_end, const Entry* b, const Entry* b_end, Entry* out) {
  std::uint32_t ha = a->h, hb = b->h;  // each head's LCP with the entry written last
  while (a != a_end && b != b_end) {
    bool take_a;
    if (ha != hb) {
      take_a = ha > hb;
    } else {
      const std::uint32_t k = mismatch_from(*a, *b, ha);
      take_a = !name_less_at(*b, *a, k);
      (take_a ? hb : ha) = k;  // the one left behind, against the one written
    }
    if (take_a) {
      *out = *a;
      out->h = ha;
      ++out;
      if (++a != a_end) ha = a->h;
    } else {
      *out = *b;
      out->h = hb;
      ++out;
      if (++b != b_end) hb = b->h;
    }
  }
  // The rest keeps its own LCP values, except the first of it, now against the last entry written.
  if (a != a_end) {
    Entry* first = out;
    out = std::copy(a, a_end, out);
    first->h = ha;
  }
  if (b != b_end) {
    Entry* first = out;
    std::copy(b, b_end, out);
    first->h = hb;
  }
}

void insertion_sort(Entry* b, Entry* e, std::size_t depth) {
  for (Entry* i = b + 1; i < e; ++i) {
    const Entry x = *i;
    Entry* j = i;
    for (; j > b && less_from(x, j[-1], depth); --j) *j = j[-1];
    *j = x;
  }
}

// Local disorder: e[i] is below the end of its run, which starts at `start`. Moves it back into place
// when that place is among the run's last kNear entries, keeping the run strictly ascending and its
// LCP values (Entry::h) right. Writers that emit a layer's tensors in their own order (weight, then
// its scales, then the marker) give ascending runs up to a few entries out of place; sorting those
// whole costs several times a merge. Stays within the run's span of the input, so a run still holds
// only names from its own stretch of the input and the merge's tie rule (input order) holds.
// k: mismatch_from(e[i - 1], e[i], 0). A name that becomes its run's first gets h = 0 here (sort()
// sets every run's first). @return false (nothing moved) when the place is further back or e[i]
// equals a name there.
bool insert_near_end(Entry* e, std::size_t start, std::size_t i, std::uint32_t k) {
  const Entry x = e[i];
  std::uint32_t k_after = k;  // x against the entry it will precede
  if (k_after == x.n && x.n == e[i - 1].n) return false;     // a repeat: the merge's tie rule handles it
  std::size_t p = i - 1;                                      // invariant: x < e[p]
  std::uint32_t k_before = 0;  // x against the entry it will follow (when it becomes the first: sort() sets it)
  while (true) {
    if (p == start) break;  // x becomes the run's first
    if (i - p >= kNear) return false;
    // x against e[p - 1] from the LCPs known: e[p - 1] < e[p] first differ at e[p].h, x < e[p] at
    // k_after. Whichever is earlier decides; bytes are read only when they coincide.
    if (e[p].h < k_after) {  // x agrees with e[p] there, so x > e[p - 1]
      k_before = e[p].h;
      break;
    }
    if (e[p].h == k_after) {
      const std::uint32_t kp = mismatch_from(e[p - 1], x, k_after);
      if (kp == x.n && x.n == e[p - 1].n) return false;
      if (name_less_at(e[p - 1], x, kp)) {
        k_before = kp;
        break;
      }
      k_after = kp;
    }  // else e[p - 1] agrees with e[p] up to where x < e[p]: x < e[p - 1], k_after unchanged
    --p;
  }
  std::copy_backward(e + p, e + i, e + i + 1);
  e[p] = x;
  e[p].h = k_before;
  e[p + 1].h = k_after;
  return true;
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

bool sort_by_name(std::vector<TensorInfo>& v, std::size_t gather_from) {
  NameOrder order;
  order.reserve(v.size());
  for (const TensorInfo& t : v) order.add(t.name);
  return order.sort(v, gather_from);
}

void NameOrder::add(std::string_view name) {
  const auto i = static_cast<std::uint32_t>(e_.size());
  e_.push_back({0, name.data(), static_cast<std::uint32_t>(name.size()), i, 0});
  if (i == 0) {
    lcp_ = e_[0].n;
    runs_ = {0};
    return;
  }
  // Against the entry before it (its input predecessor, or the end of the run a name was moved into):
  // every name is compared with an earlier one, so the least of these LCPs is the names' common prefix.
  Entry* const e = e_.data();
  const std::uint32_t k = mismatch_from(e[i - 1], e[i], 0);
  lcp_ = std::min(lcp_, k);
  if (runs_.size() > kMaxMergedRuns) return;  // the chunked sort: runs no longer matter
  // Ascending runs (strictly: a repeat starts a new one), each entry's LCP with its predecessor
  // noted for the merge; a name a few places out of order is moved into its run. A run's first entry
  // gets its LCP in sort(), once the common prefix is known.
  if (name_less_at(e[i - 1], e[i], k)) {
    e[i].h = k;
  } else if (insert_near_end(e, runs_.back(), i, k)) {
    moved_ = true;
  } else {
    runs_.push_back(i);
  }
}

namespace {

// lcp[k] = e[k].h for k >= 1 (each entry's LCP with the one before it), lcp[0] = 0.
void lcp_from(const Entry* e, std::size_t n, std::vector<std::uint32_t>* lcp) {
  if (lcp == nullptr) return;
  lcp->resize(n);
  if (n > 0) (*lcp)[0] = 0;
  for (std::size_t k = 1; k < n; ++k) (*lcp)[k] = e[k].h;
}

}  // namespace

bool NameOrder::sort(std::vector<TensorInfo>& v, std::size_t gather_from, std::vector<std::uint32_t>* lcp_out) {
  const std::size_t n = v.size();  // n <= header bytes / 2 < 2^32
  if (lcp_out != nullptr) lcp_out->clear();
  if (n < 2) {
    if (lcp_out != nullptr) lcp_out->assign(n, 0);
    return false;
  }
  if (e_.size() != n) return sort_by_name(v, gather_from);  // (not the names added: start again from the table's)
  // One run that nothing was moved in: sorted, no repeats, nothing to do (each entry's h is its LCP
  // with the one before it already).
  if (runs_.size() == 1 && !moved_) {
    lcp_from(e_.data(), n, lcp_out);
    return false;
  }
  std::vector<Entry> entries = std::move(e_);
  std::unique_ptr<Entry[]> spare;  // the merge's second array
  Entry* e = entries.data();       // the entries in their current order (in one of the two)
  std::vector<std::size_t> runs = std::move(runs_);
  const std::uint32_t lcp = lcp_;  // names share long prefixes ("model.diffusion_model."): comparisons start after them
  if (runs.size() <= kMaxMergedRuns)
    for (std::size_t r : runs) e[r].h = lcp;  // the merge's precondition: each run's first against the names' common prefix
  bool dropped = false;
  if (runs.size() <= kMaxMergedRuns) {
    // The crate's writer emits names sorted within each dtype group: a few runs, merged pairwise
    // (adjacent runs, so the left one always came first in the input).
    runs.push_back(n);
    if (runs.size() > 2) spare.reset(new Entry[n]);  // (not value-initialized: every entry is written before it is read)
    Entry* other = spare.get();
    while (runs.size() > 2) {
      std::vector<std::size_t> merged = {0};
      std::size_t r = 0;
      for (; r + 2 < runs.size(); r += 2) {
        lcp_merge(e + runs[r], e + runs[r + 1], e + runs[r + 1], e + runs[r + 2], other + runs[r]);
        merged.push_back(runs[r + 2]);
      }
      if (r + 1 < runs.size()) {  // an odd run out waits a round
        std::copy(e + runs[r], e + runs[r + 1], other + runs[r]);
        merged.push_back(runs[r + 1]);
      }
      std::swap(e, other);
      runs = std::move(merged);
    }
    // Equal names are adjacent, in input order: the whole name shared with the previous one.
    for (std::size_t k = 1; k < n && !dropped; ++k) dropped = e[k].h == e[k].n && e[k - 1].n == e[k].n;
    // The array the last round did not write into is done with: freed before anything else is
    // allocated, so the order arrays below do not raise the peak (at 20k tensors it decides
    // whether the heap needs another 2 MiB page).
    if (e == entries.data()) spare.reset();
    else entries = {};
    // The merge left each entry's LCP with the one written before it: the sorted table's (unless
    // repeats go, which changes neighbours; then, as after the chunked sort, none is given).
    if (!dropped) lcp_from(e, n, lcp_out);
  } else {
    chunked_sort(e, n, lcp);
    // Equal names are adjacent, in input order, and the last of them stays.
    for (std::size_t k = 0; k + 1 < n && !dropped; ++k) dropped = same_name(e[k], e[k + 1]);
  }
  if (n >= gather_from) {
    // A large table is gathered into a new one in name order: the reads follow the input's sorted
    // runs (a few streams the prefetcher follows; the explicit prefetch covers the rest) and the
    // writes are sequential, where following the permutation's cycles in place misses the cache on
    // nearly every move, reads and writes alike (a third of a 500k-tensor `validate`, docs/benchmark-history.md).
    // The price is a second table during the pass (the entries give way to a bare order first, so
    // the peak stays that of the sort) and its first-touch page faults, which cost more than the
    // cycles' misses below kGatherFrom (20k tensors in process: 1.39 -> 2.17 ms).
    std::unique_ptr<std::uint32_t[]> order(new std::uint32_t[n]);
    for (std::size_t k = 0; k < n; ++k) order[k] = e[k].index;
    entries = {};
    spare.reset();
    std::vector<TensorInfo> sorted;
    sorted.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      if (k + kAhead < n) prefetch_entry(&v[order[k + kAhead]]);
      sorted.push_back(std::move(v[order[k]]));
    }
    v.swap(sorted);
  } else {
    // Otherwise in place, cycle by cycle (a done slot gets its own index). The cycles are walked in
    // a bare order (4 bytes a tensor: in L2 at 20,000 tensors) rather than in the 32-byte entries:
    // the lookahead below is a chain of dependent loads, and through the entries each one missed L2
    // (a tenth of a 20k-tensor `validate`, most of it waiting on that chain).
    std::unique_ptr<std::uint32_t[]> order(new std::uint32_t[n]);
    for (std::size_t k = 0; k < n; ++k) order[k] = e[k].index;
    entries = {};
    spare.reset();
    for (std::uint32_t k = 0; k < n; ++k) {
      if (order[k] == k) continue;
      TensorInfo held = std::move(v[k]);
      std::uint32_t j = k;
      // The cycle's entries are known ahead: fetch kAhead of them early, or each move waits on a
      // cache miss (the table is larger than L2 at 20,000 tensors). A lookahead past the cycle's end
      // reads finished slots (their own index): harmless prefetches.
      std::uint32_t ahead = k;
      const auto fetch = [&](std::uint32_t i) { prefetch_entry(&v[i]); };
      for (std::uint32_t d = 0; d < kAhead; ++d) fetch(ahead = order[ahead]);
      while (true) {
        const std::uint32_t src = order[j];
        order[j] = j;
        if (src == k) {
          v[j] = std::move(held);
          break;
        }
        fetch(ahead = order[ahead]);
        v[j] = std::move(v[src]);
        j = src;
      }
    }
  }
  // Then the repeats squeezed out.
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
