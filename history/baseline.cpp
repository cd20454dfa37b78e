#include "baseline.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace gptbench::history {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

void append(runjson::Benchmark& pooled, const runjson::Benchmark& from, int64_t process) {
  for (runjson::Repetition rep : from.repetitions) {
    rep.index = static_cast<int64_t>(pooled.repetitions.size());
    rep.process = process;
    pooled.repetitions.push_back(rep);
  }
  for (const runjson::CounterSeries& counter : from.counters) {
    auto it = std::find_if(pooled.counters.begin(), pooled.counters.end(),
                           [&](const runjson::CounterSeries& c) { return c.name == counter.name; });
    if (it == pooled.counters.end()) it = pooled.counters.insert(it, runjson::CounterSeries{counter.name, {}, {}});
    it->values.insert(it->values.end(), counter.values.begin(), counter.values.end());
    it->processes.insert(it->processes.end(), counter.values.size(), process);
  }
}

}  // namespace

RunSelection select_runs(const std::vector<RunInfo>& runs, const std::string& device, const std::string& environment,
                         size_t count, const std::string& exclude_digest) {
  const std::string wanted = lower(device);
  std::vector<const RunInfo*> on_device;
  for (const RunInfo& run : runs) {
    if (lower(run.device).find(wanted) != std::string::npos && run.digest != exclude_digest) on_device.push_back(&run);
  }
  if (!environment.empty() && std::any_of(on_device.begin(), on_device.end(),
                                          [&](const RunInfo* run) { return run->environment == environment; })) {
    std::erase_if(on_device, [&](const RunInfo* run) { return run->environment != environment; });
  }
  RunSelection selection;
  const size_t first = on_device.size() > count ? on_device.size() - count : 0;
  for (size_t i = first; i < on_device.size(); ++i) {
    selection.runs.push_back(*on_device[i]);
    if (std::find(selection.environments.begin(), selection.environments.end(), on_device[i]->environment) ==
        selection.environments.end()) {
      selection.environments.push_back(on_device[i]->environment);
    }
  }
  return selection;
}

runjson::Run pooled_baseline(Database& db, const RunSelection& selection) {
  runjson::Run pooled;
  std::string ids;
  for (size_t position = 0; position < selection.runs.size(); ++position) {
    const RunInfo& info = selection.runs[position];
    ids += (ids.empty() ? "" : ",") + std::to_string(info.id);
    const runjson::Run run = load_stored_run(db, info);
    pooled.context = run.context;  // the newest run's
    for (const runjson::Benchmark& benchmark : run.benchmarks) {
      auto [it, inserted] = pooled.index.try_emplace(benchmark.name, pooled.benchmarks.size());
      if (inserted) {
        runjson::Benchmark& fresh = pooled.benchmarks.emplace_back();
        fresh.name = benchmark.name;
        fresh.label = benchmark.label;
        fresh.status = benchmark.status;
        fresh.message = benchmark.message;
      }
      runjson::Benchmark& target = pooled.benchmarks[it->second];
      if (benchmark.status == runjson::RunStatus::kOk) {
        target.status = runjson::RunStatus::kOk;
        target.message.clear();
        append(target, benchmark, static_cast<int64_t>(position));
      }
      target.declared_repetitions = static_cast<int64_t>(target.repetitions.size());
    }
  }
  pooled.context["gptbench_history_runs"] = ids;
  pooled.source = "history runs " + ids;
  return pooled;
}

nlohmann::json to_benchmark_json(const runjson::Run& run) {
  nlohmann::json rows = nlohmann::json::array();
  for (const runjson::Benchmark& benchmark : run.benchmarks) {
    auto row_for = [&](int64_t index) {
      nlohmann::json row = {{"name", benchmark.name}, {"run_name", benchmark.name}, {"run_type", "iteration"},
                            {"repetitions", std::max<int64_t>(benchmark.declared_repetitions, 1)},
                            {"repetition_index", index}, {"threads", 1}, {"iterations", 1}, {"time_unit", "ns"}};
      if (!benchmark.label.empty()) row["label"] = benchmark.label;
      return row;
    };
    if (benchmark.status != runjson::RunStatus::kOk || benchmark.repetitions.empty()) {
      nlohmann::json row = row_for(0);
      const bool errored = benchmark.status == runjson::RunStatus::kErrored;
      row[errored ? "error_occurred" : "skipped"] = true;
      row[errored ? "error_message" : "skip_message"] = benchmark.message;
      rows.push_back(row);
      continue;
    }
    for (size_t i = 0; i < benchmark.repetitions.size(); ++i) {
      const runjson::Repetition& rep = benchmark.repetitions[i];
      nlohmann::json row = row_for(static_cast<int64_t>(i));
      if (rep.process >= 0) row["process_index"] = rep.process;
      row["real_time"] = rep.real_ns;
      row["cpu_time"] = rep.cpu_ns;
      for (const runjson::CounterSeries& counter : benchmark.counters) {
        if (i < counter.values.size() && std::isfinite(counter.values[i])) row[counter.name] = counter.values[i];
      }
      rows.push_back(std::move(row));
    }
  }
  return nlohmann::json{{"context", run.context}, {"benchmarks", rows}};
}

}  // namespace gptbench::history
