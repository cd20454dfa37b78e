#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "runjson/format.h"
#include "runjson/median.h"
#include "svg.h"

namespace gptbench::report {
namespace {

using runjson::html_escape;

// The median of the finite values (a counter may hold NaN or infinity); NaN when none is.
double finite_median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  return runjson::median(std::move(v));
}

std::vector<std::string> segments(const std::string& name) {
  std::vector<std::string> out;
  std::stringstream s(name);
  std::string part;
  while (std::getline(s, part, '/')) out.push_back(part);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "–";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string file_stem(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  auto dot = base.rfind(".json");
  return dot == std::string::npos ? base : base.substr(0, dot);
}

// Google Benchmark appends "/manual_time" to the names of manually timed benchmarks.
std::string display_name(const std::string& name) {
  const std::string suffix = "/manual_time";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name.substr(0, name.size() - suffix.size());
  return name;
}

// Drops the path segments that every label has (wherever they are) and returns them joined by
// '/', so a chart's rows differ only in what differs; "" when nothing is common or one label.
std::string drop_common(std::vector<std::string*> labels) {
  if (labels.size() < 2) return "";
  std::vector<std::vector<std::string>> parts;
  for (auto* l : labels) parts.push_back(segments(*l));
  std::vector<std::string> common;
  for (const auto& seg : parts[0]) {
    bool everywhere = std::all_of(parts.begin() + 1, parts.end(), [&](const auto& p) {
      return std::find(p.begin(), p.end(), seg) != p.end();
    });
    if (everywhere && std::find(common.begin(), common.end(), seg) == common.end()) common.push_back(seg);
  }
  if (common.empty()) return "";
  std::string shared;
  for (const auto& c : common) shared += (shared.empty() ? "" : "/") + c;
  for (size_t i = 0; i < labels.size(); ++i) {
    std::string out;
    for (const auto& seg : parts[i])
      if (std::find(common.begin(), common.end(), seg) == common.end()) out += (out.empty() ? "" : "/") + seg;
    *labels[i] = out.empty() ? "(all)" : out;
  }
  return shared;
}

std::string with_common(const std::string& title, const std::string& common) {
  return common.empty() ? title : title + "  [all: " + common + "]";
}

void shorten(LineChart& chart) {
  std::vector<std::string*> l;
  for (auto& s : chart.series) l.push_back(&s.name);
  chart.title = with_common(chart.title, drop_common(l));
}

void shorten(BarChart& chart) {
  std::vector<std::string*> l;
  for (auto& b : chart.bars) l.push_back(&b.label);
  chart.title = with_common(chart.title, drop_common(l));
}

constexpr const char* kPhases[] = {"data", "h2d", "forward", "loss", "backward",
                                   "optimizer", "zero_grad", "graph", "sync"};

constexpr const char* kStyle = R"(
body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd}
p.note{color:#555;font-size:13px;max-width:1000px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
td:first-child,th:first-child{text-align:left;font-family:monospace}
svg{display:block;margin:10px 0}
svg text{font-size:11px;font-family:monospace;fill:#222}
svg text.title{font-size:13px;font-weight:bold;font-family:sans-serif}
svg text.label,svg text.ytick{text-anchor:end}
svg text.xtick{text-anchor:middle;fill:#555}
svg line.grid{stroke:#e5e5e5}svg line.axis{stroke:#444}
)";

}  // namespace

double Entry::arg(const std::string& key, double fallback) const {
  for (const auto& s : segments(name))
    if (starts_with(s, key + ":")) {
      try {
        return std::stod(s.substr(key.size() + 1));
      } catch (const std::exception&) {
        return fallback;
      }
    }
  return fallback;
}

std::string Entry::without(const std::string& key) const {
  std::string out;
  for (const auto& s : segments(name))
    if (!starts_with(s, key + ":")) out += (out.empty() ? "" : "/") + s;
  return out;
}

double Entry::counter(const std::string& key, double fallback) const {
  auto it = counters.find(key);
  return it == counters.end() || !std::isfinite(it->second) ? fallback : it->second;
}

Collected collect(const std::vector<runjson::Run>& runs) {
  Collected c;
  std::map<std::string, int> seen;
  for (const auto& run : runs)
    for (const auto& b : run.benchmarks) ++seen[b.name];
  for (const auto& run : runs) {
    c.contexts.push_back(run.context);
    c.sources.push_back(run.source);
    for (const auto& b : run.benchmarks) {
      if (b.status != runjson::RunStatus::kOk || b.repetitions.empty()) {
        c.skipped.emplace_back(display_name(b.name), b.message);
        continue;
      }
      Entry e;
      e.name = display_name(b.name);
      e.source = run.source;
      e.label = seen[b.name] > 1 ? e.name + " [" + file_stem(run.source) + "]" : e.name;
      std::vector<double> t;
      for (const auto& r : b.repetitions) t.push_back(r.real_ns / 1e6);
      e.real_ms = finite_median(t);
      for (const auto& cs : b.counters) e.counters[cs.name] = finite_median(cs.values);
      c.entries.push_back(std::move(e));
    }
  }
  return c;
}

const Entry* pick_baseline(const Collected& c, const std::string& wanted) {
  const Entry* contains = nullptr;
  for (const auto& e : c.entries) {
    if (!e.has("tokens/s")) continue;
    if (!wanted.empty() && (e.name == wanted || e.label == wanted)) return &e;
    if (!wanted.empty() && !contains && e.label.find(wanted) != std::string::npos) contains = &e;
  }
  if (contains) return contains;
  for (const auto& e : c.entries)
    if (starts_with(e.name, "model/train_step/") && e.name.find("opt:torch_fused") != std::string::npos &&
        e.name.find("mode:eager") != std::string::npos && e.has("tokens/s"))
      return &e;
  for (const auto& e : c.entries)
    if (starts_with(e.name, "model/train_step/") && e.has("tokens/s")) return &e;
  return nullptr;
}

namespace {

std::vector<const Entry*> family(const Collected& c, const std::string& prefix) {
  std::vector<const Entry*> out;
  for (const auto& e : c.entries)
    if (starts_with(e.name, prefix)) out.push_back(&e);
  return out;
}

// One series per configuration (the name without its B segment), x = batch size.
std::vector<Series> by_batch(const std::vector<const Entry*>& entries, const std::string& counter,
                             double scale) {
  std::map<std::string, Series> series;
  for (const Entry* e : entries) {
    if (!e->has(counter) || e->arg("B", -1) <= 0) continue;
    std::string key = e->without("B");
    for (const char* prefix : {"model/train_step/", "model/checkpointing/"})
      if (starts_with(key, prefix)) key = key.substr(std::string(prefix).size());
    if (e->label != e->name) key += " [" + file_stem(e->source) + "]";
    auto& s = series[key];
    s.name = key;
    s.points.emplace_back(e->arg("B"), e->counter(counter) * scale);
  }
  std::vector<Series> out;
  for (auto& [k, s] : series) out.push_back(std::move(s));
  // Sweeps first (most points), at most 10 lines.
  std::stable_sort(out.begin(), out.end(),
                   [](const Series& a, const Series& b) { return a.points.size() > b.points.size(); });
  if (out.size() > 10) out.resize(10);
  return out;
}

std::string short_label(const Entry& e) {
  std::string l = e.label;
  for (const char* prefix : {"model/train_step/", "model/"})
    if (starts_with(l, prefix)) return l.substr(std::string(prefix).size());
  return l;
}

std::string context_table(const Collected& c) {
  std::ostringstream out;
  out << "<table><tr><th>run</th><th>date</th><th>GPU</th><th>device</th><th>LibTorch</th>"
         "<th>bf16 peak (measured)</th><th>bf16 peak (datasheet)</th></tr>\n";
  for (size_t i = 0; i < c.contexts.size(); ++i) {
    const auto& ctx = c.contexts[i];
    auto get = [&](const char* k) {
      auto it = ctx.find(k);
      return it == ctx.end() ? std::string("–") : it->second;
    };
    out << "<tr><td>" << html_escape(c.sources[i]) << "</td><td>" << html_escape(get("date"))
        << "</td><td>" << html_escape(get("gpu_name")) << "</td><td>" << html_escape(get("device"))
        << "</td><td>" << html_escape(get("libtorch")) << "</td><td>"
        << html_escape(get("peak_gemm_bf16_flops")) << "</td><td>"
        << html_escape(get("datasheet_bf16_flops")) << "</td></tr>\n";
  }
  out << "</table>\n";
  return out.str();
}

// The memory family (model/memory/<size>/<setting…>): the largest batch that fits under the
// cap, one bar per size in a group per setting (T, precision, optimizer, checkpointing) — 0 where
// not even a batch of 1 fits (the case was skipped) — and the table of prediction against
// measurement.
std::string memory_section(const Collected& c) {
  const std::string prefix = "model/memory/";
  std::vector<std::string> sizes, settings;
  std::map<std::string, std::map<std::string, double>> batch;  // setting → size → max batch
  auto add = [&](const std::string& name, double b) {
    const auto parts = segments(name.substr(prefix.size()));
    if (parts.size() < 2) return;
    std::string setting;
    for (size_t i = 1; i < parts.size(); ++i) setting += (i > 1 ? "/" : "") + parts[i];
    if (std::find(sizes.begin(), sizes.end(), parts[0]) == sizes.end()) sizes.push_back(parts[0]);
    if (!batch.count(setting)) settings.push_back(setting);
    batch[setting][parts[0]] = b;
  };
  const auto mem = family(c, prefix);
  for (const Entry* e : mem) add(e->name, e->counter("max_batch", 0));
  for (const auto& [name, why] : c.skipped)
    if (starts_with(name, prefix)) add(name, 0);
  if (settings.empty()) return "";
  std::string cap;
  for (const auto& ctx : c.contexts)
    if (auto it = ctx.find("memory_limit_bytes"); it != ctx.end() && cap.empty())
      cap = " under the " + fixed(std::stod(it->second) / (1 << 30), 1) + " GiB cap";
  std::ostringstream out;
  out << "<h2>What fits" << html_escape(cap) << "</h2>\n";
  BarChart chart{"largest batch that fits" + cap + " (0: not even 1)", "batch size (sequences)", sizes,
                 false, false, false, {}};
  for (const auto& setting : settings) {
    Bar b{setting, {}, ""};
    for (const auto& size : sizes) b.values.push_back(batch[setting].count(size) ? batch[setting][size] : 0);
    chart.bars.push_back(std::move(b));
  }
  out << render_bar_chart(chart);
  out << "<table><tr><th>benchmark</th><th>largest batch</th><th>predicted</th><th>peak GiB</th>"
         "<th>predicted GiB</th><th>error %</th><th>step ms</th><th>tokens/s</th></tr>\n";
  for (const Entry* e : mem)
    out << "<tr><td>" << html_escape(e->label) << "</td><td>" << fixed(e->counter("max_batch", std::nan("")), 0)
        << "</td><td>" << fixed(e->counter("predicted_max_batch", std::nan("")), 0) << "</td><td>"
        << fixed(e->counter("peak_mem_bytes", std::nan("")) / (1 << 30), 2) << "</td><td>"
        << fixed(e->counter("predicted_peak_bytes", std::nan("")) / (1 << 30), 2) << "</td><td>"
        << fixed(e->counter("pred_error_pct", std::nan("")), 1) << "</td><td>"
        << fixed(e->counter("step_ms", e->real_ms), 1) << "</td><td>"
        << html_escape(short_number(e->counter("tokens/s", std::nan("")))) << "</td></tr>\n";
  out << "</table>\n";
  return out.str();
}

}  // namespace

std::string render_report(const Collected& c, const ReportOptions& o) {
  const auto train = family(c, "model/train_step/");
  const auto ckpt = family(c, "model/checkpointing/");
  const auto over = family(c, "overheads/");
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>" << html_escape(o.title)
      << "</title><style>" << kStyle << "</style></head><body>\n<h1>" << html_escape(o.title)
      << "</h1>\n" << context_table(c)
      << "<p class='note'>" << c.entries.size() << " benchmarks ran, " << c.skipped.size()
      << " were skipped (listed at the end). Step times are CUDA-event times of whole training "
         "steps (train/step.h); MFU divides model FLOPs (6·N + attention) by the "
         "measured bf16 GEMM peak, and by the GPU's datasheet dense bf16 peak (n/a when the GPU "
         "is not in fixtures/datasheet_peaks.inc). Rows whose mode is inductor… or pytorch "
         "come from the compiler peers (docs/peers.md).</p>\n";

  // 1, 2: against batch size
  std::vector<const Entry*> batchable = train;
  batchable.insert(batchable.end(), ckpt.begin(), ckpt.end());
  out << "<h2>Throughput and memory against batch size</h2>\n";
  LineChart tps{"tokens/s vs batch size", "batch size (sequences)", "tokens/s", true,
                by_batch(train, "tokens/s", 1)};
  shorten(tps);
  out << render_line_chart(tps);
  LineChart mem{"peak memory vs batch size", "batch size (sequences)", "peak memory (GiB)", true,
                by_batch(batchable, "peak_mem_bytes", 1.0 / (1 << 30))};
  shorten(mem);
  out << render_line_chart(mem);

  // 3: warm-up and capture cost against the steady step
  out << "<h2>Warm-up and CUDA-graph capture against the steady step</h2>\n";
  BarChart cost{"CUDA graph: one-off cost vs step time (ms)", "milliseconds",
                {"warm-up + capture overhead", "eager step", "graph step"}, false, false, false, {}};
  for (const Entry* e : train) {
    if (!e->has("capture_ms")) continue;
    const double be = e->counter("break_even_steps", -1);
    cost.bars.push_back({short_label(*e),
                         {e->counter("graph_overhead_ms"), e->counter("eager_step_ms"), e->counter("step_ms")},
                         be < 0 ? "never breaks even" : "break-even: " + fixed(be, 0) + " steps"});
  }
  shorten(cost);
  out << render_bar_chart(cost);
  LineChart warm{"first steps relative to the steady step", "step", "step time / steady step", false, {}};
  for (const Entry* e : train) {
    if (!e->has("step1_ms") || !(e->counter("step_ms") > 0) || warm.series.size() >= 8) continue;
    Series s{short_label(*e), {}};
    for (int i = 1; e->has("step" + std::to_string(i) + "_ms"); ++i)
      s.points.emplace_back(i, e->counter("step" + std::to_string(i) + "_ms") / e->counter("step_ms"));
    warm.series.push_back(std::move(s));
  }
  shorten(warm);
  out << render_line_chart(warm);

  // 4: leaderboard
  const Entry* base = pick_baseline(c, o.baseline);
  out << "<h2>Speed-up leaderboard</h2>\n";
  BarChart lead{"tokens/s relative to the baseline", "change in tokens/s", {"speed-up"}, false, true, true, {}};
  if (base) {
    out << "<p class='note'>Baseline: <code>" << html_escape(base->label) << "</code> at "
        << html_escape(short_number(base->counter("tokens/s"))) << " tokens/s.</p>\n";
    std::vector<Bar> bars;
    for (const auto& e : c.entries)
      if (e.has("tokens/s") && &e != base && (starts_with(e.name, "model/") || starts_with(e.name, "overheads/data_loader")))
        bars.push_back({short_label(e), {100.0 * (e.counter("tokens/s") / base->counter("tokens/s") - 1)}, ""});
    std::sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.values[0] > b.values[0]; });
    if (bars.size() > 40) bars.resize(40);
    lead.bars = std::move(bars);
  }
  shorten(lead);
  out << render_bar_chart(lead);

  // 5: jitter
  out << "<h2>Step-time jitter (relative)</h2>\n";
  BarChart jitter{"step-time variation over the measured steps", "percent of the step",
                  {"CV", "p99 / p50 − 1"}, false, false, true, {}};
  for (const Entry* e : train)
    if (e->has("step_cv"))
      jitter.bars.push_back({short_label(*e),
                             {100 * e->counter("step_cv"), 100 * (e->counter("step_p99_over_p50", 1) - 1)},
                             ""});
  shorten(jitter);
  out << render_bar_chart(jitter);

  // 6: phases
  out << "<h2>Phase breakdown</h2>\n";
  BarChart phases{"time per step by phase (ms)", "milliseconds", {}, true, false, false, {}};
  for (const char* p : kPhases) phases.keys.push_back(p);
  std::vector<const Entry*> phased = train;
  phased.insert(phased.end(), ckpt.begin(), ckpt.end());
  phased.insert(phased.end(), over.begin(), over.end());
  for (const Entry* e : phased) {
    if (!e->has("forward_ms") && !e->has("graph_ms")) continue;
    Bar b{short_label(*e), {}, ""};
    for (const char* p : kPhases) b.values.push_back(e->counter(std::string(p) + "_ms"));
    phases.bars.push_back(std::move(b));
  }
  shorten(phases);
  out << render_bar_chart(phases);

  // Tables
  out << "<h2>Training steps</h2>\n<table><tr><th>benchmark</th><th>step ms</th><th>tokens/s</th>"
         "<th>MFU %</th><th>MFU % (datasheet)</th><th>peak GiB</th><th>CV %</th><th>p99/p50</th><th>step1 / steady</th></tr>\n";
  for (const Entry* e : train)
    out << "<tr><td>" << html_escape(e->label) << "</td><td>" << fixed(e->counter("step_ms", e->real_ms), 2)
        << "</td><td>" << html_escape(short_number(e->counter("tokens/s", std::nan(""))))
        << "</td><td>" << fixed(e->counter("mfu_pct", std::nan("")), 1) << "</td><td>"
        << (e->counter("mfu_datasheet_pct", 0) > 0 ? fixed(e->counter("mfu_datasheet_pct"), 1) : "n/a")
        << "</td><td>"
        << fixed(e->counter("peak_mem_bytes", std::nan("")) / (1 << 30), 2) << "</td><td>"
        << fixed(100 * e->counter("step_cv", std::nan("")), 2) << "</td><td>"
        << fixed(e->counter("step_p99_over_p50", std::nan("")), 3) << "</td><td>"
        << fixed(e->counter("warmup_first_over_steady", std::nan("")), 2) << "</td></tr>\n";
  out << "</table>\n";
  if (!ckpt.empty()) {
    out << "<h2>Activation checkpointing</h2>\n<table><tr><th>benchmark</th><th>step ms</th>"
           "<th>overhead vs none %</th><th>peak GiB</th><th>peak / none</th><th>largest batch</th></tr>\n";
    for (const Entry* e : ckpt)
      out << "<tr><td>" << html_escape(e->label) << "</td><td>" << fixed(e->counter("step_ms", e->real_ms), 2)
          << "</td><td>" << fixed(e->counter("overhead_pct", std::nan("")), 1) << "</td><td>"
          << fixed(e->counter("peak_mem_bytes", std::nan("")) / (1 << 30), 2) << "</td><td>"
          << fixed(e->counter("mem_ratio_vs_none", std::nan("")), 3) << "</td><td>"
          << fixed(e->counter("max_batch", std::nan("")), 0) << "</td></tr>\n";
    out << "</table>\n";
  }
  if (!over.empty()) {
    out << "<h2>Overhead studies</h2>\n<table><tr><th>benchmark</th><th>time</th><th>key counters</th></tr>\n";
    for (const Entry* e : over) {
      std::string keys;
      for (const char* k : {"stall_ms", "stall_pct", "step_ms", "tokens/s", "us_per_kernel", "bytes/s"})
        if (e->has(k)) keys += std::string(k) + "=" + short_number(e->counter(k)) + "  ";
      out << "<tr><td>" << html_escape(e->label) << "</td><td>" << fixed(e->real_ms, 3)
          << " ms</td><td>" << html_escape(keys) << "</td></tr>\n";
    }
    out << "</table>\n";
  }
  out << memory_section(c);
  if (!c.skipped.empty()) {
    out << "<h2>Skipped</h2>\n<table><tr><th>benchmark</th><th>reason</th></tr>\n";
    for (const auto& [name, why] : c.skipped)
      out << "<tr><td>" << html_escape(name) << "</td><td style='text-align:left'>" << html_escape(why)
          << "</td></tr>\n";
    out << "</table>\n";
  }
  out << "</body></html>\n";
  return out.str();
}

}  // namespace gptbench::report
