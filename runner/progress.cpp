#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

namespace gptbench::runner {

std::string format_duration(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string format_progress(size_t done, size_t total, double elapsed_s, const std::string& current,
                            size_t width) {
  const int digits = static_cast<int>(std::to_string(total).size());
  char head[96];
  const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0;
  std::snprintf(head, sizeof head, "[%*zu/%zu] %3.0f%%", digits, done, total, pct);
  std::string line = head;
  line += " | elapsed " + format_duration(elapsed_s);
  if (done > 0 && done < total)
    line += " | left ~" + format_duration(elapsed_s / static_cast<double>(done) *
                                          static_cast<double>(total - done));
  else if (done == 0)
    line += " | left ?";
  if (!current.empty()) line += " | " + current;
  if (width > 0 && line.size() > width) line.resize(width);
  return line;
}

Progress::Progress(bool enabled)
    : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_draw_() {}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::draw(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  size_t width = 100;
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10) width = ws.ws_col - 1;
  const std::string line = format_progress(done_, total_, elapsed_s(), current_, width);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::clear() {
  if (!enabled_ || !shown_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace gptbench::runner
