// gptbench-premerge's driver: a fast pre-merge performance check with resident workers
// (docs/premerge.md). It runs in epochs (--processes, default 3): each starts the base and the
// new suite binary afresh as workers (--gptbench_worker=true), and for each benchmark prepares
// the case on both sides and takes samples in rounds, one per side and round, in a seeded
// random order (premerge_schedule.h). The first epoch lists the benchmarks the filter selects on
// both. The stopping rule (premerge_stop.h) looks at the samples of all epochs so far; only the
// last epoch may stop a benchmark early, so that each process contributes, and the spread
// between the processes counts as noise (a process-level offset, e.g. CPU placement or
// allocator layout, is shared by every sample of a process). A benchmark that the processes'
// spread alone leaves undecided gets extra epochs (--max-processes, --extra-seconds): fresh
// workers that prepare and sample only such benchmarks, min_samples a side each, since only
// more processes narrow what the processes' medians leave unknown. A worker that exits or hangs is
// killed and restarted and the case prepared again (the sample is lost); a benchmark that loses
// a side's worker twice is an errored row on that side. It writes base.json and new.json (Google Benchmark JSON for
// `gptbench-compare benchmarks`, which gates) and premerge.json (premerge_output.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "premerge_record.h"
#include "compare/thresholds.h"

namespace gptbench::runner {

struct PremergeConfig {
  std::string base_bin, new_bin;  // the suite binaries
  std::string filter;             // the workers' list filter ("" = all)
  std::string out_dir;            // created if missing
  std::vector<std::string> worker_args;  // for both workers
  std::vector<std::string> base_args, new_args;  // for one side
  compare::Thresholds thresholds{0.02};
  double alpha = 0.05;            // divided by the number of benchmarks compared
  size_t processes = 3;           // epochs: fresh workers per side each (1: one pair for the check)
  // Extra epochs, each with fresh workers, for the benchmarks the processes' spread left
  // undecided: up to this many processes a side in all (<= processes: none), started within
  // extra_seconds of the end of the regular epochs.
  size_t max_processes = 6;
  double extra_seconds = 45;
  size_t min_samples = 5;         // per side and epoch, before a decision
  size_t max_samples = 30;        // per side in all (at most ceil(max_samples / processes) per epoch)
  double sample_time_s = 0.01;    // min_time of each sample
  double max_seconds = 10;        // sampling wall time per benchmark, all epochs
  double timeout_s = 120;         // per request (and for a ready line)
  std::optional<uint64_t> seed;   // drawn at random when absent (and written to premerge.json)
  std::vector<int> cpus;          // pin both workers to these CPUs; empty: no pinning
  bool live_progress = false;     // redraw the current benchmark's line in place (a terminal)
};

// The worker command line of one side: binary, --gptbench_worker=true, worker args, side args.
std::vector<std::string> worker_argv(const PremergeConfig& config, Side side);

// Exit codes: 0 the check ran and its files are written (the gate is gptbench-compare's on
// them); 2 a worker could not start (or list), nothing matched the filter, or the files could
// not be written. `record` (tests) receives what was recorded.
int run_premerge(const PremergeConfig& config, PremergeRecord* record = nullptr);

}  // namespace gptbench::runner
