#include "render.h"

#include <cstdio>

#include "runjson/format.h"

namespace gptbench::compare {
using runjson::format_percent;

std::vector<const PairResult*> notable_results(const Report& report) {
  std::vector<const PairResult*> out;
  for (Verdict verdict : {Verdict::kRegression, Verdict::kBroken, Verdict::kImprovement}) {
    for (const PairResult& result : report.results) {
      if (result.verdict == verdict) out.push_back(&result);
    }
  }
  return out;
}

std::string significance_text(const Report& report) {
  const Settings& settings = report.settings;
  char buf[160];
  if (settings.correction == Correction::kNone) {
    std::snprintf(buf, sizeof buf, "alpha %g, correction none", settings.alpha);
  } else {
    std::snprintf(buf, sizeof buf, "alpha %g, correction %s (%zu pairs, p < %.3g needed)", settings.alpha,
                  to_string(settings.correction), report.summary.tested_pairs, report.summary.p_cutoff);
  }
  return buf;
}

bool shows_processes(const Report& report) {
  for (const PairResult& result : report.results) {
    if (result.verdict == Verdict::kBroken || result.verdict == Verdict::kNotCompared) continue;
    if (result.time.base.processes >= 2 || result.time.contender.processes >= 2) return true;
  }
  return false;
}

std::string process_cell(const MetricComparison& metric) {
  if (metric.base.processes < 2 && metric.contender.processes < 2) return "-";
  const auto count = [](const SideStats& side) { return side.processes == 0 ? std::string("-") : std::to_string(side.processes); };
  return format_percent(metric.process_spread) + " (" + count(metric.base) + "/" + count(metric.contender) + ")";
}

std::string verdict_reason(const PairResult& result) {
  std::string why = result.status_message.empty() ? result.time.reason : result.status_message;
  if (!result.clock_note.empty()) why += (why.empty() ? "" : "; ") + result.clock_note;
  return why;
}

std::string report_title(const Report& report) {
  if (report.mode == "filters") {
    return report.base_source + ": " + report.base_label + " vs " + report.contender_label;
  }
  return report.base_source + " vs " + report.contender_source;
}

}  // namespace gptbench::compare
