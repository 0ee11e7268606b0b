#include "audit/report_html.hpp"

#include <filesystem>

#include "io/atomic_file.hpp"

namespace w4a8::audit {

namespace {

// The page: styles, a placeholder per section, and the script that draws everything from the
// embedded JSON (id "audit-data"). After drawing, <body data-plots="N"> counts the plots drawn.
constexpr const char* kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>w4a8check audit</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}
.sub{color:#5a6476} code{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#eef1f5;padding:1px 4px;border-radius:3px}
.cards{display:flex;gap:10px;flex-wrap:wrap;margin:14px 0}
.card{background:#fff;border:1px solid #d8dde6;border-radius:6px;padding:8px 14px;min-width:92px}
.card b{display:block;font-size:22px}.card span{color:#5a6476;font-size:12px}
.verdict{font-size:18px;font-weight:700;padding:4px 12px;border-radius:6px;display:inline-block;margin-top:6px}
.v-pass{background:#d6f5dd;color:#0c5b22}.v-fail{background:#fbd8d8;color:#8a1010}.v-none{background:#e6e8ec;color:#444}
table{border-collapse:collapse;background:#fff;font-size:12px}
th,td{border:1px solid #d8dde6;padding:3px 6px;text-align:left;vertical-align:top} th{background:#f0f2f6;position:sticky;top:0}
td.st{text-align:center;font-weight:600;min-width:64px}
.exact{background:#c9efd2;color:#0c5b22}.order{background:#e8f5c8;color:#3d5a00}.fail{background:#f7c4c4;color:#8a1010}
.na{background:#f3f4f6;color:#9aa1ad}.skip{background:#e6e8ec;color:#555}.unsup{background:#dbeafe;color:#1e3a8a}.upstream{background:#ffe1b8;color:#7a4300}.broken{background:#e4d4f7;color:#4b1d87}
.plot{background:#fff;border:1px solid #d8dde6;border-radius:6px;padding:10px;display:inline-block;vertical-align:top;margin:0 10px 10px 0}
.plot h3{font-size:13px;margin:0 0 6px}
.worst{background:#fff;border:1px solid #d8dde6;border-radius:6px;padding:10px 12px;margin:0 0 12px}
.worst .stages div{margin:2px 0}.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.legend span{display:inline-block;padding:1px 8px;margin-right:4px;border-radius:3px;font-size:12px}
.scroll{max-height:520px;overflow:auto;border:1px solid #d8dde6}
</style></head>
<body data-plots="0">
<h1>W4A8 kernel audit</h1>
<div class="sub" id="meta"></div>
<div id="verdict"></div>
<div class="cards" id="cards"></div>
<h2>Output error over all cases</h2>
<div id="global"></div>
<h2>Worst cases</h2>
<div class="sub">Failing cases first, then the largest ulp distance of the output from the reference. Heatmap: worst
ulp distance per (m, n) tile of the output (log scale; white = bit-exact).</div>
<div id="worst"></div>
<h2>Every case, stage by stage</h2>
<div class="legend"><span class="exact">exact</span><span class="order">order (explained)</span><span class="fail">fail</span><span class="na">n/a</span><span class="unsup">unsupported</span><span class="skip">skip</span><span class="upstream">upstream error</span><span class="broken">broken</span></div>
<div class="scroll"><table id="cases"></table></div>
<script type="application/json" id="audit-data">)HTML";

constexpr const char* kTail = R"HTML(</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("audit-data").textContent);
const NS = "http://www.w3.org/2000/svg";
let plots = 0;
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function sv(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
const STAGES = ["decode", "quantize", "accumulate", "epilogue", "output"];
const BUCKETS = ["0","1","2","3-4","5-8","9-16","17-64","65-256","257-4096",">4096"];
function cls(v) { return {"exact":"exact","order":"order","fail":"fail","n/a":"na"}[v] || "na"; }
function statusCls(s) { return {"skip":"skip","unsupported":"unsup","upstream_error":"upstream","failed":"broken"}[s] || "na"; }
function outStats(c) { return (c.tensors || []).find(t => t.name === "output"); }
function maxUlp(c) { const o = outStats(c); if (!o) return -1; return o.max_ulp === "NaN" ? Infinity : o.max_ulp; }
function fmt(x) { if (typeof x === "string") return x; if (x === 0) return "0"; const a = Math.abs(x); return (a >= 1e4 || a < 1e-3) ? x.toExponential(2) : x.toPrecision(4); }

// Histogram: bars of counts per ulp bucket, log-scaled height, labelled.
function histogram(counts, title, w, h) {
  const box = el("div", {class: "plot"}); box.appendChild(el("h3", {}, title));
  const s = sv("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, "data-kind": "histogram"});
  const left = 46, bottom = 36, top = 10, pw = w - left - 8, ph = h - top - bottom;
  const mx = Math.max(1, ...counts);
  const lg = v => v <= 0 ? 0 : Math.log10(v + 1) / Math.log10(mx + 1);
  s.appendChild(sv("line", {x1: left, y1: top + ph, x2: left + pw, y2: top + ph, stroke: "#888"}));
  for (let p = 0; Math.pow(10, p) <= mx; p++) {
    const y = top + ph - lg(Math.pow(10, p)) * ph;
    s.appendChild(sv("line", {x1: left, y1: y, x2: left + pw, y2: y, stroke: "#eceef2"}));
    s.appendChild(sv("text", {x: left - 4, y: y + 4, "text-anchor": "end", "font-size": 10, fill: "#5a6476"}, "1e" + p));
  }
  const bw = pw / counts.length;
  counts.forEach((c, i) => {
    const bh = lg(c) * ph;
    const r = sv("rect", {x: left + i * bw + 2, y: top + ph - bh, width: bw - 4, height: Math.max(bh, c > 0 ? 1 : 0),
                          fill: i === 0 ? "#3c9d5d" : i <= 2 ? "#a4c639" : i <= 5 ? "#e0a030" : "#d04040"});
    r.appendChild(sv("title", {}, BUCKETS[i] + " ulp: " + c));
    s.appendChild(r);
    s.appendChild(sv("text", {x: left + i * bw + bw / 2, y: top + ph + 13, "text-anchor": "middle", "font-size": bw < 44 ? 8.5 : 10, fill: "#333"}, BUCKETS[i]));
  });
  s.appendChild(sv("text", {x: left + pw / 2, y: h - 4, "text-anchor": "middle", "font-size": 11, fill: "#333"}, "ulp distance from the reference (output dtype)"));
  box.appendChild(s); plots++;
  return box;
}

// Heatmap of worst ulp per (m, n) tile; colour on log2(1 + ulp).
function heatmap(t, title) {
  const box = el("div", {class: "plot"}); box.appendChild(el("h3", {}, title));
  const cell = Math.max(6, Math.min(16, Math.floor(320 / Math.max(t.rows, t.cols))));
  const left = 40, top = 8, w = left + t.cols * cell + 84, h = top + t.rows * cell + 34;
  const s = sv("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, "data-kind": "heatmap"});
  const mx = Math.max(1, ...t.max_ulp);
  const lmax = Math.log2(1 + mx);
  const color = u => { if (u <= 0) return "#ffffff"; const f = Math.log2(1 + u) / lmax;
    const r = 255, g = Math.round(230 - 200 * f), b = Math.round(120 - 110 * f); return `rgb(${r},${g},${b})`; };
  for (let i = 0; i < t.rows; i++) for (let j = 0; j < t.cols; j++) {
    const u = t.max_ulp[i * t.cols + j];
    const r = sv("rect", {x: left + j * cell, y: top + i * cell, width: cell, height: cell, fill: color(u), stroke: "#e3e6ea", "stroke-width": 0.5});
    r.appendChild(sv("title", {}, `rows ${i * t.tile_m}..${(i + 1) * t.tile_m - 1}, cols ${j * t.tile_n}..${(j + 1) * t.tile_n - 1}: max ${u} ulp`));
    s.appendChild(r);
  }
  s.appendChild(sv("text", {x: left, y: top + t.rows * cell + 14, "font-size": 10, fill: "#333"}, `n → (tile ${t.tile_n})`));
  s.appendChild(sv("text", {x: 4, y: top + 10, "font-size": 10, fill: "#333"}, "m ↓"));
  s.appendChild(sv("text", {x: 4, y: top + 22, "font-size": 10, fill: "#333"}, `(${t.tile_m})`));
  const lx = left + t.cols * cell + 12, lh = Math.max(40, t.rows * cell);
  for (let k = 0; k < 10; k++) s.appendChild(sv("rect", {x: lx, y: top + (9 - k) * lh / 10, width: 12, height: lh / 10 + 0.5, fill: color(k === 0 ? 0 : Math.pow(2, lmax * k / 9) - 1)}));
  s.appendChild(sv("text", {x: lx + 16, y: top + 9, "font-size": 10, fill: "#333"}, mx >= 1e5 ? mx.toExponential(1) : String(mx)));
  s.appendChild(sv("text", {x: lx + 16, y: top + 21, "font-size": 10, fill: "#5a6476"}, "ulp"));
  s.appendChild(sv("text", {x: lx + 16, y: top + lh, "font-size": 10, fill: "#333"}, "0"));
  box.appendChild(s); plots++;
  return box;
}

function draw() {
  const c = D.counts;
  document.getElementById("meta").innerHTML = "";
  document.getElementById("meta").append(
    "Implementation ", el("code", {}, D.implementation), " on suite ", el("code", {}, D.suite), ` (${D.grid} grid), policy `,
    el("code", {}, D.policy), ", activation policy ", el("code", {}, D.act_policy), `, expected values: ${D.reference || "CPU reference"}, ${fmt(D.seconds)} s`);
  const ran = c.exact + c.order, o = D.outcome;
  document.getElementById("verdict").appendChild(el("div", {class: "verdict " + (o === "fail" ? "v-fail" : o === "pass" ? "v-pass" : "v-none")},
    o === "fail" ? "FAIL" : o === "pass" ? "PASS" : "NOTHING RAN" + (D.unavailable ? ": " + D.unavailable : "")));
  const cards = document.getElementById("cards");
  for (const [k, label] of [["cases","cases"],["exact","exact"],["order","order (explained)"],["failed","failed"],["unsupported","unsupported"],["skipped","skipped"],["upstream_errors","upstream errors"],["broken","broken"],["unstable","unstable (a rerun differed)"]])
    { const d = el("div", {class: "card"}); d.appendChild(el("b", {}, String(c[k]))); d.appendChild(el("span", {}, label)); cards.appendChild(d); }

  // Global histogram and per-stage verdict counts.
  const total = new Array(10).fill(0);
  for (const cs of D.cases) { const o = outStats(cs); if (o) o.ulp_histogram.forEach((v, i) => total[i] += v); }
  const g = document.getElementById("global");
  g.appendChild(histogram(total, "Every output element, all cases", 460, 220));
  const sc = {}; for (const s of STAGES) sc[s] = {exact: 0, order: 0, fail: 0, "n/a": 0};
  for (const cs of D.cases) if (cs.stages) for (const s of STAGES) sc[s][cs.stages[s].verdict]++;
  const sb = el("div", {class: "plot"}); sb.appendChild(el("h3", {}, "Verdicts per stage (cases that ran)"));
  const w = 420, h = 200, s = sv("svg", {width: w, height: h, viewBox: `0 0 ${w} ${h}`, "data-kind": "stages"});
  const colors = {exact: "#3c9d5d", order: "#a4c639", fail: "#d04040", "n/a": "#d9dce1"};
  STAGES.forEach((st, i) => {
    const y = 10 + i * 36, tot = Math.max(1, ran + c.failed); let x = 90;
    s.appendChild(sv("text", {x: 84, y: y + 17, "text-anchor": "end", "font-size": 12, fill: "#333"}, st));
    for (const v of ["exact", "order", "fail", "n/a"]) {
      const bw = sc[st][v] / tot * (w - 100); if (bw <= 0) continue;
      const r = sv("rect", {x: x, y: y, width: bw, height: 24, fill: colors[v]}); r.appendChild(sv("title", {}, `${st}: ${sc[st][v]} ${v}`));
      s.appendChild(r); if (bw > 22) s.appendChild(sv("text", {x: x + bw / 2, y: y + 16, "text-anchor": "middle", "font-size": 11, fill: v === "n/a" ? "#555" : "#fff"}, String(sc[st][v])));
      x += bw;
    }
  });
  sb.appendChild(s); g.appendChild(sb); plots++;

  // Worst cases.
  const rank = cs => (cs.unstable ? 3e18 : 0) + (cs.verdict === "fail" ? 2e18 : 0) + (cs.status === "upstream_error" || cs.status === "failed" ? 1e18 : 0) + Math.min(maxUlp(cs), 1e17);
  const worst = D.cases.filter(cs => cs.status !== "ok" ? cs.status !== "skip" : (cs.verdict !== "exact" || cs.unstable))
                       .sort((a, b) => rank(b) - rank(a)).slice(0, 12);
  const wd = document.getElementById("worst");
  if (!worst.length) wd.appendChild(el("p", {}, "Every case that ran is bit-exact."));
  for (const cs of worst) {
    const box = el("div", {class: "worst"});
    const head = el("div", {});
    const tag = cs.status === "ok" ? cs.verdict : cs.status;
    head.appendChild(el("span", {class: "st " + (cs.status === "ok" ? cls(cs.verdict) : statusCls(cs.status)), style: "padding:1px 8px;border-radius:3px;font-weight:700"}, tag.toUpperCase()));
    head.append(" ", el("b", {}, cs.id), " — " + cs.describe + (cs.failing_stage ? "  · failing stage: " : ""));
    if (cs.failing_stage) head.appendChild(el("b", {}, cs.failing_stage));
    box.appendChild(head);
    if (cs.covers) box.appendChild(el("div", {class: "sub"}, "covers: " + cs.covers));
    if (cs.message) box.appendChild(el("div", {class: "mono"}, cs.message));
    if (cs.unstable) box.appendChild(el("div", {class: "mono"}, "UNSTABLE: " + cs.unstable));
    if (cs.stages) {
      const st = el("div", {class: "stages"});
      for (const s of STAGES) if (cs.stages[s].verdict !== "n/a") {
        const d = el("div", {}); d.appendChild(el("span", {class: cls(cs.stages[s].verdict), style: "padding:0 6px;border-radius:3px"}, s + ": " + cs.stages[s].verdict));
        d.append(" " + cs.stages[s].detail); st.appendChild(d);
      }
      box.appendChild(st);
      const o = outStats(cs);
      if (cs.output_tiles) box.appendChild(heatmap(cs.output_tiles, "Output: worst ulp per tile"));
      if (o) box.appendChild(histogram(o.ulp_histogram, `Output ulp histogram (max ${fmt(o.max_ulp)}, rel L2 ${fmt(o.rel_l2)})`, 440, 190));
    }
    const rp = el("div", {class: "mono"}); rp.append("reproduce: "); rp.appendChild(el("code", {}, cs.repro)); box.appendChild(rp);
    wd.appendChild(box);
  }

  // The full table.
  const t = document.getElementById("cases");
  const hr = el("tr", {});
  for (const h of ["case", "shape and data", "status"].concat(STAGES, ["max ulp", "rel L2", "impl s"])) hr.appendChild(el("th", {}, h));
  t.appendChild(hr);
  for (const cs of D.cases) {
    const tr = el("tr", {});
    tr.appendChild(el("td", {class: "mono"}, cs.id));
    tr.appendChild(el("td", {}, cs.describe));
    tr.appendChild(el("td", {class: "st " + (cs.status === "ok" ? cls(cs.verdict) : statusCls(cs.status)), title: cs.message || ""}, cs.status === "ok" ? cs.verdict : cs.status));
    for (const s of STAGES) {
      const v = cs.stages ? cs.stages[s].verdict : "n/a";
      tr.appendChild(el("td", {class: "st " + cls(v), title: cs.stages && cs.stages[s].detail ? cs.stages[s].detail : ""}, v));
    }
    const o = outStats(cs);
    tr.appendChild(el("td", {}, o ? String(o.max_ulp) : ""));
    tr.appendChild(el("td", {}, o ? fmt(o.rel_l2) : ""));
    tr.appendChild(el("td", {}, fmt(cs.impl_seconds)));
    t.appendChild(tr);
  }
  document.body.setAttribute("data-plots", String(plots));
}
draw();
</script>
</body></html>
)HTML";

}  // namespace

std::string render_report_html(const AuditRun& run) {
  std::string data = strict_json(run_to_json(run));
  // The JSON sits inside <script>: never let it close the element.
  std::string safe;
  safe.reserve(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<')
      safe += "\\u003c";
    else
      safe += data[i];
  }
  return std::string(kHead) + safe + kTail;
}

Result<std::string> write_report(const std::string& dir, const AuditRun& run) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto same = [&](const fs::path& a) { return fs::equivalent(dir, a, ec) && !ec; };
  if (!run.suite_dir.empty() && (same(run.suite_dir) || same(fs::path(run.suite_dir) / "cases")))
    return make_error(ErrorKind::AuditReportDir, {dir});
  if (fs::create_directories(dir, ec); ec) return make_error(ErrorKind::IoWriteFailed, {dir, ec.message()});
  auto write = [](const std::string& path, const std::string& text) {
    return io::write_file_atomic(path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  };
  const std::string index = (fs::path(dir) / "index.html").string();
  W4A8_TRY(write(index, render_report_html(run)));
  W4A8_TRY(write((fs::path(dir) / "results.json").string(), strict_json(run_to_json(run)) + "\n"));
  return index;
}

}  // namespace w4a8::audit
