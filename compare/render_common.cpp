#include "render.h"

#include <cstdio>

namespace gptbench::compare {

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

std::string report_title(const Report& report) {
  if (report.mode == "filters") {
    return report.base_source + ": " + report.base_label + " vs " + report.contender_label;
  }
  return report.base_source + " vs " + report.contender_source;
}

}  // namespace gptbench::compare
