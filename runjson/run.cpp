#include "runjson/run.h"

#include <cstddef>
#include <cstring>
#include <iterator>

namespace gptbench::runjson {

namespace {

// In RunStatus order, which is also the order of severity: a benchmark keeps the worst status of
// its rows (the loader's RunBuilder::mark).
constexpr const char* kStatusNames[] = {"ok", "skipped", "errored"};

}  // namespace

const char* to_string(RunStatus status) {
  const auto index = static_cast<size_t>(status);
  return index < std::size(kStatusNames) ? kStatusNames[index] : "?";
}

std::vector<double> Benchmark::samples(TimeKind kind) const {
  std::vector<double> out;
  out.reserve(repetitions.size());
  for (const Repetition& rep : repetitions) {
    out.push_back(kind == TimeKind::kReal ? rep.real_ns : rep.cpu_ns);
  }
  return out;
}

std::vector<int64_t> Benchmark::processes() const {
  std::vector<int64_t> out;
  out.reserve(repetitions.size());
  for (const Repetition& rep : repetitions) out.push_back(rep.process);
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

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string benchmark_difference(const Benchmark& a, const Benchmark& b) {
  if (a.name != b.name || a.label != b.label || a.labels != b.labels || a.family_index != b.family_index ||
      a.declared_repetitions != b.declared_repetitions || a.status != b.status || a.message != b.message) {
    return "name, label, indices or status";
  }
  if (a.repetitions.size() != b.repetitions.size()) return "number of repetitions";
  for (size_t i = 0; i < a.repetitions.size(); ++i) {
    const Repetition &x = a.repetitions[i], &y = b.repetitions[i];
    if (x.index != y.index || x.process != y.process || !same_bits(x.real_ns, y.real_ns) ||
        !same_bits(x.cpu_ns, y.cpu_ns)) {
      return "repetition " + std::to_string(i);
    }
  }
  if (a.counters.size() != b.counters.size()) return "number of counters";
  for (size_t i = 0; i < a.counters.size(); ++i) {
    const CounterSeries &x = a.counters[i], &y = b.counters[i];
    if (x.name != y.name || x.values.size() != y.values.size() || x.processes != y.processes) {
      return "counter " + x.name;
    }
    for (size_t j = 0; j < x.values.size(); ++j) {
      if (!same_bits(x.values[j], y.values[j])) return "counter " + x.name + " value " + std::to_string(j);
    }
  }
  if (a.aggregates.size() != b.aggregates.size()) return "number of aggregates";
  for (size_t i = 0; i < a.aggregates.size(); ++i) {
    const Aggregate &x = a.aggregates[i], &y = b.aggregates[i];
    if (x.name != y.name || x.has_time != y.has_time || x.is_percentage != y.is_percentage ||
        !same_bits(x.real_ns, y.real_ns) || !same_bits(x.cpu_ns, y.cpu_ns) || x.counters.size() != y.counters.size()) {
      return "aggregate " + x.name;
    }
    for (auto it = x.counters.begin(), jt = y.counters.begin(); it != x.counters.end(); ++it, ++jt) {
      if (it->first != jt->first || !same_bits(it->second, jt->second)) return "aggregate " + x.name + " counters";
    }
  }
  return "";
}

}  // namespace

std::string first_difference(const Run& a, const Run& b) {
  if (a.context != b.context) return "context";
  if (a.benchmarks.size() != b.benchmarks.size()) return "number of benchmarks";
  for (size_t i = 0; i < a.benchmarks.size(); ++i) {
    const std::string why = benchmark_difference(a.benchmarks[i], b.benchmarks[i]);
    if (!why.empty()) return "benchmark '" + a.benchmarks[i].name + "': " + why;
  }
  return "";
}

}  // namespace gptbench::runjson
