#include "render.h"

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

std::string report_title(const Report& report) {
  if (report.mode == "filters") {
    return report.base_source + ": " + report.base_label + " vs " + report.contender_label;
  }
  return report.base_source + " vs " + report.contender_source;
}

}  // namespace gptbench::compare
