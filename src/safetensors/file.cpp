// File::open: the whole file is mapped read-only; only the header pages are ever touched by parse().
// Live mappings are listed (mapped_file_at) so a SIGBUS, a read past the end of a file another
// process truncated, can be reported naming the file.
// A large header's pages are released after parsing (its names copied out first).
// Opened with O_NONBLOCK and fstat'ed before any read, so a FIFO or device given as a checkpoint is
// refused at once instead of blocking.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pages.hpp"
#include "safetensors/hash_metadata.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::st {
namespace {

Error io_error(ErrorKind kind, const std::string& path, int err) {
  return make_error(kind, {path, std::strerror(err)});
}

const char* non_regular_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

// Live mappings for mapped_file_at: one immutable record each, published in lock-free slots.
struct Mapped {
  const std::uint8_t* base;
  std::size_t len;
  char path[1];  // NUL-terminated, allocated to fit
};
constexpr int kMappedSlots = 256;
std::atomic<Mapped*> g_mapped[kMappedSlots];

// @return the slot, or -1 when every slot is taken (the file is then not named: the lookup misses).
int register_mapping(const void* base, std::size_t len, const std::string& path) {
  auto* m = static_cast<Mapped*>(std::malloc(sizeof(Mapped) + path.size()));
  if (m == nullptr) return -1;
  m->base = static_cast<const std::uint8_t*>(base);
  m->len = len;
  std::memcpy(m->path, path.c_str(), path.size() + 1);
  for (int i = 0; i < kMappedSlots; ++i) {
    Mapped* expected = nullptr;
    if (g_mapped[i].compare_exchange_strong(expected, m)) return i;
  }
  std::free(m);
  return -1;
}

void unregister_mapping(int slot) {
  if (slot >= 0) std::free(g_mapped[slot].exchange(nullptr));
}

// Closes the descriptor on every path out of open().
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The header is read front to back right away: map its pages in one call instead of one fault per
// 64 KiB of fault-around (a 2.4 MB header: ~40 faults). Only the header, never the tensor data.
// MADV_POPULATE_READ is Linux 5.14+; older kernels refuse it and the faults happen as before.
// header_len: the declared length, capped at the file (a bad one is parse()'s to report).
void prefault_header(void* p, std::uint64_t header_len) {
#ifdef __linux__
  constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ (absent from older headers)
  const std::uint64_t want = 8 + header_len;
  if (want > (64u << 10)) (void)::madvise(p, static_cast<std::size_t>(want), kPopulateRead);
#else
  (void)p, (void)header_len;
#endif
}

// A header this large is mostly JSON punctuation around the names: past it, the names are copied into
// one buffer of their own and the header's pages are handed back, so a big checkpoint does not hold
// its whole header for the rest of the run (500,000 tensors: 62 MB of header, 27 MB of names).
// Smaller headers keep viewing the mapping (the copy would cost more than the pages).
constexpr std::uint64_t kReleaseHeaderFrom = std::uint64_t{4} << 20;

}  // namespace

const char* mapped_file_at(const void* addr) noexcept {
  const auto* a = static_cast<const std::uint8_t*>(addr);
  for (const auto& slot : g_mapped) {
    const Mapped* m = slot.load();
    if (m != nullptr && a >= m->base && a < m->base + m->len) return m->path;
  }
  return nullptr;
}

void release_pages(std::span<const std::uint8_t> region) {
  w4a8::release_pages(const_cast<std::uint8_t*>(region.data()), region.size());
}

Result<File> File::open(const std::string& path, const BeforeParse& before_parse) {
  Fd fd;
  do {
    fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd.fd < 0 && errno == EINTR);
  if (fd.fd < 0) return io_error(ErrorKind::IoOpenFailed, path, errno);
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return io_error(ErrorKind::IoReadFailed, path, errno);
  if (S_ISDIR(st.st_mode)) return io_error(ErrorKind::IoReadFailed, path, EISDIR);
  if (!S_ISREG(st.st_mode) || st.st_size < 0)
    return make_error(ErrorKind::IoNotRegularFile, {path, non_regular_kind(st.st_mode)});

  File f;
  f.path_ = path;
  f.size_ = static_cast<std::uint64_t>(st.st_size);
  if (f.size_ == 0) {
    // safetensors maps max(size, 1) bytes: an empty file is "header too small", but a file that
    // cannot be mapped (most of /proc reports size 0) is the OSError of mmap (ENODEV, EIO).
    void* p = ::mmap(nullptr, 1, PROT_READ, MAP_PRIVATE, fd.fd, 0);
    if (p == MAP_FAILED) return io_error(ErrorKind::IoReadFailed, path, errno);
    ::munmap(p, 1);
  } else {
    if constexpr (sizeof(std::size_t) < sizeof(std::uint64_t))
      if (f.size_ >> (8 * sizeof(std::size_t)) != 0) return io_error(ErrorKind::IoReadFailed, path, EFBIG);
    const auto len = static_cast<std::size_t>(f.size_);
    void* p = ::mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd.fd, 0);
    if (p == MAP_FAILED) return io_error(ErrorKind::IoReadFailed, path, errno);
    const int slot = register_mapping(p, len, path);
    f.mapping_ = std::shared_ptr<const void>(p, [len, slot](const void* q) {
      unregister_mapping(slot);
      ::munmap(const_cast<void*>(q), len);
    });
    if (len >= 8) {
      const std::uint64_t header_len =
          std::min<std::uint64_t>(declared_header_len({static_cast<const std::uint8_t*>(p), 8}), len - 8);
      prefault_header(p, header_len);
      if (before_parse) before_parse(header_len);
    }
  }
  // Names view the mapping, which the Header then shares.
  auto h = detail::parse_prefix_viewing(f.bytes(), f.size_, f.mapping_);
  if (!h.ok()) return std::move(h).error();
  f.header_ = std::move(*h);
  if (f.header_.header_len >= kReleaseHeaderFrom) {
    own_names(f.header_);  // the names no longer view the mapping: its header pages can go
    release_pages(f.bytes().first(static_cast<std::size_t>(f.header_.data_start())));  // the last page may hold data: kept
  }
  return f;
}

std::span<const std::uint8_t> File::bytes() const {
  if (!mapping_) return {};
  return {static_cast<const std::uint8_t*>(mapping_.get()), static_cast<std::size_t>(size_)};
}

std::span<const std::uint8_t> File::data(const TensorInfo& t) const {
  // Offsets were validated against the file size by parse(); clamp anyway so a TensorInfo from
  // another header can never reach past the mapping.
  const auto all = bytes();
  const std::uint64_t start = header_.data_start();
  if (t.begin > t.end || start > all.size() || t.end > all.size() - start) return {};
  return all.subspan(static_cast<std::size_t>(start + t.begin), static_cast<std::size_t>(t.end - t.begin));
}

}  // namespace w4a8::st
