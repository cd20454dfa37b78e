// What gptbench-premerge records while it runs: per benchmark and side the samples (and the
// epoch, i.e. the worker process, of each), lost samples, worker restarts, prepare times and
// errors; how sampling stopped; per side the worker's context and the start-up of each epoch. premerge_output.h turns it into base.json, new.json (Google
// Benchmark JSON) and premerge.json.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "premerge_schedule.h"
#include "premerge_stop.h"
#include "compare/verdict.h"

namespace gptbench::runner {

// One benchmark on one side.
struct SideRecord {
  bool listed = false;               // the side's worker lists the benchmark
  std::vector<double> real_ns;       // one sample per entry: nanoseconds per call
  std::vector<int64_t> process_index;  // the epoch (worker process) of each sample, 0-based
  std::vector<int64_t> calls;        // calls timed in each sample
  std::vector<nlohmann::json> counters;  // each sample's counters (an object)
  std::vector<std::string> labels;   // each sample's row label: its worker's kernel list, or ""
  size_t lost = 0;                   // sample requests that killed or hung the worker
  size_t worker_losses = 0;          // requests (prepare or sample) that lost the worker
  std::vector<double> prepare_s;     // wall time of each prepare request (re-prepares too)
  nlohmann::json prepared;           // the last prepare reply (inner, call_s, build_s, ...)
  std::string error;                 // non-empty: written as an errored row with this message
  bool skipped = false;              // the error is the worker's "skipped" reason

  bool finished() const { return !error.empty(); }
  // Samples taken in epoch `epoch`.
  size_t samples_in(size_t epoch) const {
    size_t n = 0;
    for (int64_t e : process_index) n += static_cast<size_t>(e) == epoch ? 1 : 0;
    return n;
  }
};

struct BenchmarkRecord {
  std::string name;
  int64_t family_index = 0;               // first path segment, numbered in order of appearance
  int64_t per_family_instance_index = 0;  // position within that family
  std::array<SideRecord, 2> sides;        // indexed by index_of(Side)
  StopReason stop = StopReason::kContinue;
  double threshold = 0;                   // the benchmark's threshold
  double alpha = 0;                       // per-benchmark level used for stopping
  std::optional<compare::MetricComparison> comparison;  // at the stop (each side >= 2 samples)
  double wall_s = 0;                      // prepares and sampling, all epochs
  double sampling_s = 0;                  // sampling alone, all epochs (what --max-seconds limits)
  size_t rounds = 0;                      // rounds of sampling, all epochs (numbers their order)

  SideRecord& side(Side s) { return sides[index_of(s)]; }
  const SideRecord& side(Side s) const { return sides[index_of(s)]; }
  bool on_both_sides() const { return sides[0].listed && sides[1].listed; }
};

// One side's workers over the whole check: a fresh one per epoch, and restarts.
struct WorkerRecord {
  std::vector<std::string> argv;
  nlohmann::json context = nlohmann::json::object();  // from the first ready line
  double startup_s = 0;       // first start, as the worker reports it
  double start_wall_s = 0;    // first start, measured by the coordinator
  size_t starts = 0;          // processes started (one per epoch, and every restart)
  size_t epoch_starts = 0;    // of these, the starts at the beginning of an epoch
  // Per epoch, the start at its beginning: as the worker reports it, and as measured by the
  // coordinator (NaN where it failed).
  std::vector<double> epoch_startup_s, epoch_start_wall_s;
  std::vector<std::string> start_failures;  // why starts after the first failed
};

// Settings echoed into the outputs.
struct PremergeSettings {
  std::string filter;
  double alpha = 0.05;
  double default_threshold = 0.02;
  std::vector<std::pair<std::string, double>> threshold_prefixes;
  size_t min_samples = 5, max_samples = 30;
  size_t processes = 3;            // epochs: worker processes per side
  size_t max_processes = 6;        // with the extra epochs, at most
  double extra_seconds = 45;       // wall time the extra epochs may start within
  size_t samples_per_process = 10;  // per side and epoch at most
  double sample_time_s = 0.01;
  double max_seconds = 10;
  double timeout_s = 120;
  uint64_t seed = 0;
  std::string cpus;  // "0-3", "" when not pinned
};

struct PremergeRecord {
  PremergeSettings settings;
  std::array<WorkerRecord, 2> workers;
  std::vector<BenchmarkRecord> benchmarks;  // base's order, then new-only ones
  std::vector<std::string> added;           // listed by new only
  std::vector<std::string> removed;         // listed by base only
  size_t compared = 0;                      // benchmarks on both sides (the Bonferroni m)
  size_t extra_epochs = 0;                  // epochs run after the --processes ones
  double extra_s = 0;                       // their wall time
  std::string date;                         // ISO 8601 local time of the start
  std::string host_name;
  double wall_s = 0;

  WorkerRecord& worker(Side s) { return workers[index_of(s)]; }
  const WorkerRecord& worker(Side s) const { return workers[index_of(s)]; }
};

}  // namespace gptbench::runner
