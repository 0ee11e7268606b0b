// Preflight of a kernel plugin file before dlopen(): glibc maps a shared library's segments
// straight from the file, so a truncated one dies with SIGBUS on first touch, and one built for
// another machine gets a misleading "No such file or directory". Reading the ELF header and the
// program headers first (bounded reads, none of the file's sizes trusted) turns both into a reason.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/result.hpp"

namespace w4a8::plugin {

// Refuses what this process cannot map: not an ELF file; not this build's class (64-bit), byte
// order (little-endian) and e_machine; not ET_DYN; program header entries of a foreign size; the
// program header table, or a PT_LOAD / PT_DYNAMIC segment's file range [p_offset, p_offset +
// p_filesz), overflowing or past the end of the file. A file that cannot be opened passes: dlopen()
// then says why. On hosts other than 64-bit little-endian ones the check is skipped (Ok).
// @return Ok, or PluginLoadFailed naming `path` and what is wrong.
Status check_elf(const std::string& path);

// The same check over a whole file held in memory (the plugin_elf fuzz target's entry: the rules
// and reads are check_elf's, only the bytes come from `file`). @return what check_elf would report
// after "PATH: ", or "" when nothing is wrong (always "" where the check is skipped).
std::string elf_defect(std::span<const std::uint8_t> file);

}  // namespace w4a8::plugin
