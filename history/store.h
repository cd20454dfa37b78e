// The runs of a history database: adding a loaded run (one transaction, deduplicated by
// content), listing runs in date order, and reading runs back as runjson::Run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "database.h"
#include "runjson/run.h"

namespace gptbench::history {

struct RunInfo {
  int64_t id = 0;
  std::string digest, commit, branch, date, added, source, device, environment;
  std::map<std::string, std::string> context;
  int64_t benchmarks = 0;  // results stored for it
};

struct AddOptions {
  std::string commit = "unknown";
  std::string branch = "unknown";
  std::string date;  // overrides the run's context date; the current time when both are empty
};

struct AddResult {
  int64_t run_id = 0;
  bool duplicate = false;  // the same content was already there (as run_id): nothing added
};

// The device of a run: its gpu_name, or "cpu" when it has none (or "none").
std::string device_of(const std::map<std::string, std::string>& context);
// What makes two runs' numbers comparable: device, driver, CUDA runtime, LibTorch and timing
// method (compare's environment keys), "key=value" joined by ", " over the keys present.
std::string environment_of(const std::map<std::string, std::string>& context);
// Hex digest (64-bit FNV-1a) of a run's context and results, independent of its file name
// and formatting.
std::string run_digest(const runjson::Run& run);

// Adds the run in one transaction. `progress` (for tests) is called after each benchmark is
// written, with the number written so far.
AddResult add_run(Database& db, const runjson::Run& run, const AddOptions& options,
                  const std::function<void(size_t)>& progress = {});

// Every run, oldest first (by date, then id).
std::vector<RunInfo> list_runs(Database& db);

// The stored run as the loader would have produced it (repetitions, counters, statuses).
runjson::Run load_stored_run(Database& db, const RunInfo& info);

}  // namespace gptbench::history
