// Synthetic runs and histories for the history tests and the scale benchmark: runs built in
// memory (runjson::Run) and written as Google Benchmark JSON, and temporary directories.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runjson/run.h"

namespace gptbench::history::testing {

struct RunSpec {
  std::string gpu = "NVIDIA H100 80GB HBM3";
  std::string libtorch = "2.11.0";
  std::string date = "2026-01-01T00:00:00+00:00";
  size_t benchmarks = 3;      // named bench/NNNN
  size_t repetitions = 5;
  std::vector<double> medians;  // per benchmark (ns); default 1000 for all
  double noise = 0.01;        // relative sd of each repetition
  unsigned seed = 1;
};

// A run as the loader would produce it: repetitions around each median, a "bytes/s" counter.
runjson::Run make_run(const RunSpec& spec);

// "2026-01-01T00:00:00+00:00" plus `day` days and `minute` minutes.
std::string date_of(int day, int minute = 0);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes the run as Google Benchmark JSON; returns the path.
std::string write_run(const runjson::Run& run, const std::string& path);

// gptbench-history's run_cli with these arguments (after the program name).
struct CliResult {
  int code = 0;
  std::string out, err;
  double seconds = 0;
};
CliResult run_history(const std::vector<std::string>& args);

}  // namespace gptbench::history::testing
