#include "plugin/runner.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <new>
#include <vector>

#include "kernels/layer_problem.hpp"
#include "plugin/call_guard.hpp"

namespace w4a8::plugin {
namespace {

// A table function called under a guard of its own: a crash or hang inside it names that call, not
// the one around it.
template <class F>
auto guarded(const Plugin& pl, const char* call, F&& f) {
  const CallGuard guard(pl.describe(), call);
  return f();
}

Error failed(const Plugin& pl, std::string_view where, w4a8_status s, std::string_view before = {}) {
  std::string why = std::string(before) + std::string(status_name(s));
  if (const std::string e = pl.last_error_text(); !e.empty()) why += ": " + e;
  return make_error(ErrorKind::PluginFailed, {pl.describe(), std::string(where), why});
}

// run() returning W4A8_ERR_UNSUPPORTED: beyond the plugin's build, as when check_problem says so (the
// header gives the status no other meaning), though its check_problem should have.
Error run_failed(const Plugin& pl, w4a8_status s) {
  if (s != W4A8_ERR_UNSUPPORTED) return failed(pl, "run", s);
  const std::string e = pl.last_error_text();
  return make_error(ErrorKind::PluginUnsupported, {pl.describe(), "run returned W4A8_ERR_UNSUPPORTED (its check_problem had "
                                                                  "accepted the problem)" +
                                                                      (e.empty() ? e : ": " + e)});
}

// alloc() reporting success without a pointer: named as such (it was shown as W4A8_ERR_CUDA, a status
// the plugin never returned).
Error null_alloc(const Plugin& pl) {
  return make_error(ErrorKind::PluginFailed, {pl.describe(), "alloc", "it returned W4A8_OK and a NULL pointer"});
}

// What no return status reports, seen in the buffers themselves. The plugin gets copies of every
// buffer, each between two guard zones: a write past any buffer's end or before its start shows
// there (a device allocation is rounded up, so it would not fault; a host one would corrupt the
// heap's own records), and a write into an input (all are const in the
// ABI) shows against the original, which the run never touches, so the audit's judgement of the
// result still uses the real operands. Each output starts as a poison pattern (not the zeros a
// plugin's alloc may or may not give, which also equal many right answers), so an element the
// plugin never wrote shows.
constexpr std::size_t kGuardBytes = 256;
constexpr std::uint8_t kGuardByte = 0x5A;

// A buffer as the plugin sees it: `staged` (host plugins get it; device plugins a device copy of it,
// copied back after run).
struct Buffer {
  const char* name;                  // the w4a8_problem field
  std::function<void(void*)> point;  // sets that field
  const void* original;              // input: the operand itself; output: nullptr
  void* dest;                        // output: the LayerProblem buffer it is read from afterwards
  std::size_t bytes;
  std::size_t width = 1;        // output element size, for the unwritten check
  std::uint32_t poison = 0;     // output element pattern (little-endian, `width` bytes)
  // What a left-over poison proves. Each: the pattern is no result (out, x_scale: NaN payloads no
  // arithmetic makes). All: it can be a result, but never in every element (x_q: a nonzero row
  // holds a +-127, a zero row zeros; acc: 0xA5A5A5A5 everywhere). None: even all of it can be (w_q
  // of a constant layer), or the buffer is no result (nan_scale_flag).
  enum class Unwritten : std::uint8_t { None, Each, All } unwritten = Unwritten::None;
  std::vector<std::uint8_t> staged;  // guard, the bytes, guard: the plugin's pointer is data()
  std::uint8_t* data() { return staged.data() + kGuardBytes; }
  const std::uint8_t* data() const { return staged.data() + kGuardBytes; }
  std::uint8_t poison_byte(std::size_t i) const { return static_cast<std::uint8_t>(poison >> (8 * (i % width))); }
};
using Unwritten = Buffer::Unwritten;

// NaN bit patterns with a payload no arithmetic produces (signalling NaNs), so a left-over element
// cannot be mistaken for a result.
constexpr std::uint32_t kPoisonF32 = 0x7FA5A5A5u, kPoisonBF16 = 0x7FA5u, kPoisonF16 = 0x7DA5u;
constexpr std::uint32_t kPoisonInt = 0xA5A5A5A5u;  // integers have no such value: a mismatch shows it

std::uint32_t out_poison(w4a8_dtype d) {
  return d == W4A8_DTYPE_F32 ? kPoisonF32 : d == W4A8_DTYPE_BF16 ? kPoisonBF16 : kPoisonF16;
}

std::vector<Buffer> stage_buffers(kern::LayerProblem& lp, const gemm::Layer& layer, w4a8_problem& p) {
  std::vector<Buffer> bufs;
  auto input = [&](const char* name, auto& ptr, const void* original, std::size_t bytes) {
    using Ptr = std::remove_reference_t<decltype(ptr)>;
    if (!ptr) return;
    Buffer b{name, [&ptr](void* d) { ptr = static_cast<Ptr>(d); }, original, nullptr, bytes, 1, 0, Unwritten::None, {}};
    b.staged.resize(kGuardBytes + bytes + kGuardBytes, kGuardByte);
    if (bytes) std::memcpy(b.data(), original, bytes);
    bufs.push_back(std::move(b));
  };
  auto output = [&](const char* name, auto& ptr, void* dest, std::size_t bytes, std::size_t width, std::uint32_t poison,
                    Unwritten unwritten) {
    using Ptr = std::remove_reference_t<decltype(ptr)>;
    if (!ptr) return;
    Buffer b{name, [&ptr](void* d) { ptr = static_cast<Ptr>(d); }, nullptr, dest, bytes, width, poison, unwritten, {}};
    b.staged.reserve(kGuardBytes + bytes + kGuardBytes);
    b.staged.assign(kGuardBytes, kGuardByte);
    for (std::size_t i = 0; i < bytes; ++i) b.staged.push_back(b.poison_byte(i));
    b.staged.insert(b.staged.end(), kGuardBytes, kGuardByte);
    bufs.push_back(std::move(b));
  };
  input("x", p.x, lp.x.data(), lp.x.size());
  input("weight", p.weight, layer.weight.data(), layer.weight.size());
  input("s_rel", p.s_rel, layer.s_rel.data(), layer.s_rel.size());
  input("s_channel", p.s_channel, layer.s_channel.data(), layer.s_channel.size() * sizeof(float));
  input("codebook", p.codebook, layer.codebook.data(), layer.codebook.size() * sizeof(float));
  input("correction", p.correction, layer.correction.data(), layer.correction.size() * sizeof(float));
  input("bias", p.bias, lp.bias.data(), lp.bias.size());
  const std::size_t ob = kern::dtype_bytes(p.out_dtype);
  output("out", p.out, lp.out.data(), lp.out.size(), ob, out_poison(p.out_dtype), Unwritten::Each);
  output("x_q", p.x_q, lp.x_q.data(), lp.x_q.size(), 1, kPoisonInt, Unwritten::All);
  output("x_scale", p.x_scale, lp.x_scale.data(), lp.x_scale.size() * sizeof(float), 4, kPoisonF32, Unwritten::Each);
  output("acc", p.acc, lp.acc.data(), lp.acc.size() * sizeof(std::int32_t), 4, kPoisonInt, Unwritten::All);
  output("w_q", p.w_q, lp.w_q.data(), lp.w_q.size(), 1, kPoisonInt, Unwritten::None);
  // The flag is set only on a NaN scale: it goes in as 0, as the ABI says.
  output("nan_scale_flag", p.nan_scale_flag, &lp.nan_flag, sizeof(std::int32_t), 4, 0, Unwritten::None);
  for (Buffer& b : bufs) b.point(b.data());
  return bufs;
}

// The guards first (a write past the end may also explain what is missing), then the inputs, then
// the elements left as they were (out and x_scale, element by element, before the intermediates
// left whole: the result's own gap says most); then each output is handed to the problem's buffer.
Status check_buffers(const Plugin& pl, std::vector<Buffer>& bufs, std::int64_t row_len, std::int64_t ldo) {
  auto fail = [&pl](const std::string& why) { return make_error(ErrorKind::PluginFailed, {pl.describe(), "run", why}); };
  for (const Buffer& b : bufs)
    for (std::size_t i = 0; i < kGuardBytes; ++i) {
      if (b.data()[b.bytes + i] != kGuardByte)
        return fail("it wrote past the end of " + std::string(b.name) + " (" + std::to_string(b.bytes) + " bytes): byte " +
                    std::to_string(i) + " after it changed");
      if (b.data()[-1 - std::ptrdiff_t(i)] != kGuardByte)  // a row -1, an index that went negative
        return fail("it wrote before the start of " + std::string(b.name) + ": byte " + std::to_string(i + 1) +
                    " before it changed");
    }
  for (const Buffer& b : bufs) {
    if (!b.original || b.bytes == 0 || std::memcmp(b.data(), b.original, b.bytes) == 0) continue;
    const auto* o = static_cast<const std::uint8_t*>(b.original);
    std::size_t first = 0, changed = 0;
    for (std::size_t i = 0; i < b.bytes; ++i)
      if (b.data()[i] != o[i] && changed++ == 0) first = i;
    return fail("it wrote into its input " + std::string(b.name) + ", which the ABI declares const: " +
                std::to_string(changed) + " of its " + std::to_string(b.bytes) + " bytes changed, the first at byte " +
                std::to_string(first));
  }
  for (const Buffer& b : bufs) {
    if (b.unwritten != Unwritten::Each) continue;
    // out's rows are ldo apart: the columns past N are padding, which must keep the poison.
    const bool is_out = std::string_view(b.name) == "out";
    const auto stride = static_cast<std::size_t>(is_out ? ldo : 1), cols = static_cast<std::size_t>(is_out ? row_len : 1);
    std::size_t left = 0, first = 0, total = 0;
    for (std::size_t e = 0; e < b.bytes / b.width; ++e) {
      std::uint32_t v = 0;
      std::memcpy(&v, b.data() + e * b.width, b.width);  // little-endian hosts only (as the ABI)
      if (e % stride >= cols) {
        if (v != b.poison)
          return fail("it wrote into the row padding of out (row " + std::to_string(e / stride) + ", column " +
                      std::to_string(e % stride) + "; rows are ldo = " + std::to_string(ldo) + " elements apart, N = " +
                      std::to_string(row_len) + ")");
        continue;
      }
      ++total;
      if (v == b.poison && left++ == 0) first = e;
    }
    if (left == 0) continue;
    const std::string where = is_out ? "row " + std::to_string(first / stride) + ", column " + std::to_string(first % stride)
                                     : "row " + std::to_string(first);
    return fail("it left " + std::to_string(left) + " of " + std::to_string(total) + " elements of " + b.name +
                " unwritten (the first at " + where + ")");
  }
  for (const Buffer& b : bufs) {
    if (b.unwritten != Unwritten::All || b.bytes == 0) continue;
    bool all = true;
    for (std::size_t i = 0; i < b.bytes && all; ++i) all = b.data()[i] == b.poison_byte(i);
    if (all)
      return fail("it left " + std::string(b.name) + " unwritten: every element still holds the poison (with "
                  "W4A8_CAP_INTERMEDIATES a plugin fills x_q, x_scale, acc and w_q when given)");
  }
  for (const Buffer& b : bufs)
    if (b.dest) std::memcpy(b.dest, b.data(), b.bytes);
  return Ok{};
}

// Device allocations, freed on every path out.
struct DeviceBuffers {
  const Plugin* pl = nullptr;
  std::vector<void*> ptrs;
  ~DeviceBuffers() {
    for (void* p : ptrs) guarded(*pl, "free", [this, p] { pl->table().free(p); });
  }
};

// Every staged buffer is copied in (outputs too: their poison and guards, so nothing depends on
// alloc zero-filling) and back.
Status run_on_device(const Plugin& pl, w4a8_problem& p, std::vector<Buffer>& staged) {
  const w4a8_kernel_plugin& t = pl.table();
  if (auto none = missing_device(pl)) return std::move(*none);
  DeviceBuffers bufs;
  bufs.pl = &pl;
  std::vector<void*> dev(staged.size());
  for (std::size_t i = 0; i < staged.size(); ++i) {
    void*& d = dev[i];
    if (const w4a8_status s = guarded(pl, "alloc", [&] { return t.alloc(&d, staged[i].staged.size()); }); s != W4A8_OK || !d)
      return s == W4A8_OK ? null_alloc(pl) : failed(pl, "alloc", s);
    bufs.ptrs.push_back(d);
    if (const w4a8_status s = guarded(pl, "copy_to_device", [&] { return t.copy_to_device(d, staged[i].staged.data(), staged[i].staged.size()); });
        s != W4A8_OK)
      return failed(pl, "copy_to_device", s);
    staged[i].point(static_cast<std::uint8_t*>(d) + kGuardBytes);  // the device copy's own data(): guards either side
  }
  const std::size_t ws_bytes = guarded(pl, "workspace_size", [&] { return t.workspace_size(&p); });
  void* ws = nullptr;
  if (ws_bytes) {
    if (const w4a8_status s = guarded(pl, "alloc", [&] { return t.alloc(&ws, ws_bytes); }); s != W4A8_OK || !ws)
      return s == W4A8_OK ? null_alloc(pl) : failed(pl, "alloc", s);
    bufs.ptrs.push_back(ws);
  }
  if (const w4a8_status s = t.run(&p, ws, ws_bytes, nullptr); s != W4A8_OK) return run_failed(pl, s);
  if (const w4a8_status s = guarded(pl, "synchronize", [&t] { return t.synchronize(nullptr); }); s != W4A8_OK)
    return failed(pl, "synchronize", s);
  for (std::size_t i = 0; i < staged.size(); ++i)
    if (const w4a8_status s = guarded(pl, "copy_to_host", [&] { return t.copy_to_host(staged[i].staged.data(), dev[i], staged[i].staged.size()); });
        s != W4A8_OK)
      return failed(pl, "copy_to_host", s);
  return Ok{};
}

Status run_on_host(const Plugin& pl, w4a8_problem& p) {
  const w4a8_kernel_plugin& t = pl.table();
  const std::size_t ws_bytes = guarded(pl, "workspace_size", [&] { return t.workspace_size(&p); });
  struct Free {
    void operator()(void* q) const { std::free(q); }
  };
  std::unique_ptr<void, Free> ws;
  if (ws_bytes) {
    // Rounded up to the alignment (aligned_alloc's rule) only where that cannot wrap: near SIZE_MAX
    // the sum would wrap to a tiny block that run() is told holds ws_bytes. No object can exceed
    // PTRDIFF_MAX bytes, so larger sizes are refused without asking the allocator.
    constexpr std::size_t kAlign = 256;
    if (ws_bytes <= std::size_t(PTRDIFF_MAX) - (kAlign - 1))
      ws.reset(std::aligned_alloc(kAlign, (ws_bytes + kAlign - 1) / kAlign * kAlign));
    if (!ws)
      return make_error(ErrorKind::SysResources,
                        {"kernel plugin workspace", "out of memory (" + std::to_string(ws_bytes) + " bytes asked for by " +
                                                        pl.describe() + ")"});
  }
  if (const w4a8_status s = t.run(&p, ws.get(), ws_bytes, nullptr); s != W4A8_OK) return run_failed(pl, s);
  return Ok{};
}

}  // namespace

std::uint64_t required_caps(const w4a8_problem& p, bool intermediates) {
  std::uint64_t c = p.correction ? W4A8_CAP_CORRECTION_PATH : W4A8_CAP_INTEGER_PATH;
  if (p.act_policy == 1) c |= W4A8_CAP_EAGER_POLICY;
  if (p.bits == 6) c |= W4A8_CAP_6BIT;
  if (p.s_rel_dtype == W4A8_SCALE_F32) c |= W4A8_CAP_F32_SCALES;
  if (intermediates) c |= W4A8_CAP_INTERMEDIATES;
  return c;
}

Result<gemm::GemmResult> run_layer(const Plugin& pl, const gemm::Layer& layer, const gemm::Activations& x,
                                   const gemm::GemmOptions& opt, bool intermediates, Strides strides,
                                   bool* broke_contract) {
  if (broke_contract != nullptr) *broke_contract = false;
  kern::LayoutOptions layout;
  layout.ldx_pad = strides.x_pad;
  layout.ldo_pad = strides.out_pad;
  layout.kernel_limits = false;  // this project's kernel limits are not the plugin's: its caps and check decide
  // The problem asks for the policy the computation follows: for F32 activations the f32 one, which a
  // plugin without the eager capability runs (as `audit check --act-policy eager` does).
  gemm::GemmOptions asked = opt;
  asked.policy = gemm::effective_policy(opt.policy, x.dtype);
  auto made = kern::make_layer_problem(layer, x, asked, layout);
  if (!made.ok()) return std::move(made).error();
  kern::LayerProblem& lp = **made;
  w4a8_problem p = lp.p;
  const bool correction = p.correction != nullptr;
  const std::uint64_t need = required_caps(p, intermediates);
  if (const std::uint64_t missing = need & ~pl.table().caps)
    return make_error(ErrorKind::PluginUnsupported,
                      {pl.describe(), "it lacks " + caps_text(missing) + " (it offers " + caps_text(pl.table().caps) + ")"});
  if (!intermediates) p.x_q = nullptr, p.x_scale = nullptr, p.acc = nullptr, p.w_q = nullptr;
  // A C++ exception a plugin lets escape, where it reaches here (a build sharing the plugin's C++
  // runtime; call_guard.hpp), is its failure; our own running out of memory is not.
  try {
    const CallGuard guard(pl.describe(), "check_problem");
    if (const w4a8_status s = pl.table().check_problem(&p); s != W4A8_OK) {
      // W4A8_ERR_UNSUPPORTED: beyond this plugin's build (a capability limit). Any other refusal of a
      // problem that passed the operand checks is the plugin's failure.
      if (s != W4A8_ERR_UNSUPPORTED) return failed(pl, "check_problem", s, "it refused a problem the operand checks accept: ");
      const std::string e = pl.last_error_text();
      return make_error(ErrorKind::PluginUnsupported,
                        {pl.describe(), "check_problem returned " + std::string(status_name(s)) + (e.empty() ? e : ": " + e)});
    }
  } catch (const std::bad_alloc&) {
    throw;
  } catch (...) {
    return CallGuard::escaped_exception(pl.describe(), "check_problem");
  }
  std::vector<Buffer> staged = stage_buffers(lp, layer, p);
  try {
    const CallGuard guard(pl.describe(), "run");  // its workspace, device memory and copies included
    W4A8_TRY(pl.device() ? run_on_device(pl, p, staged) : run_on_host(pl, p));
  } catch (const std::bad_alloc&) {
    throw;
  } catch (...) {
    return CallGuard::escaped_exception(pl.describe(), "run");
  }
  Status checked = check_buffers(pl, staged, p.n, p.ldo);
  if (checked.ok() && lp.nan_flag)
    checked = make_error(ErrorKind::PluginFailed, {pl.describe(), "run", "it decoded a NaN scale the operand checks had excluded"});
  if (!checked.ok()) {
    if (broke_contract != nullptr) *broke_contract = true;
    return std::move(checked).error();
  }
  gemm::GemmResult r = kern::collect_result(lp, opt, correction);
  if (!intermediates) {
    r.x_q.clear(), r.x_scale.clear(), r.acc.clear(), r.w_q.clear(), r.w_dequant.clear();
  } else {
    r.w_dequant.clear();  // not part of the ABI
    // The correction path returns no grid, and with M = 0 nothing was decoded: the reference's.
    if (r.w_q.empty()) r.w_q = gemm::decode_weights(layer);
  }
  return r;
}

}  // namespace w4a8::plugin
