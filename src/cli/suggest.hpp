// "Did you mean": the names closest to a mistyped one, by edit distance.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::cli {

// Levenshtein distance, or limit + 1 once it must exceed `limit` (stops at the first row past it).
std::size_t edit_distance(std::string_view a, std::string_view b, std::size_t limit);

// Up to `count` candidates nearest to `target` (ties: candidate order), among those within
// max(3, target.size() / 3) edits.
std::vector<std::string> closest_names(std::string_view target, std::span<const std::string_view> candidates,
                                       std::size_t count = 3);

}  // namespace w4a8::cli
