#include "plugin/plugin.hpp"

#include <cstdlib>

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hex.hpp"
#include "io/read_file.hpp"
#include "plugin/call_guard.hpp"
#include "plugin/elf_check.hpp"
#include "safetensors/utf8.hpp"

namespace w4a8::plugin {
namespace {

#ifndef W4A8_CUDA_MODULE_NAME
#define W4A8_CUDA_MODULE_NAME "libw4a8check_cuda.so"
#endif

Error incompatible(const std::string& path, const std::string& why) {
  return make_error(ErrorKind::PluginIncompatible, {path, why});
}

std::string exe_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string p(buf, std::size_t(n));
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

}  // namespace

Result<Plugin> Plugin::load(const std::string& given) {
  // "" would become "./", the current directory.
  if (given.empty()) return make_error(ErrorKind::PluginLoadFailed, {"\"\"", "empty path"});
  // A file, never a library search: dlopen() looks a slash-less name up in the library path, so
  // "plug.so" would not be the one in the current directory (and "libc.so.6" would be found).
  const std::string path = given.find('/') == std::string::npos ? "./" + given : given;
  // dlopen() of a FIFO blocks until a writer appears; stat() does not open it.
  if (struct stat st {}; ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return make_error(ErrorKind::IoNotRegularFile, {path, io::file_type_name(st.st_mode)});
  // dlopen() of a truncated file dies with SIGBUS, and of a foreign machine's says "No such file".
  W4A8_TRY(check_elf(path));
  const CallGuard guard(path, "dlopen and its entry function");  // its constructors run here too
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    return make_error(ErrorKind::PluginLoadFailed, {path, e ? e : "dlopen failed"});
  }
  auto entry = reinterpret_cast<w4a8_kernel_plugin_fn>(::dlsym(handle, W4A8_KERNEL_PLUGIN_SYMBOL));
  if (!entry) {
    ::dlclose(handle);
    return make_error(ErrorKind::PluginLoadFailed, {path, "it does not export " W4A8_KERNEL_PLUGIN_SYMBOL});
  }
  const w4a8_kernel_plugin* t = entry();
  if (!t) return incompatible(path, W4A8_KERNEL_PLUGIN_SYMBOL "() returned NULL");
  if (t->abi_version != W4A8_KERNEL_ABI_VERSION)
    return incompatible(path, "ABI version " + std::to_string(t->abi_version) + ", expected " +
                                  std::to_string(W4A8_KERNEL_ABI_VERSION));
  if (t->struct_size < sizeof(w4a8_kernel_plugin))
    return incompatible(path, "table of " + std::to_string(t->struct_size) + " bytes, expected at least " +
                                  std::to_string(sizeof(w4a8_kernel_plugin)));
  // Each missing member named (the message listed all five whichever was missing).
  auto missing = [](std::initializer_list<std::pair<const char*, bool>> members) {
    std::string m;
    for (const auto& [name, set] : members)
      if (!set) m += (m.empty() ? "" : ", ") + std::string(name);
    return m;
  };
  if (const std::string m = missing({{"name", t->name}, {"check_problem", t->check_problem != nullptr},
                                     {"workspace_size", t->workspace_size != nullptr}, {"run", t->run != nullptr},
                                     {"last_error", t->last_error != nullptr}});
      !m.empty())
    return incompatible(path, "its table leaves " + m + " NULL (name, check_problem, workspace_size, run and "
                              "last_error must all be set)");
  if (*t->name == '\0') return incompatible(path, "its name is empty");
  // Its name and version go into messages, JSON and the output's metadata, which must be UTF-8.
  if (!st::detail::valid_utf8(std::string_view(t->name)) || (t->version && !st::detail::valid_utf8(std::string_view(t->version))))
    return incompatible(path, "its name or version is not UTF-8 text");
  if (t->memory != W4A8_MEMORY_HOST && t->memory != W4A8_MEMORY_CUDA_DEVICE)
    return incompatible(path, "unknown memory space " + std::to_string(int(t->memory)));
  if (t->memory == W4A8_MEMORY_CUDA_DEVICE)
    if (const std::string m = missing({{"device_count", t->device_count != nullptr}, {"alloc", t->alloc != nullptr},
                                       {"free", t->free != nullptr}, {"copy_to_device", t->copy_to_device != nullptr},
                                       {"copy_to_host", t->copy_to_host != nullptr},
                                       {"synchronize", t->synchronize != nullptr}});
        !m.empty())
      return incompatible(path, "its table leaves " + m + " NULL (a CUDA_DEVICE plugin must set device_count, alloc, "
                                "free, copy_to_device, copy_to_host and synchronize)");
  // caps bits this build does not know are ignored, as struct_size lets a newer module's table be
  // larger: a module built against a later header still loads here (nothing asks for those bits).
  Plugin p;
  p.table_ = t;
  p.path_ = path;
  return p;
}

std::string Plugin::describe() const {
  std::string s = printable(name());
  if (!version().empty()) s += " " + printable(version());
  return s + " (" + path_ + ")";
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F || b == '\\') {
      out += "\\x";
      hex::append(out, b, 2);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string_view cuda_module_name() { return W4A8_CUDA_MODULE_NAME; }

std::vector<std::string> cuda_module_candidates() {
  if (const char* env = std::getenv("W4A8CHECK_CUDA_MODULE"); env && *env) return {env};
  std::vector<std::string> out;
  const std::string name(cuda_module_name());
  const std::string dir = exe_dir();
  if (!dir.empty()) {
    out.push_back(dir + "/" + name);
    out.push_back(dir + "/lib/" + name);  // the build tree: build/w4a8check, build/lib/<module>
    out.push_back(dir + "/../lib/w4a8check/" + name);
    out.push_back(dir + "/../lib/" + name);
  }
#ifdef W4A8_INSTALL_LIBDIR
  out.push_back(std::string(W4A8_INSTALL_LIBDIR) + "/w4a8check/" + name);
#endif
  return out;
}

Result<Plugin> load_cuda_module() {
  const auto candidates = cuda_module_candidates();
  const bool from_env = std::getenv("W4A8CHECK_CUDA_MODULE") && *std::getenv("W4A8CHECK_CUDA_MODULE");
  for (const std::string& c : candidates)
    if (from_env || ::access(c.c_str(), F_OK) == 0) return Plugin::load(c);  // an explicit path reports its own error
  std::string where;
  for (const std::string& c : candidates) where += (where.empty() ? "" : ", ") + c;
  return make_error(ErrorKind::CudaModuleMissing, {std::string(cuda_module_name()), where.empty() ? "nowhere" : where});
}

std::string Plugin::last_error_text() const {
  const CallGuard guard(describe(), "last_error");
  const char* e = table_->last_error();
  return e && *e ? printable(e) : std::string();
}

std::optional<Error> missing_device(const Plugin& p) {
  int err = 0;
  // (each under a guard of its own: a crash in them names them, inside run's guard too)
  const int n = [&] {
    const CallGuard guard(p.describe(), "device_count");
    return p.table().device_count(&err);
  }();
  if (n > 0) return std::nullopt;
  // A negative count with error code 0 contradicts itself: said as such, not as "returned 0".
  const std::string code = n == 0 ? "0" : err != 0 ? std::to_string(err) : std::to_string(n) + " without an error code";
  const std::string e = p.last_error_text();
  return make_error(ErrorKind::CudaNoDevice, {code, e.empty() ? "no device" : e});
}

std::string caps_text(std::uint64_t caps) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {W4A8_CAP_INTEGER_PATH, "integer path"}, {W4A8_CAP_CORRECTION_PATH, "correction path"},
      {W4A8_CAP_6BIT, "6-bit codes"},          {W4A8_CAP_F32_SCALES, "F32 group scales"},
      {W4A8_CAP_EAGER_POLICY, "eager policy"}, {W4A8_CAP_INTERMEDIATES, "intermediates"}};
  std::string s;
  for (const auto& [bit, text] : kNames)
    if (caps & bit) s += (s.empty() ? "" : ", ") + std::string(text);
  return s.empty() ? "nothing" : s;
}

std::string_view status_name(w4a8_status s) {
  switch (s) {
    case W4A8_OK: return "W4A8_OK";
    case W4A8_ERR_CONTRACT: return "W4A8_ERR_CONTRACT";
    case W4A8_ERR_ARGUMENT: return "W4A8_ERR_ARGUMENT";
    case W4A8_ERR_UNSUPPORTED: return "W4A8_ERR_UNSUPPORTED";
    case W4A8_ERR_CUDA: return "W4A8_ERR_CUDA";
    case W4A8_ERR_NO_DEVICE: return "W4A8_ERR_NO_DEVICE";
  }
  return "unknown status";
}

}  // namespace w4a8::plugin
