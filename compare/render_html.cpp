// One self-contained HTML page: inline CSS, inline SVG charts (change per
// benchmark with its 95% uncertainty as a whisker and the threshold as a band; geomean
// per family), and the tables. No scripts, fonts or other external resources.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "launch_axis.h"
#include "runjson/format.h"
#include "runjson/svg.h"
#include "render.h"

namespace gptbench::compare {
using runjson::SvgWriter;
using runjson::TimeKind;
using runjson::format_change;
using runjson::format_p_value;
using runjson::format_percent;
using runjson::format_ratio;
using runjson::format_time;
using runjson::html_escape;

namespace {

constexpr size_t kMaxChartRows = 300;  // largest |change| first when there are more
constexpr double kLabelWidth = 430;
constexpr double kPlotWidth = 520;
constexpr double kRowHeight = 18;
constexpr double kAxisHeight = 28;
constexpr double kNiceRanges[] = {0.02, 0.05, 0.1, 0.2, 0.5, 1.0};

const char* verdict_fill(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression:
    case Verdict::kBroken: return "#d62728";
    case Verdict::kImprovement: return "#2ca02c";
    case Verdict::kUnreliable:
    case Verdict::kNotCompared: return "#e6a100";
    default: return "#7f7f7f";
  }
}

// The colour of a row: its verdict's, grey for an informational row (reported, never gating).
const char* row_fill(const PairResult& result) {
  return result.informational ? "#9e9e9e" : verdict_fill(result.verdict);
}

// A horizontal axis of relative change in [-range, range] mapped to pixels.
class ChangeAxis {
 public:
  explicit ChangeAxis(double largest) {
    range_ = kNiceRanges[std::size(kNiceRanges) - 1];
    for (double candidate : kNiceRanges) {
      if (largest <= candidate) {
        range_ = candidate;
        break;
      }
    }
  }
  double x(double change) const {
    const double clipped = std::clamp(change, -range_, range_);
    return kLabelWidth + (clipped + range_) / (2 * range_) * kPlotWidth;
  }
  bool clipped(double change) const { return std::fabs(change) > range_; }

  // Grid lines and tick labels at the bottom of a plot `height` high.
  void draw(SvgWriter& svg, double top, double height) const {
    for (int i = -4; i <= 4; ++i) {
      const double change = range_ * i / 4;
      const double px = x(change);
      svg.element("line", {{"x1", px}, {"y1", top}, {"x2", px}, {"y2", top + height}, {"stroke", i == 0 ? "#333" : "#ddd"}});
      svg.text("text", {{"x", px}, {"y", top + height + 14}, {"class", "tick"}}, format_change(change));
    }
  }

