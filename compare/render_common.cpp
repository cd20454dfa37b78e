#include "render.h"

#include <cmath>
#include <cstdio>

#include "launch_axis.h"
#include "runjson/format.h"

namespace gptbench::compare {
using runjson::format_percent;

std::vector<const PairResult*> notable_results(const Report& report) {
  std::vector<const PairResult*> out;
  for (bool informational : {false, true}) {
    for (Verdict verdict : {Verdict::kRegression, Verdict::kBroken, Verdict::kImprovement}) {
      for (const PairResult& result : report.results) {
        if (result.verdict == verdict && result.informational == informational) out.push_back(&result);
      }
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
  std::string out = buf;
  if (settings.correction != Correction::kNone && report.summary.informational_tested_pairs > 0) {
    std::snprintf(buf, sizeof buf, "; informational rows apart (%zu pairs, p < %.3g needed)",
                  report.summary.informational_tested_pairs, report.summary.informational_p_cutoff);
    out += buf;
  }
  return out;
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

std::string mde_cell(const MetricComparison& metric) {
  if (std::isnan(metric.mde.value)) return "-";
  return std::isinf(metric.mde.value) ? "none" : format_percent(metric.mde.value);
}

std::string verdict_label(const PairResult& result) {
  return std::string(to_string(result.verdict)) + (result.informational ? " (informational)" : "");
}

std::string verdict_reason(const PairResult& result) {
  std::string why = result.status_message.empty() ? result.time.reason : result.status_message;
  if (result.informational) {
    why = std::string("informational, not gated: a ") + kEagerLaunch + " row whose " + kGraphLaunch +
          " row was compared too; " + why;
  }
  for (const std::string* note : {&result.clock_note, &result.kernel_note})
    if (!note->empty()) why += (why.empty() ? "" : "; ") + *note;
  return why;
}

std::string report_title(const Report& report) {
  if (report.mode == "filters") {
    return report.base_source + ": " + report.base_label + " vs " + report.contender_label;
  }
  return report.base_source + " vs " + report.contender_source;
}

}  // namespace gptbench::compare
