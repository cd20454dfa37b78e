// Baselines made from the history: the last N runs on a device pooled into one run that
// gptbench-compare reads (each stored run's repetitions become one "process" of the pooled
// benchmark, so compare counts the run-to-run spread as noise), and the check of a new run
// against it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "database.h"
#include "runjson/run.h"
#include "store.h"

namespace gptbench::history {

struct RunSelection {
  std::vector<RunInfo> runs;  // oldest first
  std::vector<std::string> environments;  // distinct, of those runs: more than one is said
};

// The last `count` runs whose device contains `device` (case-insensitive; "cpu" for CPU runs).
// With a non-empty `environment`, runs of that environment only when there are any.
// `exclude_digest` leaves out a run with that content (a run checked against itself).
RunSelection select_runs(const std::vector<RunInfo>& runs, const std::string& device, const std::string& environment,
                         size_t count, const std::string& exclude_digest = "");

// The selected runs pooled into one: per benchmark, the repetitions and counter values of
// every run that has it, with process_index = the run's position in the selection.
runjson::Run pooled_baseline(Database& db, const RunSelection& selection);

// Google Benchmark JSON of a run (iteration rows, times in ns), as gptbench-compare reads it.
nlohmann::json to_benchmark_json(const runjson::Run& run);

}  // namespace gptbench::history