 private:
  double range_;
};

std::string short_label(const std::string& name) {
  constexpr size_t kMax = 62;
  return name.size() <= kMax ? name : "..." + name.substr(name.size() - (kMax - 3));
}

// The <svg> element of a chart `height` high (the axis below it added).
void open_chart(SvgWriter& svg, double height, const char* label) {
  svg.open("svg", {{"width", kLabelWidth + kPlotWidth + 20}, {"height", height + kAxisHeight}, {"role", "img"},
                   {"aria-label", label}});
}

bool has_time(const PairResult& result) {
  return result.verdict != Verdict::kBroken && result.verdict != Verdict::kNotCompared && std::isfinite(result.time.change);
}

std::string change_chart(const Report& report) {
  std::vector<const PairResult*> rows;
  for (const PairResult& result : report.results) {
    if (has_time(result)) rows.push_back(&result);
  }
  const size_t total = rows.size();
  if (rows.size() > kMaxChartRows) {
    std::partial_sort(rows.begin(), rows.begin() + kMaxChartRows, rows.end(), [](const PairResult* a, const PairResult* b) {
      return std::fabs(a->time.change) > std::fabs(b->time.change);
    });
    rows.resize(kMaxChartRows);
  }
  double largest = report.settings.thresholds.default_threshold() * 1.5;
  for (const PairResult* row : rows) {
    const double noise = std::isfinite(row->time.uncertainty) ? row->time.uncertainty : 0;
    largest = std::max({largest, std::fabs(row->time.change) + noise, row->time.threshold * 1.2});
  }
  const ChangeAxis axis(largest);
  const double height = std::max<double>(rows.size(), 1) * kRowHeight;
  std::ostringstream out;
  out << "<h2>Change per benchmark (" << report.contender_label << " vs " << report.base_label << ")</h2>\n";
  out << "<p class='note'>Dot: change of the median time (right is slower). Whisker: approximate 95% interval "
         "of the change, from the spread (MAD) of the repetitions, at least the spread of the processes' medians "
         "where the samples come from several processes. Shaded band: &plusmn; threshold."
      << (total > rows.size() ? " Showing the " + std::to_string(rows.size()) + " largest of " +
                                    std::to_string(total) + " changes."
                              : std::string())
      << "</p>\n";
  SvgWriter svg(out);
  open_chart(svg, height, "change per benchmark");
  for (size_t i = 0; i < rows.size(); ++i) {
    const PairResult& row = *rows[i];
    const double y = i * kRowHeight;
    const double band_lo = axis.x(-row.time.threshold);
    const double band_hi = axis.x(row.time.threshold);
    svg.element("rect", {{"x", band_lo}, {"y", y + 1}, {"width", band_hi - band_lo}, {"height", kRowHeight - 2},
                         {"fill", "#eef2f7"}});
  }
  axis.draw(svg, 0, height);
  for (size_t i = 0; i < rows.size(); ++i) {
    const PairResult& row = *rows[i];
    const double mid = i * kRowHeight + kRowHeight / 2;
    const double noise = std::isfinite(row.time.uncertainty) ? row.time.uncertainty : 0;
    const char* fill = row_fill(row);
    svg.open("g", {});
    svg.text("title", {},
             row.name + ": " + format_change(row.time.change) + " +/- " + format_percent(row.time.uncertainty) + ", " +
                 verdict_label(row));
    svg.text("text", {{"x", kLabelWidth - 6}, {"y", mid + 4}, {"class", "label"}}, short_label(row.name));
    svg.element("line", {{"x1", axis.x(row.time.change - noise)}, {"y1", mid}, {"x2", axis.x(row.time.change + noise)},
                         {"y2", mid}, {"stroke", fill}, {"stroke-width", "2"}});
    svg.element("circle", {{"cx", axis.x(row.time.change)}, {"cy", mid}, {"r", "4"}, {"fill", fill},
                           {axis.clipped(row.time.change) ? "stroke" : nullptr, "#000"}});
    svg.close("g");
  }
  svg.close("svg");
  out << "\n";
  return out.str();
}

std::string family_chart(const Report& report) {
  struct Bar {
    std::string label;
    double change;
    size_t pairs;
  };
  std::vector<Bar> bars;
  for (const FamilySummary& family : report.summary.families) bars.push_back({family.family, family.geomean - 1, family.pairs});
  bars.push_back({"all", report.summary.geomean - 1, report.summary.geomean_pairs});
  double largest = report.settings.thresholds.default_threshold() * 1.5;
  for (const Bar& bar : bars) {
    if (std::isfinite(bar.change)) largest = std::max(largest, std::fabs(bar.change));
  }
  const ChangeAxis axis(largest);
  const double row = 24;
  const double height = bars.size() * row;
  std::ostringstream out;
  out << "<h2>Geometric mean of time ratios per family</h2>\n";
  SvgWriter svg(out);
  open_chart(svg, height, "geomean per family");
  axis.draw(svg, 0, height);
  const double threshold = report.settings.thresholds.default_threshold();
  for (double t : {-threshold, threshold}) {
    svg.element("line", {{"x1", axis.x(t)}, {"y1", "0"}, {"x2", axis.x(t)}, {"y2", height}, {"stroke", "#999"},
                         {"stroke-dasharray", "4 3"}});
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& bar = bars[i];
    const double y = i * row;
    svg.text("text", {{"x", kLabelWidth - 6}, {"y", y + row / 2 + 4}, {"class", "label"}},
             bar.label + " (" + std::to_string(bar.pairs) + ")");
    if (!std::isfinite(bar.change)) continue;
    const double x0 = axis.x(0);
    const double x1 = axis.x(bar.change);
    const char* fill = bar.change > threshold ? "#d62728" : bar.change < -threshold ? "#2ca02c" : "#7f9fbf";
    svg.titled("rect", {{"x", std::min(x0, x1)}, {"y", y + 4}, {"width", std::max(std::fabs(x1 - x0), 1.0)},
                        {"height", row - 8}, {"fill", fill}},
               bar.label + ": " + format_change(bar.change));
    svg.text("text", {{"x", x1 + (bar.change >= 0 ? 4 : -4)}, {"y", y + row / 2 + 4},
                      {"class", bar.change >= 0 ? "value" : "value-left"}},
             format_change(bar.change));
  }
  svg.close("svg");
  out << "\n";
  return out.str();
}

std::string results_table(const Report& report, const std::vector<const PairResult*>& rows) {
  const bool processes = shows_processes(report);
  std::ostringstream out;
  out << "<table><tr><th>Benchmark</th><th>" << html_escape(report.base_label) << "</th><th>"
      << html_escape(report.contender_label)
      << "</th><th>Change</th><th>&plusmn;95%</th><th>p-value</th><th>MDE</th><th>CV</th>"
      << (processes ? "<th>Processes</th>" : "") << "<th>Verdict</th><th>Why</th></tr>\n";
  for (const PairResult* result : rows) {
    out << "<tr><td class='name'>" << html_escape(result->name) << "</td>";
    if (result->verdict != Verdict::kBroken && result->verdict != Verdict::kNotCompared) {
      const MetricComparison& time = result->time;
      out << "<td>" << html_escape(format_time(time.base.median)) << "</td><td>"
          << html_escape(format_time(time.contender.median)) << "</td><td>" << html_escape(format_change(time.change))
          << "</td><td>" << html_escape(format_percent(time.uncertainty)) << "</td><td>"
          << (time.tested ? format_p_value(time.u_test.p_value) : "-") << "</td><td>" << mde_cell(time)
          << "</td><td>" << html_escape(format_percent(time.cv)) << "</td>";
      if (processes) out << "<td>" << html_escape(process_cell(time)) << "</td>";
    } else {
      out << "<td>" << to_string(result->base_status) << "</td><td>" << to_string(result->contender_status)
          << "</td><td></td><td></td><td></td><td></td><td></td>" << (processes ? "<td></td>" : "");
    }
    out << "<td class='verdict' style='color:" << row_fill(*result) << "'>" << verdict_label(*result)
        << "</td><td class='why'>" << html_escape(verdict_reason(*result)) << "</td></tr>\n";
  }
  out << "</table>\n";
  return out.str();
}

std::string name_list(const std::string& title, const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::ostringstream out;
  out << "<h2>" << html_escape(title) << " (" << names.size() << ")</h2><ul>";
  for (const std::string& name : names) out << "<li class='name'>" << html_escape(name) << "</li>";
  out << "</ul>\n";
  return out.str();
}

constexpr const char* kStyle = R"(
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.gate{padding:10px 14px;border-radius:6px;font-weight:bold;color:#fff}
.pass{background:#2ca02c}.fail{background:#d62728}
.warn{background:#fff3cd;border:1px solid #e6a100;padding:8px 14px;border-radius:6px;margin-top:12px}
table{border-collapse:collapse;font-size:13px;margin-top:8px}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
td.why{white-space:normal}
td.name,td.why,th{text-align:left}td.name{font-family:monospace}
td.verdict{font-weight:bold;text-align:left}
.note{color:#555;font-size:13px}
svg text{font-size:11px;font-family:monospace}
svg text.label{text-anchor:end}svg text.tick{text-anchor:middle;fill:#555}
svg text.value{text-anchor:start}svg text.value-left{text-anchor:end}
li.name{font-family:monospace;font-size:13px}
)";

}  // namespace

std::string render_html(const Report& report) {
  std::ostringstream out;
  const int code = exit_code(report);
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>gptbench-compare: "
      << html_escape(report_title(report)) << "</title><style>" << kStyle << "</style></head><body>\n";
  out << "<h1>gptbench-compare: " << html_escape(report_title(report)) << "</h1>\n";
  out << "<div class='gate " << (code == 0 ? "pass" : "fail") << "'>" << html_escape(gate_message(report)) << "</div>\n";
  for (const ContextDifference& diff : report.context) {
    if (!diff.environment) continue;
    out << "<div class='warn'><b>Environment differs</b>: " << html_escape(diff.key) << ": '" << html_escape(diff.base)
        << "' vs '" << html_escape(diff.contender) << "'</div>\n";
  }
  out << "<p class='note'>" << html_escape(report.mode) << " mode, "
      << (report.settings.time == TimeKind::kReal ? "real" : "cpu") << " time, "
      << html_escape(significance_text(report))
      << ", threshold " << html_escape(format_percent(report.settings.thresholds.default_threshold())) << ". Geomean "
      << html_escape(report.contender_label) << "/" << html_escape(report.base_label) << ": "
      << format_ratio(report.summary.geomean) << " (" << html_escape(format_change(report.summary.geomean - 1))
      << ") over " << report.summary.geomean_pairs << " pair(s).</p>\n";
  out << family_chart(report);
  out << change_chart(report);
  out << "<p class='note'>MDE: the smallest slowdown each benchmark could have been called a regression for, "
         "beyond its threshold, significant at the corrected level with its sample counts at its noise "
         "(none: too few samples or too much noise for any)."
      << (report.summary.informational_verdicts.empty()
              ? std::string()
              : std::string(" Rows marked informational (grey) are ") + kEagerLaunch + " rows whose " + kGraphLaunch +
                    " row was compared too: reported, never gating.")
      << "</p>\n";
  const std::vector<const PairResult*> notable = notable_results(report);
  if (!notable.empty()) {
    out << "<h2>Changes</h2>\n" << results_table(report, notable);
  }
  std::vector<const PairResult*> all;
  for (const PairResult& result : report.results) all.push_back(&result);
  out << "<h2>All benchmarks (" << all.size() << ")</h2>\n" << results_table(report, all);
  out << name_list("Only in " + report.base_label, report.removed);
  out << name_list("Only in " + report.contender_label, report.added);
  out << "</body></html>\n";
  return out.str();
}

}  // namespace gptbench::compare
