// Machine-readable diff: settings, context, every pair with both sides'
// statistics and samples, the U test, counters, and the summary.
#include <nlohmann/json.hpp>

#include <cmath>

#include "runjson/json_writer.h"
#include "render.h"

namespace gptbench::compare {
using runjson::JsonWriter;
using runjson::TimeKind;

namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;

// Keys in sorted order within each object (see JsonWriter).
void write_side(JsonWriter& w, const SideStats& side) {
  w.begin_object();
  w.member("aggregates_only", side.aggregates_only);
  w.member("cv", side.cv);
  w.member("mad", side.mad);
  w.member("max", side.max);
  w.member("mean", side.mean);
  w.member("median", side.median);
  w.member("median_error", side.median_error);
  w.member("min", side.min);
  w.member("n", side.n);
  w.member("process_log_sd", side.process_log_sd);
  w.member("process_medians", side.process_medians);
  w.member("process_spread", side.process_spread);
  w.member("processes", side.processes);
  w.member("samples", side.samples);
  w.member("stddev", side.stddev);
  w.member("within_process_cv", side.within_process_cv);
  w.end_object();
}

// A metric's members; `name` (a counter's) sits between "direction" and "new".
void write_metric(JsonWriter& w, const MetricComparison& metric, const std::string* name = nullptr) {
  w.begin_object();
  w.key("base");
  write_side(w, metric.base);
  w.member("change", metric.change);
  w.member("cv", metric.cv);
  w.member("direction", to_string(metric.direction));
  w.member("mde", metric.mde.value);
  w.member("mde_limited_by", to_string(metric.mde.limited_by));
  w.member("mde_test", metric.mde.test);
  if (name) w.member("name", *name);
  w.key("new");
  write_side(w, metric.contender);
  if (!std::isnan(metric.process_change)) w.member("process_change", metric.process_change);
  w.member("process_interval", metric.process_interval);
  w.member("process_spread", metric.process_spread);
  w.member("processes_paired", metric.processes_paired);
  w.member("ratio", metric.ratio);
  w.member("reason", metric.reason);
  w.member("threshold", metric.threshold);
  w.key("u_test");
  if (metric.tested) {
    w.begin_object();
    w.member("method", to_string(metric.u_test.method));
    w.member("p_value", metric.u_test.p_value);
    w.member("ties", metric.u_test.ties);
    w.member("u1", metric.u_test.u1);
    w.end_object();
  } else {
    w.null();
  }
  w.member("uncertainty", metric.uncertainty);
  w.member("verdict", to_string(metric.verdict));
  w.end_object();
}

void write_result(JsonWriter& w, const PairResult& result) {
  w.begin_object();
  w.member("base_status", to_string(result.base_status));
  if (!result.clock_note.empty()) w.member("clock_note", result.clock_note);
  w.key("counters");
  w.begin_array();
  for (const CounterResult& counter : result.counters) write_metric(w, counter.comparison, &counter.name);
  w.end_array();
  w.member("family", result.family);
  w.member("informational", result.informational);
  if (!result.kernel_note.empty()) w.member("kernel_note", result.kernel_note);
  w.member("name", result.name);
  w.member("new_status", to_string(result.contender_status));
  if (!result.status_message.empty()) w.member("status_message", result.status_message);
  w.key("time");
  if (result.verdict == Verdict::kBroken || result.verdict == Verdict::kNotCompared) {
    w.null();
  } else {
    write_metric(w, result.time);
  }
  w.member("verdict", to_string(result.verdict));
  w.end_object();
}

// Counts of the time verdicts, every one named (0 when absent).
json verdict_counts(const std::map<Verdict, size_t>& counts) {
  json out = json::object();
  for (Verdict verdict : {Verdict::kRegression, Verdict::kImprovement, Verdict::kSame, Verdict::kUnreliable,
                          Verdict::kBroken, Verdict::kNotCompared}) {
    const auto it = counts.find(verdict);
    out[to_string(verdict)] = it == counts.end() ? 0 : it->second;
  }
  return out;
}

}  // namespace

std::string render_json(const Report& report) {
  json thresholds = json::object();
  for (const auto& [prefix, value] : report.settings.thresholds.prefixes()) thresholds[prefix] = value;
  json families = json::array();
  for (const FamilySummary& family : report.summary.families) {
    families.push_back(json{{"family", family.family}, {"geomean", family.geomean}, {"pairs", family.pairs}});
  }
  const json verdicts = verdict_counts(report.summary.verdicts);

  std::string out;
  JsonWriter writer(out);
  writer.begin_object();
  writer.member("added", report.added);
  writer.member("base", json{{"source", report.base_source}, {"label", report.base_label}});
  writer.key("benchmarks");
  writer.begin_array();
  for (const PairResult& result : report.results) write_result(writer, result);
  writer.end_array();
  writer.key("context_differences");
  writer.begin_array();
  for (const ContextDifference& diff : report.context) {
    writer.value(json{{"key", diff.key}, {"base", diff.base}, {"new", diff.contender}, {"environment", diff.environment}});
  }
  writer.end_array();
  writer.member("environment_differs", has_environment_difference(report.context));
  writer.member("exit_code", exit_code(report));
  writer.member("format_version", kFormatVersion);
  writer.member("gate", gate_message(report));
  writer.member("mode", report.mode);
  writer.member("new", json{{"source", report.contender_source}, {"label", report.contender_label}});
  writer.member("removed", report.removed);
  writer.member("settings", json{{"alpha", report.settings.alpha},
                                            {"correction", to_string(report.settings.correction)},
                                            {"threshold", report.settings.thresholds.default_threshold()},
                                            {"thresholds_by_prefix", thresholds},
                                            {"time", report.settings.time == TimeKind::kReal ? "real" : "cpu"},
                                            {"gate_counters", report.settings.gate_counters},
                                            {"fail_on_removed", report.settings.fail_on_removed},
                                            {"strict_context", report.strict_context}});
  writer.member("summary", json{{"geomean", report.summary.geomean},
                                           {"geomean_pairs", report.summary.geomean_pairs},
                                           {"families", families},
                                           {"verdicts", verdicts},
                                           {"counter_regressions", report.summary.counter_regressions},
                                           {"counter_improvements", report.summary.counter_improvements},
                                           {"tested_pairs", report.summary.tested_pairs},
                                           {"p_cutoff", report.summary.p_cutoff},
                                           {"counter_p_cutoff", report.summary.counter_p_cutoff},
                                           {"informational",
                                            {{"verdicts", verdict_counts(report.summary.informational_verdicts)},
                                             {"tested_pairs", report.summary.informational_tested_pairs},
                                             {"p_cutoff", report.summary.informational_p_cutoff}}}});
  writer.member("tool", "gptbench-compare");
  writer.end_object();
  out += '\n';
  return out;
}

}  // namespace gptbench::compare
