// Kernel plugins (kernels/w4a8_cuda.h): shared modules exporting w4a8_kernel_plugin_v1, loaded with
// dlopen. Used by `gemm --kernel PATH.so` and `gemm --impl cuda` (this project's CUDA module), so
// the w4a8check executable itself never links a GPU runtime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "kernels/w4a8_cuda.h"

namespace w4a8::plugin {

class Plugin {
 public:
  // dlopen(path) (RTLD_NOW | RTLD_LOCAL; a name without '/' means ./name, never a library search;
  // anything but a regular file is refused unopened, and an ELF file this process cannot map, by
  // check_elf(), before dlopen() sees it), the entry symbol, then the table: abi_version must be
  // W4A8_KERNEL_ABI_VERSION, struct_size at least this build's sizeof(w4a8_kernel_plugin), name,
  // check_problem, workspace_size, run and last_error set, and for CUDA_DEVICE modules every device
  // function. The module stays loaded for the life of the process.
  // @return Plugin, or IoNotRegularFile, PluginLoadFailed (an empty path, check_elf()'s reason, dlopen/dlsym
  //         text: a missing dependency such as libcudart shows here), PluginIncompatible (what does not match).
  static Result<Plugin> load(const std::string& path);

  const w4a8_kernel_plugin& table() const { return *table_; }
  const std::string& path() const { return path_; }
  std::string_view name() const { return table_->name; }
  std::string_view version() const { return table_->version ? table_->version : ""; }
  bool device() const { return table_->memory == W4A8_MEMORY_CUDA_DEVICE; }
  // "NAME VERSION (PATH)" for messages, name and version through printable().
  std::string describe() const;
  // Its last_error(), called under a guard of its own (CallGuard), through printable(); "" for none.
  std::string last_error_text() const;

 private:
  const w4a8_kernel_plugin* table_ = nullptr;
  std::string path_;
};

// Text a plugin supplied (its name, version, last_error), safe to print: control bytes and '\\'
// become \xNN, so a name cannot move the cursor or recolour the terminal. UTF-8 passes as is.
std::string printable(std::string_view text);

// File name of this project's CUDA module (built next to w4a8check when CUDA is available).
std::string_view cuda_module_name();
// Where `--impl cuda` looks, in order: $W4A8CHECK_CUDA_MODULE alone when set; else next to the
// executable, its lib/ (the build tree), then ../lib/w4a8check/ and ../lib/ relative to it, then the
// install lib dir.
std::vector<std::string> cuda_module_candidates();
// The first candidate that exists, loaded. @return Plugin, or CudaModuleMissing listing the places
//         searched, or load()'s errors.
Result<Plugin> load_cuda_module();

// A device plugin's device_count(): nothing when it found a device; else CudaNoDevice with the CUDA
// error it gave (0: it found none) and its last_error(). The caller guards the call (CallGuard).
std::optional<Error> missing_device(const Plugin& p);

// Capability names for messages ("integer path", "6-bit", ...), comma-separated.
std::string caps_text(std::uint64_t caps);
std::string_view status_name(w4a8_status s);

}  // namespace w4a8::plugin
