#include "premerge_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "atomic_file.h"
#include "compare/report.h"
#include "merge.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;

// Fields of a Google Benchmark row: a counter of that name would clash with them.
const std::set<std::string>& row_fields() {
  static const std::set<std::string> fields = {
      "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
      "repetition_index", "process_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
      "error_occurred", "error_message", "skipped", "skip_message", "aggregate_name", "aggregate_unit",
      "label"};
  return fields;
}

std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

json sample_row(const BenchmarkRecord& b, const SideRecord& s, size_t i) {
  json row{{"name", b.name},
           {"family_index", b.family_index},
           {"per_family_instance_index", b.per_family_instance_index},
           {"run_name", b.name},
           {"run_type", "iteration"},
           {"repetitions", s.real_ns.size()},
           {"repetition_index", i},
           {"threads", 1},
           {"iterations", s.calls[i]},
           {"real_time", s.real_ns[i]},
           {"cpu_time", s.real_ns[i]},
           {"time_unit", "ns"}};
  // The epoch, i.e. the side's worker process, that took the sample (gptbench-compare's
  // process spread).
  if (i < s.process_index.size()) row["process_index"] = s.process_index[i];
  if (i < s.labels.size() && !s.labels[i].empty()) row["label"] = s.labels[i];
  if (i < s.counters.size() && s.counters[i].is_object())
    for (const auto& [key, value] : s.counters[i].items())
      if (value.is_number() && !row_fields().count(key)) row[key] = value;
  return row;
}

json side_context(const PremergeRecord& record, Side side) {
  const WorkerRecord& worker = record.worker(side);
  json context = worker.context.is_object() ? worker.context : json::object();
  const PremergeSettings& s = record.settings;
  context["premerge"] = "resident workers";
  context["premerge_side"] = side_name(side);
  context["date"] = record.date;
  context["host_name"] = record.host_name;
  if (!worker.argv.empty()) context["executable"] = worker.argv.front();
  context["premerge_seed"] = std::to_string(s.seed);
  // One value for both files of this check: gptbench-compare pairs their epochs by it.
  context[compare::kPremergeCheckKey] = record.date + " seed " + std::to_string(s.seed) + " on " + record.host_name;
  context["premerge_sample_time"] = number_text(s.sample_time_s);
  context["premerge_processes"] = std::to_string(s.processes);
  context["premerge_cpu_time"] = "same as real_time (a worker reports one time per sample)";
  if (!s.cpus.empty()) context["premerge_cpus"] = s.cpus;
  return context;
}

// NaN and infinities as null.
json number_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

json per_side(const BenchmarkRecord& b, const std::function<json(const SideRecord&)>& value) {
  json out = json::object();
  for (Side side : kSides)
    if (b.side(side).listed) out[side_name(side)] = value(b.side(side));
  return out;
}

// Samples of a side per epoch (process), one count per epoch of the check.
json samples_per_process(const SideRecord& s, size_t processes) {
  std::vector<size_t> counts(processes, 0);
  for (int64_t e : s.process_index)
    if (e >= 0) {
      if (static_cast<size_t>(e) >= counts.size()) counts.resize(static_cast<size_t>(e) + 1, 0);
      ++counts[static_cast<size_t>(e)];
    }
  return json(counts);
}

json benchmark_entry(const BenchmarkRecord& b, size_t processes) {
  json entry{{"name", b.name},
             {"sides", b.on_both_sides() ? "both" : b.side(Side::kBase).listed ? "base" : "new"},
             {"stop", to_string(b.stop)},
             {"samples", per_side(b, [](const SideRecord& s) { return json(s.real_ns.size()); })},
             {"samples_per_process", per_side(b, [&](const SideRecord& s) { return samples_per_process(s, processes); })},
             {"lost", per_side(b, [](const SideRecord& s) { return json(s.lost); })},
             {"worker_restarts", per_side(b, [](const SideRecord& s) { return json(s.worker_losses); })},
             {"prepare_s", per_side(b, [](const SideRecord& s) { return json(s.prepare_s); })},
             {"prepared", per_side(b, [](const SideRecord& s) { return s.prepared.is_null() ? json::object() : s.prepared; })},
             {"errors", per_side(b, [](const SideRecord& s) { return s.error.empty() ? json(nullptr) : json(s.error); })},
             {"threshold", b.threshold},
             {"alpha", b.alpha},
             {"wall_s", b.wall_s},
             {"sampling_s", b.sampling_s}};
  if (b.comparison) {
    const compare::MetricComparison& c = *b.comparison;
    entry["ratio"] = number_or_null(c.ratio);
    entry["ratio_interval"] = json::array({number_or_null(c.ratio - c.uncertainty), number_or_null(c.ratio + c.uncertainty)});
    entry["change"] = number_or_null(c.change);
    entry["uncertainty"] = number_or_null(c.uncertainty);
    entry["p_value"] = c.tested ? number_or_null(c.u_test.p_value) : json(nullptr);
    entry["median_ns"] = {{"base", number_or_null(c.base.median)}, {"new", number_or_null(c.contender.median)}};
    entry["cv"] = {{"base", number_or_null(c.base.cv)}, {"new", number_or_null(c.contender.cv)}};
    entry["process_spread"] = {{"base", number_or_null(c.base.process_spread)},
                               {"new", number_or_null(c.contender.process_spread)}};
    // At the stopping rule's level, alpha / m, which the gate's Holm level never undercuts: at
    // least the MDE of the report.
    const compare::MinimumDetectableEffect mde = compare::minimum_detectable_effect(c, b.alpha);
    entry["mde"] = number_or_null(mde.value);
    entry["mde_limited_by"] = compare::to_string(mde.limited_by);
  } else {
    for (const char* key :
         {"ratio", "ratio_interval", "change", "uncertainty", "p_value", "process_spread", "mde", "mde_limited_by"})
      entry[key] = nullptr;
  }
  return entry;
}

