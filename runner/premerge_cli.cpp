#include "premerge_cli.h"
#include "cli_parse.h"

#include <CLI/CLI.hpp>

#include <stdexcept>

#include "cpu_list.h"
#include "runjson/load.h"

namespace gptbench::runner {
namespace {

constexpr const char* kPassOptions[] = {"--worker-arg", "--base-arg", "--new-arg"};

// "--new-arg" "--x=1" -> "--new-arg=--x=1": CLI11 would read "--x=1" as an option of its own.
std::vector<std::string> join_pass_values(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 1; i < args.size(); ++i) {
    bool joined = false;
    for (const char* option : kPassOptions)
      if (args[i] == option && i + 1 < args.size()) {
        out.push_back(args[i] + "=" + args[i + 1]);
        ++i;
        joined = true;
        break;
      }
    if (!joined) out.push_back(args[i]);
  }
  return out;
}

}  // namespace

PremergeCliResult parse_premerge_cli(const std::vector<std::string>& args) {
  PremergeCliResult r;
  PremergeConfig& c = r.config;
  CLI::App app(
      "gptbench-premerge: a fast pre-merge performance check with resident workers. In each of "
      "--processes epochs it starts a fresh worker per side and samples each selected benchmark on "
      "the base and the new suite binary, interleaved in seeded random order; the last epoch goes "
      "on until the change is decided over all epochs' samples or a limit is reached. It writes "
      "OUT/base.json and OUT/new.json for `gptbench-compare benchmarks` (the gate) and "
      "OUT/premerge.json (docs/premerge.md).",
      "gptbench-premerge");
  std::string threshold, config_file, cpus;
  uint64_t seed = 0;
  app.add_option("--base-bin", c.base_bin, "the base suite binary")->required();
  app.add_option("--new-bin", c.new_bin, "the new suite binary")->required();
  app.add_option("--out", c.out_dir, "output directory (created if missing)")->required();
  app.add_option("--filter", c.filter, "benchmarks to check (the suite's filter regex; default: all)");
  app.add_option("--worker-arg", c.worker_args, "a flag for both workers, e.g. --worker-arg=--gptbench_device=cpu")
      ->allow_extra_args(false);
  app.add_option("--base-arg", c.base_args, "a flag for the base worker only")->allow_extra_args(false);
  app.add_option("--new-arg", c.new_args, "a flag for the new worker only, e.g. --new-arg=--gptbench_slowdown=^gemm/:3")
      ->allow_extra_args(false);
  app.add_option("--threshold", threshold, "minimum relative change that counts (2% or 0.02; default 2%)");
  app.add_option("--alpha", c.alpha, "significance level of the check, divided among its benchmarks")
      ->check(CLI::Range(1e-12, 0.5))
      ->capture_default_str();
  app.add_option("--config", config_file, "per-family thresholds (gptbench-compare's --config format)");
  app.add_option("--processes", c.processes,
                 "epochs, each with a fresh worker process per side: the spread between processes of one "
                 "binary counts as noise (1: one worker per side for the whole check)")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  app.add_option("--max-processes", c.max_processes,
                 "processes per side at most, with the extra epochs that fresh workers run for the benchmarks "
                 "whose processes' spread alone left them undecided (at most --processes: no extra epoch)")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  app.add_option("--extra-seconds", c.extra_seconds, "wall time within which extra epochs may start")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--min-samples", c.min_samples, "samples per side and epoch before a benchmark can be decided")
      ->check(CLI::Range(size_t{2}, size_t{100000}))
      ->capture_default_str();
  app.add_option("--max-samples", c.max_samples,
                 "samples per side at most, over all epochs (each takes at most ceil(max / processes))")
      ->check(CLI::Range(size_t{2}, size_t{100000}))
      ->capture_default_str();
  app.add_option("--sample-time", c.sample_time_s, "seconds timed per sample (the worker's min_time)")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  app.add_option("--max-seconds", c.max_seconds, "sampling wall time per benchmark at most, over all epochs")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--timeout", c.timeout_s, "seconds a worker may take for one request before it is declared hung")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* seed_option = app.add_option("--seed", seed, "seed of the sampling order (default: random, written to premerge.json)");
  app.add_option("--cpus", cpus, "pin both workers to these CPUs, e.g. 0-3 (default: no pinning)");
  if (!parse_with(app, join_pass_values(args), r)) return r;
  if (c.min_samples > c.max_samples) {
    r.error = "--min-samples (" + std::to_string(c.min_samples) + ") is above --max-samples (" +
              std::to_string(c.max_samples) + ")";
    return r;
  }
  if (*seed_option) c.seed = seed;
  try {
    if (!config_file.empty())
      compare::apply_threshold_config(runjson::read_text_file(config_file), config_file, c.thresholds);
    if (!threshold.empty()) c.thresholds.set_default(compare::parse_threshold(threshold));
  } catch (const std::exception& e) {  // ConfigError, LoadError
    r.error = e.what();
    return r;
  }
  if (!cpus.empty()) {
    try {
      c.cpus = parse_cpu_list(cpus);
    } catch (const std::invalid_argument& e) {
      r.error = std::string("--cpus: ") + e.what();
      return r;
    }
  }
  return r;
}

}  // namespace gptbench::runner
