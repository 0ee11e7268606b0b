#include "cli/quantize_model.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/checkpoint_input.hpp"
#include "cli/consumer_matrix.hpp"
#include "cli/ordered_pool.hpp"
#include "cli/progress.hpp"
#include "cli/report.hpp"
#include "cli/suggest.hpp"
#include "gemm/tensor_io.hpp"
#include "io/atomic_file.hpp"
#include "io/output_guard.hpp"
#include "io/read_file.hpp"
#include "io/safetensors_out.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "py/repr.hpp"
#include "validate/comfy_formats.hpp"

namespace w4a8::cli {
namespace {

constexpr std::string_view kQuantMetaKey = "_quantization_metadata";
constexpr std::size_t kListed = 10;  // skipped tensors named in the summary
constexpr std::size_t kWorst = 5;    // worst layers named in the summary

// One unit of output, in order: a quantized layer (its tensors) or a copied tensor.
struct Item {
  bool quantize = false;
  std::string prefix;                // quantized: the layer prefix
  io::Checkpoint::Ref src;           // quantized: the float weight; copied: the tensor itself
  std::uint64_t n = 0, k = 0;
  std::vector<io::OutTensor> outs;
  std::uint64_t bytes = 0;
  std::size_t shard = 0;
  std::size_t job = 0;               // quantized: index among the quantized items
};

struct Skip {
  std::string name, why;
};

struct LayerOut {
  std::vector<st::TensorSpec> tensors;
  double rel_l2 = 0;
  std::optional<Error> error;  // about the layer named in `where`
  std::string where;
};

bool ends_with(std::string_view s, std::string_view suf) {
  return s.size() >= suf.size() && s.substr(s.size() - suf.size()) == suf;
}

std::string layer_prefix(std::string_view key) {
  return std::string(ends_with(key, ".weight") ? key.substr(0, key.size() - 7) : key);
}

// Why a tensor cannot be quantized with these options (nullopt: it can).
std::optional<std::string> not_quantizable(const st::TensorInfo& t, const gemm::QuantizeOptions& q) {
  gemm::FloatDtype fd;
  if (!gemm::float_dtype_of(t.dtype, fd)) return "dtype " + std::string(st::dtype_name(t.dtype)) + ", not F32/BF16/F16";
  if (t.shape.size() != 2) return std::to_string(t.shape.size()) + "-D, not [N, K]";
  const std::uint64_t n = t.shape[0], k = t.shape[1];
  if (n == 0 || k == 0) return "empty (N=" + std::to_string(n) + ", K=" + std::to_string(k) + ")";
  if (k % 16) return "K=" + std::to_string(k) + " not divisible by 16";
  if (q.bits == 6 && k % 32) return "K=" + std::to_string(k) + " not divisible by 32 (6-bit rows)";
  if (k % std::uint64_t(q.group_size)) return "K=" + std::to_string(k) + " not divisible by group_size=" + std::to_string(q.group_size);
  if (k % std::uint64_t(q.convrot_groupsize))
    return "K=" + std::to_string(k) + " not divisible by convrot_groupsize=" + std::to_string(q.convrot_groupsize);
  return std::nullopt;
}

bool legal_options(const gemm::QuantizeOptions& q) {
  const auto g = q.group_size, r = q.convrot_groupsize;
  return g >= 4 && (16 % g == 0 || g % 16 == 0) && gemm::is_power_of_4(r) && (q.bits == 4 || g % 16 == 0);
}

// The tensors a quantized layer writes, in layer_tensors' order: packed rows of K * bits / 8 bytes
// (4 bits: K/2; 6 bits: a K/2 plane of low nibbles then a K/4 plane of top bits), group scales in the
// chosen storage, a codebook only for 4-bit codebook layers.
std::vector<io::OutTensor> planned_layer(const std::string& p, std::uint64_t n, std::uint64_t k, const QuantizeJob& job,
                                         std::size_t marker_len) {
  std::vector<io::OutTensor> o;
  const st::Dtype scales = job.q.scale_dtype == gemm::ScaleDtype::F32 ? st::Dtype::F32 : st::Dtype::F8_E4M3;
  o.push_back({p + ".weight", st::Dtype::I8, {n, k * std::uint64_t(job.q.bits) / 8}});
  o.push_back({p + ".weight_s_rel", scales, {n, k / std::uint64_t(job.q.group_size)}});
  o.push_back({p + ".weight_s_channel", st::Dtype::F32, {n}});
  if (job.q.codebook && job.q.bits == 4) o.push_back({p + ".weight_codebook", st::Dtype::F32, {16}});
  if (job.markers != MarkerChoice::Metadata) o.push_back({p + ".comfy_quant", st::Dtype::U8, {marker_len}});
  return o;
}

LayerOut quantize_one(const Item& it, const QuantizeJob& job) {
  LayerOut r;
  // A refusal names the layer and the tensor it comes from (with --prefix they differ).
  r.where = "layer " + it.prefix + " (tensor " + py::repr_str(it.src.info->name.view()) + ")";
  try {
    auto w = gemm::read_floats(*it.src.file, *it.src.info, "weights");
    if (!w.ok()) return r.error = w.error(), r;
    gemm::QuantizeOptions q = job.q;  // upstream rotates in the stored dtype (planned items are float)
    if (!gemm::float_dtype_of(it.src.info->dtype, q.source_dtype)) q.source_dtype = gemm::FloatDtype::F32;
    auto layer = gemm::quantize_weights(*w, it.n, it.k, q);
    if (!layer.ok()) return r.error = layer.error(), r;
    r.rel_l2 = gemm::relative_l2(gemm::dequantize_weights(*layer), *w);
    for (st::TensorSpec& t : gemm::layer_tensors(*layer, it.prefix))
      if (job.markers != MarkerChoice::Metadata || !ends_with(t.name, ".comfy_quant")) r.tensors.push_back(std::move(t));
  } catch (const std::bad_alloc&) {
    r.error = make_error(ErrorKind::SysResources, {"out of memory quantizing " + it.prefix, "std::bad_alloc"});
  }
  return r;
}

// The plan must match what the quantizer produced, byte for byte in size.
bool matches_plan(const Item& it, const std::vector<st::TensorSpec>& t) {
  if (t.size() != it.outs.size()) return false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto bytes = io::tensor_bytes(it.outs[i].dtype, it.outs[i].shape);
    if (t[i].name != it.outs[i].name || t[i].dtype != it.outs[i].dtype || t[i].shape != it.outs[i].shape ||
        !bytes || *bytes != t[i].bytes.size())
      return false;
  }
  return true;
}

// --out names a character device (/dev/null for a dry run): the whole output is one file written to
// it in place, however large (there is no directory for shards or an index), and nothing is read back.
bool is_char_device(const std::string& out) {
  struct stat st {};
  return ::stat(out.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

struct OutputNames {
  std::string dir, stem;
  bool single_file = false;  // --out FILE.safetensors, or a device
  bool device = false;       // --out is a character device (is_char_device)
  bool created_dir = false;  // --out DIR did not exist: this run made it
  std::string out;
  std::string shard(std::size_t i, std::size_t count) const {
    if (count == 1) return single_file ? out : dir + "/" + stem + ".safetensors";
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.safetensors", i + 1, count);
    return dir + "/" + stem + buf;
  }
  std::string index() const { return dir + "/" + stem + ".safetensors" + std::string(io::kIndexSuffix); }
  // `file` (a name in dir) is STEM-NNNNN-of-NNNNN.safetensors, a shard of this naming for any count.
  // The stem is compared as text: it may hold glob characters.
  bool numbered_shard(const std::string& file) const {
    const std::string lead = stem + "-";
    return file.compare(0, lead.size(), lead) == 0 &&
           ::fnmatch("[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9].safetensors", file.c_str() + lead.size(), 0) == 0;
  }
};

Result<OutputNames> output_names(const std::string& out) {
  OutputNames o;
  o.out = out;
  o.device = is_char_device(out);
  if (o.device || ends_with(out, ".safetensors")) {
    o.single_file = true;
    const auto slash = out.rfind('/');
    o.dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : out.substr(0, slash));
    const std::string base = slash == std::string::npos ? out : out.substr(slash + 1);
    o.stem = base.substr(0, base.size() - 12);
    return o;
  }
  o.dir = out;
  o.stem = "model";
  // Only the last component is made: a missing parent is more often a typo than a wish (said as such).
  if (const int err = io::make_output_dir(out, o.created_dir); err != 0)
    return make_error(ErrorKind::IoWriteFailed,
                      {out, err == ENOENT ? std::string("its parent directory does not exist (quantize makes only the last "
                                                        "component of --out)")
                                          : std::string(std::strerror(err))});
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (auto t = io::check_output_target(out); !t.ok()) return std::move(t).error();  // the stream's own file, a FIFO, ...
    return make_error(ErrorKind::IoWriteFailed, {out, "not a directory (name a FILE.safetensors or a directory)"});
  }
  return o;
}

// `_quantization_metadata` of one shard: the input's layers (kept) plus the new markers.
std::string quant_metadata(const std::vector<std::pair<std::string, json::Value>>& kept,
                           const std::vector<const Item*>& layers, const json::Value& marker) {
  std::ostringstream s;
  JsonWriter w(s);
  w.begin_object().key("format_version").string("1.0").key("layers").begin_object();
  for (const auto& [p, m] : kept) w.key(p).value(m, json::NonFinite::PythonToken);  // as the input spelled it
  for (const Item* it : layers) w.key(it->prefix).value(marker);
  w.end_object().end_object();
  return s.str();
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string human_bytes(std::uint64_t b) {
  if (b >= 1'000'000'000) return fixed(double(b) / 1e9, 2) + " GB";
  if (b >= 1'000'000) return fixed(double(b) / 1e6, 1) + " MB";
  if (b >= 1'000) return fixed(double(b) / 1e3, 1) + " kB";
  return std::to_string(b) + " bytes";
}

class QuantizeRun {
 public:
  QuantizeRun(const QuantizeJob& job, Reporter& report) : job_(job), report_(report) {}

  void run() {
    const bool single = !job_.key.empty();
    // Options no layer can take are a usage error in both modes (exit 2); what one tensor's shape
    // allows (K % G, K % R, 6-bit rows) is judged per tensor: a skip, or with --key a refusal (exit 1).
    if (!legal_options(job_.q)) {
      return fail(make_error(ErrorKind::UsageError,
                             {"--group-size " + std::to_string(job_.q.group_size) + " / --convrot-groupsize " +
                              std::to_string(job_.q.convrot_groupsize) +
                              ": group_size must be >= 4 and divide 16 or be a multiple of 16 (at 6 bits: a "
                              "multiple of 16); convrot_groupsize a power of 4 >= 4"}));
    }
    validate::Options vopt;
    std::string where;
    auto ck = open_checkpoint(job_.inputs, vopt, &where, &report_);
    if (!ck.ok()) return fail(ck.error(), where);
    ck_ = &*ck;
    if (auto idx = ck->check_index(); !idx.ok()) return fail(idx.error());
    marker_ = gemm::layer_marker(job_.q.group_size, job_.q.convrot_groupsize);  // depends on G and R only
    auto mj = json::loads_str(marker_);
    marker_json_ = *mj;
    note_repeated_tensors(*ck_, "is quantized or copied, as sglang reads them, and the others are dropped", report_);
    if (!(single ? plan_single() : plan_model())) return;
    if (!check_names() || !assign_shards()) return;
    auto names = output_names(job_.out);
    if (!names.ok()) return fail(names.error());
    names_ = *names;
    if (guard_outputs() && read_input_metadata()) write_all();
    // A failed run leaves no directory it made. Only once its temporaries are gone (write_all's
    // files are), and rmdir removes an empty directory only: whatever else is there is kept.
    if (failed_ && names_.created_dir) ::rmdir(names_.dir.c_str());
    io::forget_output_dir();
  }

 private:
  void fail(const Error& e, std::string_view where = {}) {
    failed_ = true;
    FailStyle style;
    style.where = where;
    report_.fail(e, style);
  }

  void add_copy(const std::string_view name, const io::Checkpoint::Ref& ref) {
    Item c;
    c.src = ref;
    c.outs.push_back({std::string(name), ref.info->dtype, ref.info->shape});
    c.bytes = ref.info->end - ref.info->begin;
    items_.push_back(std::move(c));
  }

  void add_layer(const std::string& prefix, const io::Checkpoint::Ref& ref) {
    Item q;
    q.quantize = true;
    q.prefix = prefix;
    q.src = ref;
    q.n = ref.info->shape[0];
    q.k = ref.info->shape[1];
    q.outs = planned_layer(prefix, q.n, q.k, job_, marker_.size());
    for (const auto& o : q.outs) q.bytes += *io::tensor_bytes(o.dtype, o.shape);
    q.job = jobs_.size();
    jobs_.push_back(items_.size());
    items_.push_back(std::move(q));
  }

  bool plan_single() {
    const auto ref = ck_->find(job_.key);
    if (!ref) {
      std::vector<std::string_view> names;
      for (const auto& [n, r] : ck_->tensors()) names.push_back(n);
      std::string hint;
      if (ck_->find(job_.key + ".weight"))  // a layer prefix given: the closest name by edits is its bias
        hint = "; --key names the float weight: " + py::repr_str(job_.key + ".weight");
      for (const auto& c : hint.empty() ? closest_names(job_.key, names) : std::vector<std::string>{})
        hint += (hint.empty() ? "; closest: " : ", ") + py::repr_str(c);
      fail(make_error(ErrorKind::UsageError, {ck_->describe() + " has no tensor " + py::repr_str(job_.key) + hint}));
      return false;
    }
    const st::TensorInfo& t = *ref->info;
    const std::string prefix = job_.prefix.empty() ? layer_prefix(job_.key) : job_.prefix;
    if (prefix.empty()) {  // --key .weight: as --prefix '' would be
      fail(make_error(ErrorKind::UsageError, {"--key " + py::repr_str(job_.key) + " gives an empty layer prefix, which names no layer (choose one with --prefix)"}));
      return false;
    }
    if (t.shape.size() != 2) {
      fail(make_error(ErrorKind::UsageError, {job_.key + " must be 2-D [N, K], got " + py::repr_shape(t.shape)}));
      return false;
    }
    gemm::FloatDtype fd;
    if (!gemm::float_dtype_of(t.dtype, fd)) {
      fail(make_error(ErrorKind::OpDtype, {"weights", "F32, BF16 or F16", st::dtype_name(t.dtype)}));
      return false;
    }
    if (t.shape[0] == 0 || t.shape[1] == 0) {
      fail(make_error(ErrorKind::StrictZeroSized, {py::repr_str(prefix), std::to_string(t.shape[0]), std::to_string(t.shape[1])}));
      return false;
    }
    // An illegal K, G or R: the quantizer's own operand error, before any data is read.
    auto contract = gemm::quantize_weights({}, t.shape[0], t.shape[1], job_.q);
    if (!contract.ok() && contract.error().kind != ErrorKind::UsageError) {
      fail(contract.error());
      return false;
    }
    add_layer(prefix, *ref);
    if (auto bias = ck_->find(layer_prefix(job_.key) + ".bias")) {
      // The layer keeps its bias (renamed with --prefix).
      Item c;
      c.src = *bias;
      c.outs.push_back({prefix + ".bias", bias->info->dtype, bias->info->shape});
      c.bytes = bias->info->end - bias->info->begin;
      items_.push_back(std::move(c));
    }
    return true;
  }

  bool plan_model() {
    std::vector<std::string> globs = job_.globs;
    if (globs.empty()) globs.push_back("*.weight");
    std::size_t selected_count = 0, layers = 0;
    for (const auto& [name, ref] : ck_->tensors()) {
      const std::string n(name);
      const bool selected =
          std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return ::fnmatch(g.c_str(), n.c_str(), 0) == 0; });
      if (selected) {
        ++selected_count;
        // A layer's weight is PREFIX.weight: quantizing any other name would write it under a new
        // name (`emb` as `emb.weight`), and the model would no longer find it.
        if (!ends_with(n, ".weight")) {
          skipped_.push_back({n, "not named PREFIX.weight"});
        } else if (n == ".weight") {  // layer '' (its marker '.comfy_quant'): --prefix '' is refused too
          skipped_.push_back({n, "an empty layer prefix"});
        } else if (auto why = not_quantizable(*ref.info, job_.q)) {
          skipped_.push_back({n, *why});
        } else {
          add_layer(layer_prefix(n), ref);
          ++layers;
          continue;
        }
      }
      add_copy(name, ref);
    }
    // A "quantized" checkpoint without a quantized layer is a copy nobody asked for: say why instead.
    std::string pattern;
    for (const auto& g : globs) pattern += (pattern.empty() ? "" : ", ") + py::repr_str(g);
    if (selected_count == 0) {
      fail(make_error(ErrorKind::UsageError, {"no tensor matches --keys " + pattern + " (nothing written)"}));
      return false;
    }
    if (layers == 0) {
      fail(make_error(ErrorKind::UsageError,
                      {"none of the " + std::to_string(selected_count) + " tensor(s) matching " + pattern +
                       " can be quantized with these options, e.g. " + skipped_.front().name + " (" +
                       skipped_.front().why + ") (nothing written)"}));
      return false;
    }
    return true;
  }

  bool check_names() {
    std::vector<std::string_view> all;
    for (const Item& it : items_)
      for (const auto& o : it.outs) all.push_back(o.name);
    std::sort(all.begin(), all.end());
    if (auto d = std::adjacent_find(all.begin(), all.end()); d != all.end()) {
      fail(make_error(ErrorKind::UsageError,
                      {"the output would hold tensor " + py::repr_str(*d) +
                       " twice: an input tensor has the name of a quantized layer's tensor (exclude that layer with --keys)"}));
      return false;
    }
    return check_leftovers();
  }

  // An input tensor that a quantized layer's consumers read as part of that layer but this run does
  // not write (PREFIX.weight_correction always; .weight_codebook with --uniform; .comfy_quant with
  // --markers metadata) would be copied beside the new layer and change it: a stale correction or
  // codebook is applied, a stale marker conflicts, while validate --strict and the summary's weight
  // error see nothing wrong. Refused, as a name clash is.
  bool check_leftovers() {
    const validate::ComfyFormat& f = validate::comfy_format(validate::ComfyFormatId::W4a8);
    std::unordered_map<std::string, std::string_view> claimed;  // PREFIX + suffix -> PREFIX
    for (const Item& it : items_) {
      if (!it.quantize) continue;
      for (const auto* list : {&f.required, &f.optional})
        for (std::string_view suffix : *list)
          if (suffix != ".bias") claimed.emplace(it.prefix + std::string(suffix), it.prefix);  // (a bias stays the layer's)
      claimed.emplace(it.prefix + ".comfy_quant", it.prefix);
    }
    for (const Item& it : items_) {
      if (it.quantize) continue;
      const std::string& name = it.outs.front().name;
      const auto c = claimed.find(name);
      if (c == claimed.end()) continue;
      fail(make_error(ErrorKind::UsageError,
                      {"input tensor " + py::repr_str(name) + " would be copied beside quantized layer " + py::repr_str(c->second) +
                       ", and consumers read it as part of that layer (" + std::string(f.name) + " reads PREFIX" +
                       name.substr(c->second.size()) +
                       "): remove it from the input, or exclude the layer with --keys (nothing written)"}));
      return false;
    }
    return true;
  }

  bool assign_shards() {
    std::uint64_t size = 0;
    std::size_t shard = 0;
    const bool one_file = !job_.key.empty() || is_char_device(job_.out);
    for (Item& it : items_) {
      if (size > 0 && size + it.bytes > job_.max_shard_bytes && !one_file) ++shard, size = 0;
      it.shard = shard;
      size += it.bytes;
    }
    shards_ = items_.empty() ? 1 : shard + 1;
    return true;
  }

  bool guard_outputs() {
    io::InputGuard guard;
    for (const std::string& s : ck_->shards().shards) guard.add(s);
    if (!ck_->shards().index.empty()) guard.add(ck_->shards().index);
    std::vector<std::string> outs;
    for (std::size_t s = 0; s < shards_; ++s) outs.push_back(names_.shard(s, shards_));
    // An index left by an earlier run would make the directory name stale shards: rewrite it. Only
    // this output's own, though: an index that is another model's (the float input's, beside it, or
    // reached through a link) is refused, not replaced.
    struct stat st {};
    const bool index_exists = ::lstat(names_.index().c_str(), &st) == 0;
    with_index_ = !names_.device && (shards_ > 1 || index_exists);
    if (with_index_) outs.push_back(names_.index());
    for (const std::string& o : outs)
      if (auto g = guard.check_output(o); !g.ok()) return fail(g.error()), false;
    if (with_index_ && index_exists) {
      if (const std::string why = foreign_index(guard, S_ISLNK(st.st_mode)); !why.empty()) {
        fail(make_error(ErrorKind::IoWriteFailed,
                        {names_.index(), "an index is there that this output did not write (" + why +
                                             "); replacing it would break the model it indexes: choose another --out, or "
                                             "move that index away"}));
        return false;
      }
    }
    return true;
  }

  // Why the index at names_.index() is not this output's own from an earlier run ("" when it is): a
  // link (a run writes a plain file), unreadable as an index, or naming a shard that is not of this
  // output's naming (STEM.safetensors, STEM-NNNNN-of-NNNNN.safetensors, beside it) or is an input.
  std::string foreign_index(const io::InputGuard& guard, bool is_link) const {
    if (is_link) return "it is a symbolic link";
    auto text = io::read_small_file(names_.index());
    if (!text.ok()) return text.error().message;
    auto doc = json::loads_str(*text);
    const json::Value* map = doc.ok() && doc->is_object() ? doc->get("weight_map") : nullptr;
    if (map == nullptr || !map->is_object()) return "it has no weight_map object";
    for (const auto& [tensor, file] : map->members) {
      if (!file.is_string()) return "it maps " + py::repr_str(tensor) + " to something other than a file name";
      // The file's bytes, as a loader opens them (a name that is not UTF-8 was written as \udcXX).
      const std::optional<std::string> bytes = io::fs_encode(file.text);
      if (!bytes) return "it names " + py::repr_str(file.text) + ", which no file name spells";
      const std::string& f = *bytes;
      if (f != names_.stem + ".safetensors" && !names_.numbered_shard(f)) return "it names " + py::repr_str(f) + ", not a shard of this output's naming";
      if (!guard.check_output(names_.dir + "/" + f).ok()) return "it names " + py::repr_str(f) + ", an input of this run";
    }
    return "";
  }

  // Input __metadata__ (first value of each key wins) and the input's own _quantization_metadata layers.
  // An input entry for a layer this run quantizes is dropped: the new marker replaces it (kept, an
  // old {"format": "bf16"} conflicts with the new tensor marker in sglang, or repeats its key in the
  // metadata). Tensor markers keep the input's text as it is spelled unless an entry goes.
  bool read_input_metadata() {
    std::optional<json::Value> tensor_mode_doc;  // the kept text, parsed, when it has a "layers" object
    std::unordered_map<std::string, std::size_t> kept_at;  // kept_layers_ by key (metadata mode): linear in layers
    for (const st::File& f : ck_->files())
      for (const auto& [k, v] : f.header().metadata) {
        if (k == kQuantMetaKey) {
          auto doc = json::loads_str(v);
          const json::Value* layers = doc.ok() && doc->is_object() ? doc->get("layers") : nullptr;
          const bool readable = layers != nullptr && layers->is_object();
          if (job_.markers == MarkerChoice::Tensor) {
            if (!raw_quant_meta_) {
              raw_quant_meta_ = v;
              if (readable) tensor_mode_doc = std::move(*doc);
            }
            continue;
          }
          if (!readable) {  // sglang's own refusal of it, as validate reports it
            const ErrorKind why = !doc.ok()               ? ErrorKind::SgInvalidQuantMetadata
                                  : !doc->is_object()     ? ErrorKind::SgQuantMetadataNotObject
                                                          : ErrorKind::SgQuantMetadataNoLayers;
            return fail(make_error(why, {f.path()})), false;
          }
          for (const auto& m : layers->members) {  // shards repeating a layer: one entry, as a dict merge
            const auto [at, fresh] = kept_at.try_emplace(m.first, kept_layers_.size());
            if (fresh) kept_layers_.push_back(m);
            else kept_layers_[at->second].second = m.second;
          }
          continue;
        }
        const std::string& key = k;  // clang < 16 cannot capture a structured binding
        if (std::none_of(meta_.begin(), meta_.end(), [&](const auto& e) { return e.first == key; })) meta_.emplace_back(k, v);
      }
    std::unordered_set<std::string_view> quantized;
    for (const Item& it : items_)
      if (it.quantize) quantized.insert(it.prefix);
    const auto replaced = [&](const auto& member) { return quantized.count(member.first) != 0; };
    std::size_t dropped = std::erase_if(kept_layers_, replaced);
    if (tensor_mode_doc) {
      json::Value* layers = tensor_mode_doc->get("layers");
      json::Members kept;
      for (auto& m : layers->members)
        if (!replaced(m)) kept.push_back(std::move(m));
      if (kept.size() != layers->members.size()) {
        dropped += layers->members.size() - kept.size();
        layers->members = std::move(kept);
        std::ostringstream text;
        JsonWriter(text).value(*tensor_mode_doc, json::NonFinite::PythonToken);
        raw_quant_meta_ = text.str();
      }
    }
    if (dropped > 0)
      report_.note("the input's _quantization_metadata named " + std::to_string(dropped) +
                   " of the layers quantized here; their new markers replace those entries");
    return true;
  }

  std::vector<std::pair<std::string, std::string>> shard_metadata(std::size_t s) const {
    auto m = meta_;
    if (job_.markers == MarkerChoice::Tensor) {
      if (raw_quant_meta_) m.emplace_back(std::string(kQuantMetaKey), *raw_quant_meta_);
      return m;
    }
    std::vector<const Item*> layers;
    for (const Item& it : items_)
      if (it.shard == s && it.quantize) layers.push_back(&it);
    m.emplace_back(std::string(kQuantMetaKey), quant_metadata(kept_layers_, layers, marker_json_));
    return m;
  }

  void write_all() {
    const unsigned threads = std::max(1u, job_.threads);
    OrderedPool<LayerOut> pool(jobs_.size(), threads, 2 * std::size_t(threads),
                               [this](std::size_t j) { return quantize_one(items_[jobs_[j]], job_); });
    if (pool.start_failed())
      report_.note("started " + std::to_string(pool.workers()) + " of " + std::to_string(threads) +
                   " threads (the system refused more); continuing with those");
    std::vector<io::AtomicFile> files;
    std::vector<double> errs(jobs_.size(), 0.0);
    std::uint64_t total = 0;
    {
      Progress progress(report_.err(), Progress::pick(job_.quiet), jobs_.size(), "layers");
      std::size_t next = 0;
      for (std::size_t s = 0; s < shards_; ++s) {
        const auto meta = shard_metadata(s);
        std::vector<io::OutTensor> outs;
        const std::size_t first = next;
        while (next < items_.size() && items_[next].shard == s) {
          for (const auto& o : items_[next].outs) outs.push_back(o);
          ++next;
        }
        auto head = io::safetensors_prefix(outs, &meta);
        if (!head.ok()) return fail(head.error());
        const std::string path = names_.shard(s, shards_);
        auto f = io::AtomicFile::create(path);
        if (!f.ok()) return fail(f.error());
        if (auto w = f->write({reinterpret_cast<const std::uint8_t*>(head->data()), head->size()}); !w.ok()) return fail(w.error());
        for (std::size_t i = first; i < next; ++i) {
          const Item& it = items_[i];
          if (!it.quantize) {
            if (auto w = f->write(it.src.file->data(*it.src.info)); !w.ok()) return fail(w.error());
            continue;
          }
          LayerOut r = pool.take(it.job);
          if (r.error) return fail(*r.error, r.where);
          if (!matches_plan(it, r.tensors))
            return fail(make_error(ErrorKind::UsageError, {"internal: layer " + it.prefix + " does not match its planned tensors"}));
          for (const st::TensorSpec& t : r.tensors)
            if (auto w = f->write(t.bytes); !w.ok()) return fail(w.error());
          errs[it.job] = r.rel_l2;
          progress.step(py::shown_name(it.prefix) + " [" + std::to_string(it.n) + " x " + std::to_string(it.k) + "] relative_l2=" + fixed(r.rel_l2, 6));
        }
        total += f->bytes_written();
        if (auto fin = f->finish(); !fin.ok()) return fail(fin.error());
        files.push_back(std::move(*f));
      }
    }
    if (with_index_) {
      auto idx = write_index();
      if (!idx.ok()) return fail(idx.error());
      files.push_back(std::move(*idx));
    }
    for (io::AtomicFile& f : files)  // index last: a reader never sees it before its shards
      if (auto p = f.publish(); !p.ok()) return fail(p.error());
    note_stale_shards();
    summary(errs, total);
  }

  // Who loads what was written (the consumer matrix of the output, from its headers).
  std::string consumers() const {
    if (names_.device) return "not determined (the output went to a character device and is not read back)";
    io::ShardList list;
    for (std::size_t s = 0; s < shards_; ++s) list.shards.push_back(names_.shard(s, shards_));
    auto ck = io::Checkpoint::open(std::move(list));
    if (!ck.ok()) return "not determined (" + ck.error().message + ")";
    auto m = consumer_matrix_of(*ck, upstream::kLatestSglang, py::kDefaultVersion);
    if (!m.ok()) return "not determined (" + m.error().message + ")";
    return consumers_line(*m) + " (validate --consumers shows each layer)";
  }

  // Files named like this output that it did not write stay (they are the user's files); say so.
  // STEM-NNNNN-of-NNNNN shards of another shard count; and, when this output is sharded, a
  // single-file STEM.safetensors, which Hugging Face loaders prefer to the index. Other names in the
  // directory are other outputs.
  void note_stale_shards() {
    if (names_.device) return;  // (a device's directory holds no output)
    DIR* d = ::opendir(names_.dir.c_str());
    if (!d) return;
    std::vector<std::string> stale;
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (!names_.numbered_shard(n)) continue;
      bool ours = false;
      for (std::size_t s = 0; s < shards_ && !ours; ++s) ours = names_.shard(s, shards_) == names_.dir + "/" + n;
      if (!ours) stale.push_back(n);
    }
    ::closedir(d);
    if (!stale.empty()) {
      std::sort(stale.begin(), stale.end());
      std::string list;
      for (std::size_t i = 0; i < stale.size() && i < kListed; ++i) list += (i ? ", " : "") + stale[i];
      if (stale.size() > kListed) list += ", ...";
      report_.note(std::to_string(stale.size()) + " shard file(s) in " + names_.dir +
                   " are not part of this output and were left as they are: " + list);
    }
    if (shards_ == 1) return;
    const std::string single = names_.shard(0, 1);
    struct stat st {};
    if (::stat(single.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      report_.note(single + " is not part of this output and was left as it is; loaders that find both prefer it to " +
                   names_.index() + " (Hugging Face's do) and would load it instead of this output: remove or move it");
  }

  Result<io::AtomicFile> write_index() {
    std::vector<std::pair<std::string_view, std::size_t>> map;
    std::uint64_t data = 0;
    for (const Item& it : items_)
      for (const auto& o : it.outs) {
        map.emplace_back(o.name, it.shard);
        data += *io::tensor_bytes(o.dtype, o.shape);
      }
    std::sort(map.begin(), map.end());
    std::string text = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(data) + "\n  },\n  \"weight_map\": {";
    for (std::size_t i = 0; i < map.size(); ++i) {
      std::string file = names_.shard(map[i].second, shards_);
      file = file.substr(file.rfind('/') + 1);
      text += (i ? ",\n    " : "\n    ") + json::dump_string(map[i].first) + ": " + json::dump_os_string(file);  // (a file name: system text)
    }
    text += "\n  }\n}\n";
    auto f = io::AtomicFile::create(names_.index());
    W4A8_TRY(f);
    W4A8_TRY(f->write({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}));
    W4A8_TRY(f->finish());
    return f;
  }

  void summary(const std::vector<double>& errs, std::uint64_t total) {
    std::ostream& out = report_.out();
    report_.succeed();
    if (!job_.key.empty()) {
      const Item& it = items_[jobs_[0]];
      out << "OK: " << py::shown_name(it.prefix) << " N=" << it.n << " K=" << it.k << " group_size=" << job_.q.group_size
          << " convrot_groupsize=" << job_.q.convrot_groupsize << (job_.q.codebook ? " codebook" : " uniform")
          << storage_text(" ") << " relative_l2=" << fixed(errs[0], 6) << " -> " << names_.shard(0, 1) << "\n";
      out << "  consumers: " << consumers() << "\n";
      return;
    }
    // Skipped weights are copied too, but counted once, as skipped: the three counts add up.
    const std::size_t copied = items_.size() - jobs_.size() - skipped_.size();
    out << "OK: quantized " << jobs_.size() << " layer(s), skipped " << skipped_.size() << ", copied " << copied
        << " other tensor(s) -> ";
    if (shards_ == 1) out << names_.shard(0, 1) << (with_index_ ? " + " + names_.index() : "");
    else out << shards_ << " shards + " << names_.index();
    out << " (" << human_bytes(total) << ", markers: " << choice_name<MarkerChoice>(kMarkers, job_.markers)
        << storage_text(", ") << ")\n";
    out << "  consumers: " << consumers() << "\n";
    if (!errs.empty()) {
      const double mean = std::accumulate(errs.begin(), errs.end(), 0.0) / double(errs.size());
      std::vector<std::size_t> order(errs.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return errs[a] > errs[b]; });
      out << "  relative L2 weight error: mean " << fixed(mean, 6) << ", max " << fixed(errs[order[0]], 6) << "\n  worst:";
      for (std::size_t i = 0; i < order.size() && i < kWorst; ++i)
        out << (i ? ", " : " ") << py::shown_name(items_[jobs_[order[i]]].prefix) << " " << fixed(errs[order[i]], 6);
      out << "\n";
    }
    if (!skipped_.empty()) {
      out << "  skipped (copied unchanged):";
      for (std::size_t i = 0; i < skipped_.size() && i < kListed; ++i)
        out << (i ? ", " : " ") << skipped_[i].name << " (" << skipped_[i].why << ")";
      if (skipped_.size() > kListed) out << ", ... and " << skipped_.size() - kListed << " more";
      out << "\n";
    }
  }

  // The storage variant when not the default 4-bit FP8 one: "6-bit", "F32 scales" (joined by sep).
  std::string storage_text(const char* sep) const {
    std::string s;
    if (job_.q.bits == 6) s += sep + std::string("6-bit");
    if (job_.q.scale_dtype == gemm::ScaleDtype::F32) s += sep + std::string("F32 scales");
    return s;
  }

  const QuantizeJob& job_;
  Reporter& report_;
  const io::Checkpoint* ck_ = nullptr;
  std::string marker_;
  json::Value marker_json_;
  std::vector<Item> items_;
  std::vector<std::size_t> jobs_;  // quantized items, by job index
  std::vector<Skip> skipped_;
  std::size_t shards_ = 1;
  bool with_index_ = false;
  bool failed_ = false;
  OutputNames names_;
  std::vector<std::pair<std::string, std::string>> meta_;
  std::optional<std::string> raw_quant_meta_;
  std::vector<std::pair<std::string, json::Value>> kept_layers_;
};

}  // namespace

Result<std::uint64_t> parse_size(const std::string& text) {
  const auto malformed = [&] {
    return make_error(ErrorKind::UsageError, {"--max-shard-size " + text + ": expected a size such as 5GB, 500MB or 1000000"});
  };
  const auto too_large = [&] {
    return make_error(ErrorKind::UsageError,
                      {"--max-shard-size " + text + ": more than " + std::to_string(UINT64_MAX) + " bytes"});
  };
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) return malformed();
  std::uint64_t v = 0;
  if (std::from_chars(text.data(), text.data() + i, v).ec != std::errc{}) return too_large();  // (only digits: range)
  std::string unit = text.substr(i);
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  static const std::pair<const char*, std::uint64_t> kUnits[] = {
      {"", 1}, {"B", 1}, {"KB", 1000}, {"MB", 1000'000}, {"GB", 1000'000'000}, {"TB", 1000'000'000'000},
      {"KIB", 1ull << 10}, {"MIB", 1ull << 20}, {"GIB", 1ull << 30}, {"TIB", 1ull << 40}};
  for (const auto& [u, mul] : kUnits)
    if (unit == u) {
      if (v > UINT64_MAX / mul) return too_large();
      if (v * mul == 0) return make_error(ErrorKind::UsageError, {"--max-shard-size must be positive"});
      return v * mul;
    }
  return malformed();
}

void run_quantize(const QuantizeJob& job, Reporter& report) { QuantizeRun(job, report).run(); }

}  // namespace w4a8::cli
