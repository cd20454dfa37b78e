// gptbench-run's driver: lists the selected benchmarks, runs them family by family, each
// family in child processes of the benchmark binary, and merges what they wrote.
//
// Fault policy (docs/robustness.md):
//  - A child writes its JSON to its own file (--benchmark_out); Google Benchmark flushes it
//    after every benchmark, so the rows of benchmarks that finished survive the child.
//  - When a child dies (signal, non-zero exit, or exit 0 with benchmarks unreported), the first
//    benchmark of its list that it did not report is the one that was running: it is recorded
//    as errored with the reason (signal name or exit code, last line of the child's stderr),
//    and the rest of the family runs in a fresh child.
//  - A family whose children die `max_restarts` times in a row before finishing any benchmark
//    (a crash at start-up rather than in one benchmark) is abandoned: its remaining
//    benchmarks are recorded as errored with the reason. The other families run.
//  - A benchmark that runs longer than `benchmark_timeout_s` (0: no limit) is killed and
//    recorded like a crash.
//  - SIGINT: the current benchmark finishes, then the child is stopped and the merged file is
//    written with everything finished (the benchmarks not run are left out, and the context
//    says so). A second SIGINT, or SIGTERM, stops the child at once.
//  - The merged file is written once, atomically (temporary file + rename); a run stopped
//    before any result writes nothing, so an older file at the destination stays as it was.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gptbench::runner {

enum class ProgressMode { kAuto, kAlways, kNever };

struct RunConfig {
  std::string binary = "gptbench";            // the benchmark binary
  std::vector<std::string> pass_flags;        // --gptbench_* and --benchmark_* for every child
  std::string filter;                         // the user's --benchmark_filter ("" = all)
  std::string out;                            // merged result
  bool keep_parts = false;                    // keep the per-child files (<out>.parts-*/)
  ProgressMode progress = ProgressMode::kAuto;
  int max_restarts = 3;
  double benchmark_timeout_s = 0;
  size_t max_names_per_child = 128;           // names in one exact --benchmark_filter
  size_t max_filter_chars = 16384;
  bool forward_output = true;                 // the children's console output to ours
  // --peers=inductor: the peer runner (peers/, docs/peers.md), run after gptbench's families
  // with the same flags, its families as more children; empty: no peers.
  std::vector<std::string> peer_command;
  int ranks = 1;                              // --ranks / --gpus: processes per data-parallel
                                              // benchmark (runner/ranks.h)
};

struct RunSummary {
  size_t total = 0;          // benchmarks listed
  size_t reported = 0;       // reported by a child (ran, or skipped with their own reason)
  size_t errored = 0;        // recorded as errored by the runner (crash, timeout, abandoned)
  size_t not_run = 0;        // left out after an interruption
  bool interrupted = false;
  std::vector<std::string> crashes;  // "family: benchmark: reason"
};

// Exit codes: 0 every benchmark was reported; 1 some were recorded as errored by the runner
// (the merged file is written); 2 usage error, or the binary could not list its benchmarks
// (nothing written); 3 the merged file could not be written; 130 interrupted (written, unless
// nothing had been measured).
int run_suite(const RunConfig& config, RunSummary* summary = nullptr);

}  // namespace gptbench::runner
