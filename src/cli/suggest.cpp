#include "cli/suggest.hpp"

#include <algorithm>

namespace w4a8::cli {

std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
  if (a.size() > b.size()) std::swap(a, b);
  if (b.size() - a.size() > limit) return limit + 1;
  std::vector<std::size_t> prev(a.size() + 1), cur(a.size() + 1);
  for (std::size_t i = 0; i <= a.size(); ++i) prev[i] = i;
  for (std::size_t j = 1; j <= b.size(); ++j) {
    cur[0] = j;
    std::size_t row_min = cur[0];
    for (std::size_t i = 1; i <= a.size(); ++i) {
      cur[i] = std::min({prev[i - 1] + (a[i - 1] == b[j - 1] ? 0 : 1), prev[i] + 1, cur[i - 1] + 1});
      row_min = std::min(row_min, cur[i]);
    }
    if (row_min > limit) return limit + 1;  // every later row is at least this far
    std::swap(prev, cur);
  }
  return std::min(prev[a.size()], limit + 1);
}

std::vector<std::string> closest_names(std::string_view target, std::span<const std::string_view> candidates,
                                       std::size_t count) {
  const std::size_t limit = std::max<std::size_t>(3, target.size() / 3);
  std::vector<std::pair<std::size_t, std::size_t>> hits;  // (distance, candidate index)
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::size_t d = edit_distance(target, candidates[i], limit);
    if (d <= limit) hits.emplace_back(d, i);
  }
  std::stable_sort(hits.begin(), hits.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < hits.size() && i < count; ++i) out.emplace_back(candidates[hits[i].second]);
  return out;
}

}  // namespace w4a8::cli
