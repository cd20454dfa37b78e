// gptbench: Google Benchmark's main with the suite's flags parsed first (fixtures/options.h),
// the run context and measured peaks recorded once, and every family registered, with the
// implementations registered into them (fixtures/extension.h). Installed as gptbench::main, the
// main of a project's own benchmark binary (docs/extending.md).
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <torch/cuda.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <vector>

#include "fixtures/benchmark_filter.h"
#include "fixtures/console_reporter.h"
#include "fixtures/slurm_env.h"
#include "fixtures/device_info.h"
#include "fixtures/dist.h"
#include "fixtures/family.h"
#include "fixtures/memory.h"
#include "fixtures/nvtx.h"
#include "fixtures/options.h"
#include "fixtures/phases.h"
#include "fixtures/timing_context.h"
#include "fixtures/case_runner.h"
#include "fixtures/timer.h"
#include "fixtures/worker.h"

namespace {
constexpr const char* kDefaultMinTime = "0.1";  // seconds of timed regions per benchmark

// The worker's replies go to the original stdout; everything else that writes to stdout
// (LibTorch warnings, Google Benchmark) is sent to stderr so it cannot corrupt the protocol.
int serve_on_stdout(const std::map<std::string, std::string>& context, double startup_s) {
  std::cout.flush();
  const int protocol_fd = dup(STDOUT_FILENO);
  if (protocol_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::cerr << "gptbench: cannot set up the worker's stdout\n";
    return 2;
  }
  std::ofstream protocol("/proc/self/fd/" + std::to_string(protocol_fd));
  if (!protocol) {
    std::cerr << "gptbench: cannot open the worker's protocol stream\n";
    return 2;
  }
  return gptbench::serve_worker(std::cin, protocol, context, startup_s);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gptbench;
  const double loaded_s = process_age_seconds();
  add_phase_time(Phase::kLoad, loaded_s);
  const auto main_start = std::chrono::steady_clock::now();
  ParseResult parsed;
  {
    PhaseScope phase(Phase::kInit);
    parsed = parse_options(argc, argv, torch::cuda::is_available());
  }
  if (parsed.help) {
    std::cout << options_help();
    return 0;
  }
  if (!parsed.error.empty()) {
    std::cerr << "gptbench: " << parsed.error << "\n";
    return 2;
  }
  Options o = parsed.options;
  set_nvtx_enabled(o.nvtx);
  // A rank of a data-parallel run (gptbench-run --ranks N) runs on its own GPU (fixtures/dist.h).
  keep_multicast_off();
  const auto getenv_fn = [](const char* name) -> const char* { return std::getenv(name); };
  try {  // a Slurm task: the launcher variables from Slurm's (fixtures/slurm_env.h)
    for (const auto& [name, value] : slurm_launch_variables(getenv_fn)) ::setenv(name.c_str(), value.c_str(), 1);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gptbench: " << e.what() << "\n";
    return 2;
  }
  if (auto err = read_rank_env(getenv_fn, rank_env()); !err.empty()) {
    std::cerr << "gptbench: " << err << "\n";
    return 2;
  }
  if (auto err = place_rank_device(o.resolved_device); !err.empty()) {
    std::cerr << "gptbench: " << err << "\n";
    return 2;
  }
  // The case runner and the resident worker read the run's settings from here (process-wide);
  // the families register from the inputs alone.
  global_options() = o;
  const SuiteInputs inputs = suite_inputs(o, rank_env().world);

  // The suite's default timed time per benchmark is 0.1 s, not Google Benchmark's 0.5 s: GPU
  // regions are timed by CUDA events, so 0.1 s is hundreds of repeats of a kernel, and the
  // default suite then fits in its time budget (README). An explicit flag wins.
  std::vector<std::string> bm_args = parsed.passthrough;
  // Only rank 0 writes the results: the other ranks of a launcher's run (torchrun, srun) run
  // the same benchmarks for their collectives, their tables go to GPTBENCH_RANK_LOG_DIR when
  // set, their errors to stderr.
  if (rank_env().rank != 0)
    bm_args.erase(std::remove_if(bm_args.begin() + (bm_args.empty() ? 0 : 1), bm_args.end(),
                                 [](const std::string& a) { return a.rfind("--benchmark_out", 0) == 0; }),
                  bm_args.end());
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
  if (auto err = benchmark_filter_error(benchmark::GetBenchmarkFilter()); !err.empty()) {
    std::cerr << "gptbench: " << err << "\n";
    return 2;
  }

  if (o.on_cuda()) {  // the CUDA context is created here, not inside the peak measurement
    PhaseScope phase(Phase::kInit);
    (void)at::empty({1}, at::TensorOptions().device(o.resolved_device));
    sync_device(o.resolved_device);
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    PhaseScope phase(Phase::kPeaks);
    global_peaks() = measure_peaks(o.resolved_device);
  } catch (const std::exception& e) {
    std::cerr << "gptbench: measuring peaks failed, %peak counters omitted: " << e.what() << "\n";
  }
  // The cap comes after the peaks, whose buffers it need not hold (docs/memory.md).
  if (o.memory_limit_bytes > 0) {
    if (auto err = set_memory_limit(o.resolved_device, o.memory_limit_bytes); !err.empty()) {
      std::cerr << "gptbench: " << err << "\n";
      return 2;
    }
  }
  std::map<std::string, std::string> context = run_context(o.resolved_device, global_peaks());
  if (o.memory_limit_bytes > 0) context["memory_limit_bytes"] = std::to_string(o.memory_limit_bytes);
  context["peaks_measured_in_s"] = std::to_string(seconds_since(t0));
  std::string models;
  for (const auto& m : o.models) models += (models.empty() ? "" : ",") + m;
  context["gptbench_models"] = models;
  context["gptbench_min_time"] = min_time_given ? "flag" : kDefaultMinTime;
  context["gptbench_tokens"] = std::to_string(o.batch) + "x" + std::to_string(o.seq);
  context["gptbench_ranks"] = std::to_string(rank_env().world);
  context["gptbench_graph_copies"] = std::to_string(o.graph_copies);
  // Said in place of Google Benchmark's DEBUG warning on the console (fixtures/timing_context.h).
  context[kTimingContextKey] = timing_context(o.resolved_device, benchmark_library_debug());
  for (const auto& [key, value] : context) benchmark::AddCustomContext(key, value);

  try {  // an implementation registered under a bad name (fixtures/extension.h) is an error
    register_families(inputs);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gptbench: " << e.what() << "\n";
    return 2;
  }
  int code = 0;
  if (o.worker)
    code = serve_on_stdout(context, loaded_s + seconds_since(main_start));
  else if (run_specified_benchmarks(rank_env().rank) == 0)
    code = 1;  // the filter matched nothing: Google Benchmark printed "Failed to match any benchmarks"
  benchmark::Shutdown();
  release_cases();
  release_process_group();
  if (o.phases) std::cerr << phase_report(loaded_s + seconds_since(main_start));
  return code;
}
