// Machine-readable diff: settings, context, every pair with both sides'
// statistics and samples, the U test, counters, and the summary.
#include <nlohmann/json.hpp>

#include "render.h"

namespace gptbench::compare {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

json side_json(const SideStats& side) {
  return json{{"n", side.n},
              {"median", side.median},
              {"mean", side.mean},
              {"stddev", side.stddev},
              {"cv", side.cv},
              {"min", side.min},
              {"max", side.max},
              {"mad", side.mad},
              {"median_error", side.median_error},
              {"processes", side.processes},
              {"process_medians", side.process_medians},
              {"process_spread", side.process_spread},
              {"aggregates_only", side.aggregates_only},
              {"samples", side.samples}};
}

json metric_json(const MetricComparison& metric) {
  json out{{"base", side_json(metric.base)},
           {"new", side_json(metric.contender)},
           {"direction", to_string(metric.direction)},
           {"ratio", metric.ratio},
           {"change", metric.change},
           {"threshold", metric.threshold},
           {"uncertainty", metric.uncertainty},
           {"cv", metric.cv},
           {"process_spread", metric.process_spread},
           {"verdict", to_string(metric.verdict)},
           {"reason", metric.reason}};
  if (metric.tested) {
    out["u_test"] = json{{"u1", metric.u_test.u1},
                         {"p_value", metric.u_test.p_value},
                         {"method", to_string(metric.u_test.method)},
                         {"ties", metric.u_test.ties}};
  } else {
    out["u_test"] = nullptr;
  }
  return out;
}

json result_json(const PairResult& result) {
  json out{{"name", result.name},
           {"family", result.family},
           {"verdict", to_string(result.verdict)},
           {"base_status", to_string(result.base_status)},
           {"new_status", to_string(result.contender_status)}};
  if (!result.status_message.empty()) out["status_message"] = result.status_message;
  if (result.verdict == Verdict::kBroken || result.verdict == Verdict::kNotCompared) {
    out["time"] = nullptr;
  } else {
    out["time"] = metric_json(result.time);
  }
  json counters = json::array();
  for (const CounterResult& counter : result.counters) {
    json entry = metric_json(counter.comparison);
    entry["name"] = counter.name;
    counters.push_back(std::move(entry));
  }
  out["counters"] = std::move(counters);
  return out;
}

}  // namespace

std::string render_json(const Report& report) {
  json thresholds = json::object();
  for (const auto& [prefix, value] : report.settings.thresholds.prefixes()) thresholds[prefix] = value;
  json context = json::array();
  for (const ContextDifference& diff : report.context) {
    context.push_back(json{{"key", diff.key}, {"base", diff.base}, {"new", diff.contender}, {"environment", diff.environment}});
  }
  json results = json::array();
  for (const PairResult& result : report.results) results.push_back(result_json(result));
  json families = json::array();
  for (const FamilySummary& family : report.summary.families) {
    families.push_back(json{{"family", family.family}, {"geomean", family.geomean}, {"pairs", family.pairs}});
  }
  json verdicts = json::object();
  for (Verdict verdict : {Verdict::kRegression, Verdict::kImprovement, Verdict::kSame, Verdict::kUnreliable,
                          Verdict::kBroken, Verdict::kNotCompared}) {
    const auto it = report.summary.verdicts.find(verdict);
    verdicts[to_string(verdict)] = it == report.summary.verdicts.end() ? 0 : it->second;
  }
  json out{
      {"tool", "gptbench-compare"},
      {"format_version", kFormatVersion},
      {"mode", report.mode},
      {"base", {{"source", report.base_source}, {"label", report.base_label}}},
      {"new", {{"source", report.contender_source}, {"label", report.contender_label}}},
      {"settings",
       {{"alpha", report.settings.alpha},
        {"correction", to_string(report.settings.correction)},
        {"threshold", report.settings.thresholds.default_threshold()},
        {"thresholds_by_prefix", thresholds},
        {"time", report.settings.time == TimeKind::kReal ? "real" : "cpu"},
        {"gate_counters", report.settings.gate_counters},
        {"fail_on_removed", report.settings.fail_on_removed},
        {"strict_context", report.strict_context}}},
      {"context_differences", context},
      {"environment_differs", has_environment_difference(report.context)},
      {"benchmarks", results},
      {"added", report.added},
      {"removed", report.removed},
      {"summary",
       {{"geomean", report.summary.geomean},
        {"geomean_pairs", report.summary.geomean_pairs},
        {"families", families},
        {"verdicts", verdicts},
        {"counter_regressions", report.summary.counter_regressions},
        {"counter_improvements", report.summary.counter_improvements},
        {"tested_pairs", report.summary.tested_pairs},
        {"p_cutoff", report.summary.p_cutoff}}},
      {"exit_code", exit_code(report)},
      {"gate", gate_message(report)},
  };
  return out.dump(2) + "\n";
}

}  // namespace gptbench::compare
