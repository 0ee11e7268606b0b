// Pinned decodings of choice-byte inputs (corpus/<target>.pins): for every regress-* input of a
// pinned target, the description it decoded to when it was kept. The generator reads choices in
// order, so a generator change silently turns an old input into a different scenario; comparing
// with the pin makes that loud, and re-pinning a conscious step:
//   build/fuzz/fuzz_decode pin validator_struct corpus/validator_struct > corpus/validator_struct.pins
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.hpp"

namespace w4a8::fuzz {

// Input names that are pinned: regress-* files.
bool is_pinned_name(const std::string& filename);

// "=== NAME" then the description's lines, per input. nullopt when the file cannot be read.
std::optional<std::map<std::string, std::string>> read_pins(const std::filesystem::path& file);
std::string format_pins(const Target& t, const std::vector<std::filesystem::path>& inputs);

// Every pinned input's description against its pin, and every pin against an input.
// @return "" or a loud report naming each mismatch and the re-pin command.
std::string check_pins(const Target& t, const std::vector<std::filesystem::path>& inputs,
                       const std::map<std::string, std::string>& pins, const std::filesystem::path& pins_file);

// Regular files under each path (directories recursively), sorted; *.pins files skipped.
std::vector<std::filesystem::path> collect_inputs(const std::vector<std::filesystem::path>& paths);
std::optional<std::string> read_bytes(const std::filesystem::path& p);

}  // namespace w4a8::fuzz
