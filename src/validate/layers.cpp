// inspect_layers(): upstream's sections 1-3 once, then every layer's own section 4 and --strict, so a
// layer's verdict does not depend on which other layer upstream happens to check first.
#include "validate/layers.hpp"

#include <memory>

#include "validate/pipeline.hpp"

namespace w4a8::validate {
namespace {

Result<LayersReport> run_layers(std::size_t nfiles, const detail::Loader& load, const Options& opt,
                                std::shared_ptr<const void> keep) {
  detail::State s(opt);
  s.report.keep = std::move(keep);
  LayersReport out;
  out.sglang = opt.sglang;
  out.checkpoint = detail::prepare(s, nfiles, load);
  if (!out.checkpoint.ok() && error_info(out.checkpoint.error().kind).exit == ExitClass::Usage)
    return std::move(out.checkpoint).error();  // the files could not be read: no verdict at all
  if (s.collected) {
    out.verdicts.resize(s.report.layers.size());
    for (std::size_t i = 0; i < s.report.layers.size(); ++i) {
      LayerVerdict& v = out.verdicts[i];
      v.upstream = detail::check_layer(s, i);
      if (opt.strict && v.upstream.ok()) v.strict = detail::check_layer_strict(s, i);
    }
    out.report = std::move(s.report);
  } else {
    out.report.sglang = opt.sglang;
    out.report.keep = std::move(s.report.keep);
  }
  return out;
}

// Hands out files opened earlier, each only when asked (upstream reads file i after file i - 1, so an
// earlier file's error wins over a later file's).
// failed: set to the path of a file whose error it hands out.
detail::Loader replay_loader(const std::vector<Result<st::File>>& opened, std::span<const std::string> paths,
                             std::string& failed) {
  return [&opened, paths, &failed](std::size_t i) -> Result<detail::Source> {
    if (!opened[i].ok()) {
      failed = paths[i];
      return opened[i].error();
    }
    const st::File& f = opened[i].value();
    return detail::Source{paths[i], f.bytes(), &f.header(), true};
  };
}

}  // namespace

Status LayersReport::overall() const {
  if (!checkpoint.ok()) return checkpoint.error();
  for (const LayerVerdict& v : verdicts)
    if (!v.upstream.ok()) return v.upstream.error();
  for (const LayerVerdict& v : verdicts)
    if (!v.strict.ok()) return v.strict.error();
  return Ok{};
}

Result<LayersReport> inspect_layers(std::span<const InputFile> files, const Options& opt) {
  auto headers = std::make_shared<std::vector<st::Header>>();
  headers->reserve(files.size());  // Sources point into it: no reallocation
  return run_layers(files.size(), detail::bytes_loader(files, *headers), opt, headers);
}

Result<LayersReport> inspect_layers_parsed(std::span<const ParsedFile> files, const Options& opt) {
  return run_layers(files.size(), detail::parsed_loader(files), opt, nullptr);
}

Result<std::vector<LayersReport>> inspect_consumers(std::span<const std::string> paths, const Options& opt) {
  auto opened = std::make_shared<std::vector<Result<st::File>>>();
  opened->reserve(paths.size());
  for (const std::string& p : paths) opened->push_back(st::File::open(p));
  std::vector<LayersReport> out;
  for (const upstream::SglangProfile& p : upstream::kSglangProfiles) {
    Options o = opt;
    o.sglang = p.id;
    std::string failed;
    Result<LayersReport> r = run_layers(paths.size(), replay_loader(*opened, paths, failed), o, opened);
    if (!r.ok()) return std::move(r).error();
    if (!r->checkpoint.ok()) r->checkpoint_file = std::move(failed);
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace w4a8::validate
