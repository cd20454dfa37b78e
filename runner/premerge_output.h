// gptbench-premerge's output files (in --out DIR):
//  - base.json, new.json: Google Benchmark JSON that `gptbench-compare benchmarks base.json
//    new.json` reads unchanged. context: the side's worker context plus "premerge": "resident
//    workers", date, host_name, executable and the premerge_* settings. One iteration row per
//    sample (repetitions = the side's samples, repetition_index 0..n-1, process_index = the
//    epoch whose worker process took it, iterations = calls in the sample, real_time =
//    cpu_time = nanoseconds per call, the worker's counters); a side
//    that errored on a benchmark (crashed twice, skipped, refused) has one errored row, as
//    Google Benchmark writes SkipWithError.
//  - premerge.json: settings, per side the workers' start-up (per epoch) and restarts, per
//    benchmark the stop reason, samples (and per process), lost samples, restarts, prepare
//    times, the change, its interval, the process spreads and the minimum detectable effect
//    (compare/mde.h) at the stopping rule's level; totals.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "premerge_record.h"

namespace gptbench::runner {

// The Google Benchmark document of one side.
nlohmann::json side_document(const PremergeRecord& record, Side side);

// premerge.json.
nlohmann::json premerge_document(const PremergeRecord& record);

// Paths of the three files in `out_dir`.
std::string side_output_path(const std::string& out_dir, Side side);
std::string premerge_output_path(const std::string& out_dir);

// Writes the three files atomically (runner/atomic_file.h), the side documents checked with
// the loader (runjson/load.h) first. Throws std::runtime_error naming the file.
void write_premerge_outputs(const PremergeRecord& record, const std::string& out_dir);

}  // namespace gptbench::runner
