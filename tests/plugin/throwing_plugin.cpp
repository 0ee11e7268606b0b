// A kernel plugin written in C++ whose run() lets an exception escape, as $W4A8_TEST_THROW says:
// "run" (it propagates into the caller's frames) or "noexcept" (it leaves a noexcept function, so
// std::terminate is all that can see it). Otherwise it computes nothing and returns W4A8_OK.
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "w4a8_cuda.h"

namespace {

bool is(const char* what) {
  const char* m = std::getenv("W4A8_TEST_THROW");
  return m != nullptr && std::strcmp(m, what) == 0;
}

[[noreturn]] void fail() { throw std::runtime_error("bad kernel config"); }
void fail_noexcept() noexcept { fail(); }

w4a8_status check(const w4a8_problem*) { return W4A8_OK; }
size_t ws(const w4a8_problem*) { return 0; }
w4a8_status run(const w4a8_problem*, void*, size_t, void*) {
  if (is("run")) fail();
  if (is("noexcept")) fail_noexcept();
  return W4A8_OK;
}
const char* last() { return ""; }

const w4a8_kernel_plugin table = {W4A8_KERNEL_ABI_VERSION, static_cast<uint32_t>(sizeof(w4a8_kernel_plugin)),
                                  "throwing", "1", W4A8_MEMORY_HOST, W4A8_CAP_INTEGER_PATH, check, ws, run, last,
                                  nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1() { return &table; }
