// The progress line on stderr: benchmarks done / total, elapsed time, an estimate of the time
// left (mean time per finished benchmark × the number left) and the benchmark running now.
// Drawn only when stderr is a terminal (or --progress=always); redrawn in place with '\r'.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace gptbench::runner {

// "1:02:03" / "4:05" style.
std::string format_duration(double seconds);

// "[  3/12]  25% | elapsed 0:12 | left ~0:36 | gemm/torch/fp32/...", cut to width columns.
std::string format_progress(size_t done, size_t total, double elapsed_s, const std::string& current,
                            size_t width);

class Progress {
 public:
  explicit Progress(bool enabled);
  bool enabled() const { return enabled_; }
  void set_total(size_t total) { total_ = total; }
  void finished(size_t count = 1) { done_ += count; }
  void set_current(const std::string& name) { current_ = name; }
  size_t done() const { return done_; }
  // Redraws the line (at most every 100 ms unless forced).
  void draw(bool force = false);
  // Clears the line so other output can be printed; the next draw() restores it.
  void clear();
  double elapsed_s() const;

 private:
  bool enabled_;
  bool shown_ = false;
  size_t total_ = 0, done_ = 0;
  std::string current_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace gptbench::runner
