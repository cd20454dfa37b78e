#include "synthetic.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "baseline.h"
#include "cli.h"

namespace gptbench::history::testing {

runjson::Run make_run(const RunSpec& spec) {
  std::mt19937_64 random(spec.seed);
  std::normal_distribution<double> noise(0.0, spec.noise);
  runjson::Run run;
  run.source = "synthetic";
  run.context = {{"date", spec.date}, {"gpu_name", spec.gpu}, {"gpu_driver", "580.0"}, {"cuda_runtime", "13.0"},
                 {"libtorch", spec.libtorch}, {"timer_hold_ns", "50000"}};
  for (size_t b = 0; b < spec.benchmarks; ++b) {
    runjson::Benchmark& benchmark = run.benchmarks.emplace_back();
    char name[32];
    std::snprintf(name, sizeof name, "bench/%04zu", b);
    benchmark.name = name;
    benchmark.declared_repetitions = static_cast<int64_t>(spec.repetitions);
    const double median = b < spec.medians.size() ? spec.medians[b] : 1000.0;
    runjson::CounterSeries bytes{"bytes/s", {}, {}};
    for (size_t r = 0; r < spec.repetitions; ++r) {
      const double ns = median * (1 + noise(random));
      benchmark.repetitions.push_back(runjson::Repetition{static_cast<int64_t>(r), -1, ns, ns});
      bytes.values.push_back(1e12 / ns);
      bytes.processes.push_back(-1);
    }
    benchmark.counters.push_back(std::move(bytes));
    run.index[benchmark.name] = b;
  }
  return run;
}

std::string date_of(int day, int minute) {
  // Days past the start of 2026 as month and day of a 28-day month: dates stay valid and ordered.
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:00+00:00", 2026 + day / 336, 1 + (day / 28) % 12,
                1 + day % 28, minute / 60 % 24, minute % 60);
  return buf;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gptbench-history-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string write_run(const runjson::Run& run, const std::string& path) {
  std::ofstream(path) << to_benchmark_json(run).dump() << "\n";
  return path;
}

CliResult run_history(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"gptbench-history"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  CliResult result;
  result.code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.out = out.str();
  result.err = err.str();
  return result;
}

}  // namespace gptbench::history::testing
