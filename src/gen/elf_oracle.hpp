// A second reader of the ELF facts the plugin preflight (src/plugin/elf_check.cpp) judges, for the
// plugin_elf fuzz target: written from the ELF64 layout (System V gABI field offsets, explicit
// little-endian loads; no <elf.h> structs), so a slip in either reader shows as a disagreement.
// Also the committed seeds of that target (fuzz_make_seeds).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace w4a8::gen {

// What the preflight must say about `file` on an x86-64 host: "" (accepted), or the start of its
// reason, naming the rule that fails first in the preflight's order (with the segment's index,
// type and end where a segment is at fault).
std::string elf_expected_reason(std::span<const std::uint8_t> file);

// Seeds: a minimal x86-64 shared-library header (ELF header, a PT_LOAD covering the file and a
// PT_DYNAMIC inside it) and one variant per rule, named after it.
std::vector<std::pair<std::string, std::vector<std::uint8_t>>> elf_seeds();

}  // namespace w4a8::gen
