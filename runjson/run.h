// One Google Benchmark JSON run, as the tools see it after loading: rows grouped into
// benchmarks, times normalised to nanoseconds, counters collected per benchmark. Produced by
// load.h; read by gptbench-compare, gptbench-run, gptbench-report and gptbench-history.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace gptbench::runjson {

// Whether a benchmark ran, or was stopped by SkipWithError / SkipWithMessage; in order of
// severity (a benchmark keeps the worst status among its rows).
enum class RunStatus { kOk, kSkipped, kErrored };

const char* to_string(RunStatus status);

// Which of the two Google Benchmark times is compared.
enum class TimeKind { kReal, kCpu };

// One timed repetition (an "iteration" row of the JSON).
struct Repetition {
  int64_t index = -1;    // repetition_index; -1 when the row has none
  int64_t process = -1;  // process_index (the process that took it); -1 when the row has none
  double real_ns = 0;
  double cpu_ns = 0;
};

// A user counter over the repetitions: one value per iteration row carrying it.
struct CounterSeries {
  std::string name;
  std::vector<double> values;      // may hold NaN/inf when the JSON wrote them
  std::vector<int64_t> processes;  // process_index of each value's row (-1: none)
};

// An aggregate row (_mean, _median, _stddev, _cv, or a user statistic).
struct Aggregate {
  std::string name;       // aggregate_name: "mean", "median", "stddev", "cv", ...
  bool has_time = false;  // BigO and RMS rows carry no real_time/cpu_time
  bool is_percentage = false;  // aggregate_unit "percentage" (cv): not a time
  double real_ns = 0;     // for percentages: the fraction as written
  double cpu_ns = 0;
  std::map<std::string, double> counters;
};

struct Benchmark {
  std::string name;         // run_name: the name without aggregate suffix
  std::string label;        // the "label" field, if any (of the first row carrying one)
  std::vector<std::string> labels;  // every distinct label of its rows, in order of appearance
  int64_t family_index = -1;
  int64_t declared_repetitions = 0;  // "repetitions" field (max seen)
  RunStatus status = RunStatus::kOk;
  std::string message;      // error_message or skip_message of the first such row
  std::vector<Repetition> repetitions;  // iteration rows that ran, by index
  std::vector<CounterSeries> counters;  // from the iteration rows, by first appearance
  std::vector<Aggregate> aggregates;

  // Samples of the chosen time, one per repetition that ran.
  std::vector<double> samples(TimeKind kind) const;
  // The process_index of each of those samples (-1 where the row has none).
  std::vector<int64_t> processes() const;
  const Aggregate* aggregate(const std::string& aggregate_name) const;
  const CounterSeries* counter(const std::string& counter_name) const;
};

struct Run {
  std::string source;  // file path (or a label for in-memory input)
  std::map<std::string, std::string> context;  // scalar context entries as text
  std::vector<Benchmark> benchmarks;           // in order of first appearance

  // The benchmark with this name, or nullptr.
  const Benchmark* find(const std::string& name) const;
  std::unordered_map<std::string, size_t> index;  // name -> position in benchmarks
};

// Whether two loaded runs hold the same data (source aside); numbers compare bit for bit, so
// NaN equals NaN. Empty when they do, else where they first differ.
std::string first_difference(const Run& a, const Run& b);

}  // namespace gptbench::runjson
