#include "plugin/elf_check.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace w4a8::plugin {
namespace {

// This process's machine, from the build target: it is fixed when this file is compiled, and
// comparing with /proc/self/exe would add a file read that fails where /proc is not mounted.
#if defined(__LP64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#if defined(__x86_64__)
#define W4A8_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define W4A8_ELF_MACHINE EM_AARCH64
#elif defined(__riscv)
#define W4A8_ELF_MACHINE 243  // EM_RISCV
#elif defined(__powerpc64__)
#define W4A8_ELF_MACHINE EM_PPC64
#elif defined(__loongarch64)
#define W4A8_ELF_MACHINE 258  // EM_LOONGARCH (missing from older <elf.h>)
#endif
#endif

#ifdef W4A8_ELF_MACHINE
constexpr std::uint16_t kMachine = W4A8_ELF_MACHINE;

std::string machine_name(std::uint16_t m) {
  switch (m) {
    case EM_386: return "x86 (i386)";
    case EM_ARM: return "32-bit ARM";
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "AArch64";
    case 243: return "RISC-V";
    case EM_PPC: return "PowerPC";
    case EM_PPC64: return "PowerPC64";
    case EM_S390: return "s390";
    case EM_MIPS: return "MIPS";
    case EM_SPARCV9: return "SPARC V9";
    case 258: return "LoongArch";
    default: return "";
  }
}

std::string type_name(std::uint16_t t) {
  switch (t) {
    case ET_NONE: return "ET_NONE";
    case ET_REL: return "ET_REL, a relocatable object";
    case ET_EXEC: return "ET_EXEC, an executable";
    case ET_CORE: return "ET_CORE, a core dump";
    default: return std::to_string(t);
  }
}

// The file's bytes, read at an offset: from a descriptor (check_elf) or from memory (elf_defect).
// Both answer false on a short read, so a truncated file reads the same either way.
struct FdReader {
  int fd;
  // Fills buf with n bytes at `at`; false on a short read or an error.
  bool operator()(void* buf, std::size_t n, std::uint64_t at) const {
    auto* p = static_cast<unsigned char*>(buf);
    while (n > 0) {
      const ssize_t got = ::pread(fd, p, n, off_t(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      p += got, n -= std::size_t(got), at += std::uint64_t(got);
    }
    return true;
  }
};

struct MemoryReader {
  std::span<const std::uint8_t> file;
  bool operator()(void* buf, std::size_t n, std::uint64_t at) const {
    if (at > file.size() || file.size() - at < n) return false;
    if (n != 0) std::memcpy(buf, file.data() + at, n);
    return true;
  }
};

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// What is wrong with a file of `size` bytes that read_at reads, or "" when nothing is.
template <class ReadAt>
std::string defect(const ReadAt& read_at, std::uint64_t size) {
  Elf64_Ehdr eh{};
  const std::size_t head = size < sizeof eh ? std::size_t(size) : sizeof eh;
  if (!read_at(&eh, head, 0)) return "it could not be read";
  if (head < SELFMAG || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return "not an ELF file";
  if (head < EI_NIDENT)
    return "truncated: the ELF identification needs " + std::to_string(EI_NIDENT) + " bytes, the file has " +
           std::to_string(size);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return eh.e_ident[EI_CLASS] == ELFCLASS32 ? "a 32-bit ELF file (ELFCLASS32), this is a 64-bit process"
                                              : "unknown ELF class " + std::to_string(eh.e_ident[EI_CLASS]);
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return eh.e_ident[EI_DATA] == ELFDATA2MSB ? "a big-endian ELF file, this machine is little-endian"
                                              : "unknown ELF byte order " + std::to_string(eh.e_ident[EI_DATA]);
  if (head < sizeof eh)
    return "truncated: the ELF header needs " + std::to_string(sizeof eh) + " bytes, the file has " +
           std::to_string(size);
  if (eh.e_machine != kMachine) {
    const std::string theirs = machine_name(eh.e_machine);
    return "built for " + (theirs.empty() ? "another machine" : theirs) + " (e_machine " +
           std::to_string(eh.e_machine) + "), this is " + machine_name(kMachine);
  }
  if (eh.e_type != ET_DYN) return "not a shared library (ELF type " + type_name(eh.e_type) + ")";
  if (eh.e_phentsize != sizeof(Elf64_Phdr))
    return "program header entries of " + std::to_string(eh.e_phentsize) + " bytes, expected " +
           std::to_string(sizeof(Elf64_Phdr));
  // At most 65535 * 56 bytes: the count is 16 bits wide, so this read is bounded whatever it says.
  const std::uint64_t table = std::uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr);
  if (eh.e_phoff > size || size - eh.e_phoff < table)
    return "truncated: the program header table (" + std::to_string(eh.e_phnum) + " entries at byte " +
           std::to_string(eh.e_phoff) + ") does not fit in the file's " + std::to_string(size) + " bytes";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(ph.data(), std::size_t(table), eh.e_phoff)) return "its program headers could not be read";
  for (std::size_t i = 0; i < ph.size(); ++i) {
    const Elf64_Phdr& s = ph[i];
    if (s.p_type != PT_LOAD && s.p_type != PT_DYNAMIC) continue;  // the ones dlopen() maps or reads
    const char* kind = s.p_type == PT_LOAD ? "PT_LOAD" : "PT_DYNAMIC";
    if (s.p_offset > UINT64_MAX - s.p_filesz)
      return "segment " + std::to_string(i) + " (" + kind + ") has a file range that overflows (offset " +
             std::to_string(s.p_offset) + ", size " + std::to_string(s.p_filesz) + ")";
    if (s.p_offset + s.p_filesz > size)
      return "truncated: segment " + std::to_string(i) + " (" + kind + ") ends at byte " +
             std::to_string(s.p_offset + s.p_filesz) + ", the file has " + std::to_string(size);
  }
  return "";
}
#endif

}  // namespace

Status check_elf(const std::string& path) {
#ifdef W4A8_ELF_MACHINE
  // Checked here, loaded by dlopen() from the path again: a file replaced in between escapes the
  // check. Accepted: the check is against mistakes (a truncated copy, a foreign build), and a plugin
  // is code this process runs anyway, so it cannot guard against someone who controls the file.
  // O_NONBLOCK: a FIFO swapped in after load()'s stat() must not block the open.
  const Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  struct stat st {};
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return Ok{};  // dlopen() says why
  if (std::string why = defect(FdReader{f.fd}, std::uint64_t(st.st_size)); !why.empty())
    return make_error(ErrorKind::PluginLoadFailed, {path, why});
#else
  (void)path;
#endif
  return Ok{};
}

std::string elf_defect(std::span<const std::uint8_t> file) {
#ifdef W4A8_ELF_MACHINE
  return defect(MemoryReader{file}, file.size());
#else
  (void)file;
  return "";
#endif
}

}  // namespace w4a8::plugin
