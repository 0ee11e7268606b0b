// A structure-preserving mutator for safetensors containers (libFuzzer's LLVMFuzzerCustomMutator
// for fuzz_container): edits the header JSON as a tree (raw_json.hpp: insert, delete, duplicate,
// reorder members and items, change numbers and strings, swap a value for another kind), then
// rewrites the 8-byte length prefix and, most of the time, the data_offsets of every tensor whose
// dtype and shape it can size, resizing the data region to match. So an edit that changes a
// length (a longer name, one more dimension, a new tensor) still yields a file the reader takes
// apart past its first check. Some of the time it falls back to a raw byte mutation of the whole
// file or of the header text alone (the prefix repaired). Deterministic in (input, seed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace w4a8::fuzz {

// A raw byte mutator with LLVMFuzzerMutate's contract: mutates data[0, size) in place, returns the
// new size (<= max_size).
using RawMutate = std::size_t (*)(std::uint8_t* data, std::size_t size, std::size_t max_size);

// @return the new size (<= max_size) of data, mutated in place.
std::size_t mutate_container(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed, RawMutate raw);

// A's header with one to three top-level members of B's header spliced in (offsets repaired).
// @return the size written to out (<= max_out), or 0 when either input is no container.
std::size_t cross_over_containers(const std::uint8_t* a, std::size_t na, const std::uint8_t* b, std::size_t nb,
                                  std::uint8_t* out, std::size_t max_out, unsigned seed);

}  // namespace w4a8::fuzz
