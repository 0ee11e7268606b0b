// A self-contained HTML report of an audit run (no network: data, script and styles inline; plots
// drawn as SVG by the inline script): pass/fail per case and stage, an ulp histogram over every
// output, error heatmaps over (m, n) tiles and histograms for the worst cases, and a one-line
// command reproducing each.
#pragma once

#include <string>

#include "audit/runner.hpp"
#include "core/result.hpp"

namespace w4a8::audit {

std::string render_report_html(const AuditRun& run);

// Writes DIR/index.html (atomically) and DIR/results.json. Refuses to write into the suite itself.
// @return the path of index.html, or IoWriteFailed / AuditReportDir.
Result<std::string> write_report(const std::string& dir, const AuditRun& run);

}  // namespace w4a8::audit
