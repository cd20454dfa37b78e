// gptbench: Google Benchmark's main with the suite's flags parsed first (fixtures/options.h),
// the run context and measured peaks recorded once, and every family registered.
#include <benchmark/benchmark.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

#include "fixtures/device_info.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/runner.h"

namespace {
constexpr const char* kDefaultMinTime = "0.1";  // seconds of timed regions per benchmark
}  // namespace

int main(int argc, char** argv) {
  using namespace gptbench;
  ParseResult parsed = parse_options(argc, argv, torch::cuda::is_available());
  if (parsed.help) {
    std::cout << options_help();
    return 0;
  }
  if (!parsed.error.empty()) {
    std::cerr << "gptbench: " << parsed.error << "\n";
    return 2;
  }
  global_options() = parsed.options;

  // The suite's default timed time per benchmark is 0.1 s, not Google Benchmark's 0.5 s: GPU
  // regions are timed by CUDA events, so 0.1 s is hundreds of repeats of a kernel, and the
  // default suite then fits in its time budget (README). An explicit flag wins.
  std::vector<std::string> bm_args = parsed.passthrough;
  const bool min_time_given = std::any_of(bm_args.begin(), bm_args.end(), [](const std::string& a) {
    return a.rfind("--benchmark_min_time", 0) == 0;
  });
  if (!min_time_given && !bm_args.empty())
    bm_args.insert(bm_args.begin() + 1, std::string("--benchmark_min_time=") + kDefaultMinTime);
  std::vector<char*> args;
  for (auto& a : bm_args) args.push_back(a.data());
  int bm_argc = static_cast<int>(args.size());
  benchmark::Initialize(&bm_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bm_argc, args.data())) return 2;

  const Options& o = global_options();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    global_peaks() = measure_peaks(o.resolved_device);
  } catch (const std::exception& e) {
    std::cerr << "gptbench: measuring peaks failed, %peak counters omitted: " << e.what() << "\n";
  }
  const double peak_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  benchmark::AddCustomContext("peaks_measured_in_s", std::to_string(peak_s));
  for (const auto& [key, value] : run_context(o.resolved_device, global_peaks()))
    benchmark::AddCustomContext(key, value);
  std::string models;
  for (const auto& m : o.models) models += (models.empty() ? "" : ",") + m;
  benchmark::AddCustomContext("gptbench_models", models);
  benchmark::AddCustomContext("gptbench_min_time", min_time_given ? "flag" : kDefaultMinTime);
  benchmark::AddCustomContext("gptbench_tokens",
                              std::to_string(o.batch) + "x" + std::to_string(o.seq));

  register_families();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  release_cases();
  return 0;
}
