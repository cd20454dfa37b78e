// gptbench-premerge's lines on stderr: one per benchmark and epoch when its part is done,
//   [ 3/12] gemm/torch/bf16/...  epoch 3/3  n=15/15  change +0.4% ±0.3%  decided-same  (elapsed 0:42, ETA 1:10)
// (n = base/new samples over the epochs so far; no epoch with a single one), redrawn in place while it is sampled when stderr is a terminal, and
// notes about workers (lost, restarted) on lines of their own.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace gptbench::runner {

struct BenchmarkLine {
  size_t position = 0;  // 1-based
  size_t total = 0;
  std::string name;
  size_t epoch = 0, epochs = 0;                     // 1-based; shown when epochs > 1
  std::optional<size_t> base_samples, new_samples;  // absent: the side does not list it
  std::optional<double> change, uncertainty;        // fractions; absent until compared
  std::string status;                               // stop reason, or "sampling"
  double elapsed_s = 0;                             // since the check started
  std::optional<double> eta_s;                      // time left, when it can be estimated
};

std::string format_benchmark_line(const BenchmarkLine& line);

// Time left after `done` of `total` benchmarks in `elapsed_s` (mean time per benchmark);
// nothing when none is done.
std::optional<double> estimate_left(size_t done, size_t total, double elapsed_s);

class PremergeConsole {
 public:
  // live: stderr is a terminal, where the current benchmark's line is redrawn in place.
  explicit PremergeConsole(bool live) : live_(live) {}
  // The current benchmark's line while it runs (drawn at most every 100 ms; live only).
  void update(const std::string& line);
  // A benchmark's final line.
  void finish(const std::string& line);
  // A note of the coordinator's own: "gptbench-premerge: <text>".
  void note(const std::string& text);

 private:
  void clear();
  bool live_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace gptbench::runner
