#include "run.h"

namespace gptbench::compare {

const char* to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kSkipped: return "skipped";
    case RunStatus::kErrored: return "errored";
  }
  return "?";
}

std::vector<double> Benchmark::samples(TimeKind kind) const {
  std::vector<double> out;
  out.reserve(repetitions.size());
  for (const Repetition& rep : repetitions) {
    out.push_back(kind == TimeKind::kReal ? rep.real_ns : rep.cpu_ns);
  }
  return out;
}

const Aggregate* Benchmark::aggregate(const std::string& aggregate_name) const {
  for (const Aggregate& agg : aggregates) {
    if (agg.name == aggregate_name) return &agg;
  }
  return nullptr;
}

const CounterSeries* Benchmark::counter(const std::string& counter_name) const {
  for (const CounterSeries& series : counters) {
    if (series.name == counter_name) return &series;
  }
  return nullptr;
}

const Benchmark* Run::find(const std::string& name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &benchmarks[it->second];
}

}  // namespace gptbench::compare