json numbers_or_nulls(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(number_or_null(v));
  return out;
}

json worker_entry(const WorkerRecord& w) {
  // Starts beyond the one at the beginning of each epoch: restarts after a lost worker.
  const size_t planned = std::max<size_t>(w.epoch_starts, w.starts > 0 ? 1 : 0);
  return json{{"argv", w.argv},
              {"startup_s", number_or_null(w.startup_s)},
              {"start_wall_s", number_or_null(w.start_wall_s)},
              {"epoch_startup_s", numbers_or_nulls(w.epoch_startup_s)},
              {"epoch_start_wall_s", numbers_or_nulls(w.epoch_start_wall_s)},
              {"starts", w.starts},
              {"restarts", w.starts > planned ? w.starts - planned : 0},
              {"start_failures", w.start_failures},
              {"context", w.context}};
}

}  // namespace

json side_document(const PremergeRecord& record, Side side) {
  json rows = json::array();
  for (const BenchmarkRecord& b : record.benchmarks) {
    const SideRecord& s = b.side(side);
    if (!s.listed) continue;
    if (s.finished())
      rows.push_back(errored_row(b.name, s.error, b.family_index, b.per_family_instance_index));
    else if (s.real_ns.empty())
      rows.push_back(errored_row(b.name, "no sample was taken", b.family_index, b.per_family_instance_index));
    else
      for (size_t i = 0; i < s.real_ns.size(); ++i) rows.push_back(sample_row(b, s, i));
  }
  return json{{"context", side_context(record, side)}, {"benchmarks", std::move(rows)}};
}

json premerge_document(const PremergeRecord& record) {
  const PremergeSettings& s = record.settings;
  json prefixes = json::object();
  for (const auto& [prefix, threshold] : s.threshold_prefixes) prefixes[prefix] = threshold;
  json benchmarks = json::array();
  std::map<std::string, size_t> stops;
  json samples = json::object(), lost = json::object(), restarts = json::object();
  for (Side side : kSides) samples[side_name(side)] = lost[side_name(side)] = restarts[side_name(side)] = 0;
  for (const BenchmarkRecord& b : record.benchmarks) {
    benchmarks.push_back(benchmark_entry(b, s.processes));
    ++stops[to_string(b.stop)];
    for (Side side : kSides) {
      const SideRecord& r = b.side(side);
      samples[side_name(side)] = samples[side_name(side)].get<size_t>() + r.real_ns.size();
      lost[side_name(side)] = lost[side_name(side)].get<size_t>() + r.lost;
      restarts[side_name(side)] = restarts[side_name(side)].get<size_t>() + r.worker_losses;
    }
  }
  return json{
      {"tool", "gptbench-premerge"},
      {"format_version", 1},
      {"date", record.date},
      {"host_name", record.host_name},
      {"settings",
       {{"filter", s.filter},
        {"alpha", s.alpha},
        {"alpha_per_benchmark", record.compared > 0 ? s.alpha / static_cast<double>(record.compared) : s.alpha},
        {"threshold", s.default_threshold},
        {"thresholds_by_prefix", prefixes},
        {"processes", s.processes},
        {"max_processes", s.max_processes},
        {"extra_seconds", s.extra_seconds},
        {"min_samples", s.min_samples},
        {"max_samples", s.max_samples},
        {"samples_per_process", s.samples_per_process},
        {"sample_time_s", s.sample_time_s},
        {"max_seconds", s.max_seconds},
        {"timeout_s", s.timeout_s},
        {"seed", s.seed},
        {"cpus", s.cpus}}},
      {"workers", {{"base", worker_entry(record.worker(Side::kBase))}, {"new", worker_entry(record.worker(Side::kNew))}}},
      {"benchmarks", std::move(benchmarks)},
      {"added", record.added},
      {"removed", record.removed},
      {"totals",
       {{"benchmarks", record.benchmarks.size()},
        {"compared", record.compared},
        {"wall_s", record.wall_s},
        {"extra_epochs", record.extra_epochs},
        {"extra_s", record.extra_s},
        {"samples", samples},
        {"lost", lost},
        {"worker_restarts", restarts},
        {"stop", stops}}},
  };
}

std::string side_output_path(const std::string& out_dir, Side side) {
  return out_dir + "/" + side_name(side) + ".json";
}

std::string premerge_output_path(const std::string& out_dir) { return out_dir + "/premerge.json"; }

void write_premerge_outputs(const PremergeRecord& record, const std::string& out_dir) {
  for (Side side : kSides) {
    const std::string path = side_output_path(out_dir, side);
    // Replace invalid UTF-8 (an error message quotes the worker's stderr) rather than throw.
    const std::string text = side_document(record, side).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    if (const std::string problem = validate_gb_json(text, path); !problem.empty())
      throw std::runtime_error("internal error: " + path + " would not load: " + problem);
    write_file_atomic(path, text);
  }
  write_file_atomic(premerge_output_path(out_dir),
                    premerge_document(record).dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace gptbench::runner
