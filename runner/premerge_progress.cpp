#include "premerge_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "progress.h"

namespace gptbench::runner {
namespace {

std::string percent(double fraction, bool sign) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", 100 * fraction);
  return buf;
}

std::string count_text(const std::optional<size_t>& n) { return n ? std::to_string(*n) : "-"; }

}  // namespace

std::optional<double> estimate_left(size_t done, size_t total, double elapsed_s) {
  if (done == 0 || done > total) return std::nullopt;
  return elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
}

std::string format_benchmark_line(const BenchmarkLine& l) {
  const int digits = static_cast<int>(std::to_string(l.total).size());
  char head[64];
  std::snprintf(head, sizeof head, "[%*zu/%zu] ", digits, l.position, l.total);
  std::string line = head + l.name;
  if (l.epochs > 1) line += "  epoch " + std::to_string(l.epoch) + "/" + std::to_string(l.epochs);
  line += "  n=" + count_text(l.base_samples) + "/" + count_text(l.new_samples);
  if (l.change && std::isfinite(*l.change)) {
    line += "  change " + percent(*l.change, true);
    if (l.uncertainty && std::isfinite(*l.uncertainty)) line += " \u00b1" + percent(*l.uncertainty, false);
  } else {
    line += "  change n/a";
  }
  line += "  " + l.status;
  line += "  (elapsed " + format_duration(l.elapsed_s);
  if (l.eta_s) line += ", ETA " + format_duration(*l.eta_s);
  line += ")";
  return line;
}

void PremergeConsole::clear() {
  if (!shown_) return;
  std::fputs("\r\033[K", stderr);
  shown_ = false;
}

void PremergeConsole::update(const std::string& line) {
  if (!live_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  // Cut to the terminal's width: a wrapped line could not be redrawn in place.
  winsize ws{};
  const size_t width = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10 ? ws.ws_col - 1 : 100;
  std::string shown = line;
  if (shown.size() > width) shown.resize(width);
  std::fprintf(stderr, "\r\033[K%s", shown.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void PremergeConsole::finish(const std::string& line) {
  clear();
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void PremergeConsole::note(const std::string& text) {
  clear();
  std::fprintf(stderr, "gptbench-premerge: %s\n", text.c_str());
  std::fflush(stderr);
}

}  // namespace gptbench::runner
