#include "gen/elf_oracle.hpp"

namespace w4a8::gen {
namespace {

// ELF64 field offsets (gABI): the file header, then one program header entry.
constexpr std::size_t kEhSize = 64, kIdentSize = 16, kClass = 4, kData = 5, kType = 16, kMachine = 18,
                      kPhoff = 32, kPhentsize = 54, kPhnum = 56;
constexpr std::size_t kPhSize = 56, kPType = 0, kPOffset = 8, kPFilesz = 32;
constexpr std::uint32_t kPtLoad = 1, kPtDynamic = 2;
constexpr std::uint16_t kEtDyn = 3, kEmX86_64 = 62;

// Little-endian unsigned load of N bytes at `at`. pre: at + N <= b.size().
template <std::size_t N>
std::uint64_t le(std::span<const std::uint8_t> b, std::uint64_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = N; i-- > 0;) v = (v << 8) | b[at + i];
  return v;
}

template <std::size_t N>
void put(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
  for (std::size_t i = 0; i < N; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

std::string elf_expected_reason(std::span<const std::uint8_t> f) {
  const std::uint64_t size = f.size();
  if (size < 4 || f[0] != 0x7f || f[1] != 'E' || f[2] != 'L' || f[3] != 'F') return "not an ELF file";
  if (size < kIdentSize) return "truncated: the ELF identification";
  if (f[kClass] != 2) return f[kClass] == 1 ? "a 32-bit ELF file" : "unknown ELF class ";
  if (f[kData] != 1) return f[kData] == 2 ? "a big-endian ELF file" : "unknown ELF byte order ";
  if (size < kEhSize) return "truncated: the ELF header";
  if (le<2>(f, kMachine) != kEmX86_64) return "built for ";
  if (le<2>(f, kType) != kEtDyn) return "not a shared library";
  if (le<2>(f, kPhentsize) != kPhSize) return "program header entries of ";
  const std::uint64_t phoff = le<8>(f, kPhoff), phnum = le<2>(f, kPhnum);
  // Exact arithmetic: phnum * 56 < 2^22, so only phoff itself can be out of range.
  if (phoff > size || phnum * kPhSize > size - phoff) return "truncated: the program header table";
  for (std::uint64_t i = 0; i < phnum; ++i) {
    const std::uint64_t e = phoff + i * kPhSize;
    const std::uint64_t type = le<4>(f, e + kPType);
    if (type != kPtLoad && type != kPtDynamic) continue;
    const std::string seg = "segment " + std::to_string(i) + (type == kPtLoad ? " (PT_LOAD)" : " (PT_DYNAMIC)");
    const std::uint64_t off = le<8>(f, e + kPOffset), len = le<8>(f, e + kPFilesz);
    const unsigned __int128 end = static_cast<unsigned __int128>(off) + len;
    if (end > UINT64_MAX) return seg + " has a file range that overflows";
    if (end > size) return "truncated: " + seg + " ends at byte " + std::to_string(static_cast<std::uint64_t>(end));
  }
  return "";
}

std::vector<std::pair<std::string, std::vector<std::uint8_t>>> elf_seeds() {
  constexpr std::size_t kFile = kEhSize + 2 * kPhSize;
  std::vector<std::uint8_t> ok(kFile, 0);
  ok[0] = 0x7f, ok[1] = 'E', ok[2] = 'L', ok[3] = 'F';
  ok[kClass] = 2, ok[kData] = 1, ok[6] = 1;  // EI_VERSION
  put<2>(ok, kType, kEtDyn);
  put<2>(ok, kMachine, kEmX86_64);
  put<4>(ok, 20, 1);  // e_version
  put<8>(ok, kPhoff, kEhSize);
  put<2>(ok, 52, kEhSize);  // e_ehsize
  put<2>(ok, kPhentsize, kPhSize);
  put<2>(ok, kPhnum, 2);
  const std::size_t load = kEhSize, dyn = kEhSize + kPhSize;
  put<4>(ok, load + kPType, kPtLoad);
  put<8>(ok, load + kPOffset, 0);
  put<8>(ok, load + kPFilesz, kFile);
  put<4>(ok, dyn + kPType, kPtDynamic);
  put<8>(ok, dyn + kPOffset, dyn);
  put<8>(ok, dyn + kPFilesz, kPhSize);

  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> seeds = {{"minimal-so", ok}};
  auto variant = [&](const std::string& name, auto edit) {
    std::vector<std::uint8_t> b = ok;
    edit(b);
    seeds.emplace_back(name, std::move(b));
  };
  variant("truncated-ident", [](auto& b) { b.resize(10); });
  variant("truncated-header", [](auto& b) { b.resize(40); });
  variant("class32", [](auto& b) { b[kClass] = 1; });
  variant("big-endian", [](auto& b) { b[kData] = 2; });
  variant("aarch64", [](auto& b) { put<2>(b, kMachine, 183); });
  variant("exec", [](auto& b) { put<2>(b, kType, 2); });
  variant("phentsize", [](auto& b) { put<2>(b, kPhentsize, 32); });
  variant("phoff-past-end", [&](auto& b) { put<8>(b, kPhoff, kFile - 8); });
  variant("load-past-end", [&](auto& b) { put<8>(b, load + kPFilesz, kFile + 1); });
  variant("dynamic-wraps", [&](auto& b) { put<8>(b, dyn + kPOffset, ~std::uint64_t{0} - 15); });
  return seeds;
}

}  // namespace w4a8::gen
