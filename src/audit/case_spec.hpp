// One audit case and the suite manifest: what a case holds (shapes, storage variant, dtypes, the
// kind of data) and its JSON form, which external implementations read (docs/audit.md "Manifest").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "gemm/numerics.hpp"
#include "json/value.hpp"

namespace w4a8::audit {

inline constexpr int kManifestVersion = 1;

// What the activations and weights of a case stress.
enum class DataKind : std::uint8_t {
  Random,    // Gaussian rows, a few outlier rows, random codes and scale bytes
  Ties,      // rotated rows whose quantization quotients sit exactly on .5, decode products on .5
  LargeAcc,  // |acc| > 2^24 (the int32 -> float32 conversion rounds)
  Saturate,  // one huge outlier per row, decode products beyond +-127 (clamp), large bias
  ZeroRows,  // all-zero activation rows (scale floor) and all-zero weight rows
};
inline constexpr DataKind kAllDataKinds[] = {DataKind::Random, DataKind::Ties, DataKind::LargeAcc, DataKind::Saturate,
                                             DataKind::ZeroRows};
std::string_view data_kind_name(DataKind d);
bool parse_data_kind(std::string_view s, DataKind& out);

// Storage of weight_s_rel in the manifest: "f8_e4m3" or "f32" (comfy-kitchen >= 0.2.40).
std::string_view scale_dtype_name(gemm::ScaleDtype s);

bool parse_dtype(std::string_view s, gemm::FloatDtype& out);  // "f32", "bf16", "f16"

struct CaseSpec {
  std::string id;    // unique within the suite; also the file stem
  std::string file;  // path of the case file relative to the suite directory
  std::uint64_t m = 1, n = 16, k = 16;
  std::int64_t g = 16, r = 16;
  int bits = 4;  // 4 or 6 (6: uniform, no correction, K % 32 == 0, G % 16 == 0)
  gemm::ScaleDtype scale_dtype = gemm::ScaleDtype::Fp8E4M3;
  bool codebook = false, correction = false, bias = false;
  gemm::FloatDtype bias_dtype = gemm::FloatDtype::F32;
  gemm::FloatDtype x_dtype = gemm::FloatDtype::F32;
  gemm::FloatDtype out_dtype = gemm::FloatDtype::F32;
  DataKind data = DataKind::Random;
  std::uint64_t seed = 1;
  std::string covers;  // the contract edge this case exists for, in words
  // The entry as read by case_from_json (every field, unknown ones too): load_case compares it with
  // the copy embedded in the case file. Null for a spec built in code.
  json::Value entry;
};

struct Manifest {
  int version = kManifestVersion;
  std::string grid;  // small | standard | full
  std::uint64_t seed = 0;
  std::string layer_prefix = "layer";  // tensors PREFIX.weight, ... in every case file
  std::string input_key = "input";     // activations [M, K]
  std::vector<CaseSpec> cases;
};

json::Value case_to_json(const CaseSpec& c);
json::Value manifest_to_json(const Manifest& m);
// where: the manifest's path, for messages.
// @return the case, or AuditManifest naming the first missing/invalid field.
Result<CaseSpec> case_from_json(const json::Value& v, std::string_view where = "manifest.json");
// @return the manifest, or AuditManifest (bad JSON, wrong version, invalid case, duplicate id).
Result<Manifest> parse_manifest(std::string_view text, std::string_view where = "manifest.json");

// "M=13 N=48 K=256 G=16 R=16 codebook bias=bf16 x=f32 out=bf16 ties".
std::string describe(const CaseSpec& c);

}  // namespace w4a8::audit
