#include "cli/layer_source.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

#include "gemm/tensor_io.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::cli {

std::vector<std::string> layer_tensor_names(const io::Checkpoint& ck, const std::string& prefix) {
  const std::string lo = prefix + ".";
  std::vector<std::string> names;
  for (const st::File& f : ck.files()) {
    const auto& ts = f.header().tensors;  // sorted by name
    auto it = std::lower_bound(ts.begin(), ts.end(), lo, [](const st::TensorInfo& t, const std::string& k) { return t.name < k; });
    for (; it != ts.end() && it->name.compare(0, lo.size(), lo) == 0; ++it)
      if (it->name.find('.', lo.size()) == std::string::npos) names.push_back(it->name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result<gemm::Layer> load_layer(const io::Checkpoint& ck, const std::string& prefix, std::int64_t group_size,
                               std::int64_t convrot_groupsize) {
  const std::vector<std::string> names = layer_tensor_names(ck, prefix);
  const st::File* home = nullptr;
  bool split = false;
  for (const std::string& n : names) {
    const auto ref = ck.find(n);
    if (home && ref->file != home) split = true;
    home = ref->file;
  }
  if (!home) home = &ck.files().back();  // no tensor at all: load_layer names what is missing
  if (!split) return gemm::load_layer(*home, prefix, group_size, convrot_groupsize);
  // Split across shards: one container in a memory file, so the one layer loader applies.
  std::vector<st::TensorSpec> specs;
  for (const std::string& n : names) {
    const auto ref = ck.find(n);
    const auto b = ref->file->data(*ref->info);
    specs.push_back({n, ref->info->dtype, ref->info->shape, std::vector<std::uint8_t>(b.begin(), b.end())});
  }
  auto bytes = st::serialize(specs);
  W4A8_TRY(bytes);
  const int fd = ::memfd_create("w4a8check-layer", MFD_CLOEXEC);
  if (fd < 0) return make_error(ErrorKind::SysResources, {"memfd_create", std::strerror(errno)});
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::size_t done = 0;
  while (done < bytes->size()) {
    const ssize_t n = ::write(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(ErrorKind::SysResources, {"memory file for layer " + prefix, std::strerror(errno)});
    done += std::size_t(n);
  }
  auto f = st::File::open("/proc/self/fd/" + std::to_string(fd));
  if (!f.ok()) return std::move(f).error();
  return gemm::load_layer(*f, prefix, group_size, convrot_groupsize);
}

}  // namespace w4a8::cli
