// Machine-readable diff: settings, context, every pair with both sides'
// statistics and samples, the U test, counters, and the summary.
#include <iterator>
#include <string_view>

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

// The report is written as it goes rather than built as one document: a DOM of
// 10,000 pairs with their samples took longer to build, copy and free than to
// print. Each pair is still a small json value, dumped into the array at its
// indentation, so the layout and number formatting are nlohmann's dump(2) as
// before (keys in sorted order, as json's std::map keeps them; NaN as null).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  // Writes `"key": value` (value at depth 1), keys in sorted order.
  void member(std::string_view key, const json& value) {
    write_key(key);
    append(value, "\n  ");
  }

  // Writes `"key": [items...]`, each item a json value made by `make` at depth 2.
  template <typename Range, typename Make>
  void array_member(std::string_view key, const Range& items, Make make) {
    write_key(key);
    if (std::empty(items)) {
      out_ += "[]";
      return;
    }
    const char* separator = "[\n    ";
    for (const auto& item : items) {
      out_ += separator;
      separator = ",\n    ";
      append(make(item), "\n    ");
    }
    out_ += "\n  ]";
  }

  void finish() { out_ += "\n}\n"; }

 private:
  void write_key(std::string_view key) {
    out_ += first_ ? "{\n  " : ",\n  ";
    first_ = false;
    out_ += json(key).dump();
    out_ += ": ";
  }

  // value.dump(2) with `newline` (a newline and the depth's indentation) for
  // every line break; the dump escapes newlines inside strings.
  void append(const json& value, std::string_view newline) {
    const std::string text = value.dump(2);
    size_t begin = 0;
    for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
      out_.append(text, begin, end - begin);
      out_ += newline;
    }
    out_.append(text, begin);
  }

  std::string& out_;
  bool first_ = true;
};

}  // namespace

std::string render_json(const Report& report) {
  json thresholds = json::object();
  for (const auto& [prefix, value] : report.settings.thresholds.prefixes()) thresholds[prefix] = value;
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

  std::string out;
  Writer writer(out);
  writer.member("added", report.added);
  writer.member("base", {{"source", report.base_source}, {"label", report.base_label}});
  writer.array_member("benchmarks", report.results, result_json);
  writer.array_member("context_differences", report.context, [](const ContextDifference& diff) {
    return json{{"key", diff.key}, {"base", diff.base}, {"new", diff.contender}, {"environment", diff.environment}};
  });
  writer.member("environment_differs", has_environment_difference(report.context));
  writer.member("exit_code", exit_code(report));
  writer.member("format_version", kFormatVersion);
  writer.member("gate", gate_message(report));
  writer.member("mode", report.mode);
  writer.member("new", {{"source", report.contender_source}, {"label", report.contender_label}});
  writer.member("removed", report.removed);
  writer.member("settings", {{"alpha", report.settings.alpha},
                             {"correction", to_string(report.settings.correction)},
                             {"threshold", report.settings.thresholds.default_threshold()},
                             {"thresholds_by_prefix", thresholds},
                             {"time", report.settings.time == TimeKind::kReal ? "real" : "cpu"},
                             {"gate_counters", report.settings.gate_counters},
                             {"fail_on_removed", report.settings.fail_on_removed},
                             {"strict_context", report.strict_context}});
  writer.member("summary", {{"geomean", report.summary.geomean},
                            {"geomean_pairs", report.summary.geomean_pairs},
                            {"families", families},
                            {"verdicts", verdicts},
                            {"counter_regressions", report.summary.counter_regressions},
                            {"counter_improvements", report.summary.counter_improvements},
                            {"tested_pairs", report.summary.tested_pairs},
                            {"p_cutoff", report.summary.p_cutoff}});
  writer.member("tool", "gptbench-compare");
  writer.finish();
  return out;
}

}  // namespace gptbench::compare
