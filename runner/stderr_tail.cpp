#include "stderr_tail.h"

#include <vector>

namespace gptbench::runner {
namespace {

constexpr size_t kMaxLine = 300;

std::string shortened(std::string line) {
  if (line.size() > kMaxLine) line = line.substr(0, kMaxLine) + "...";
  return line;
}

// The non-empty, non-banner lines of `tail` from the last one backwards, at most `count`.
std::vector<std::string> lines_from_end(const std::string& tail, size_t count) {
  std::vector<std::string> found;
  size_t end = tail.size();
  while (end > 0 && found.size() < count) {
    size_t start = tail.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = tail.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && !is_gb_banner(line)) found.push_back(shortened(std::move(line)));
    if (start == 0) break;
    end = start - 1;
  }
  return found;
}

}  // namespace

void append_tail(std::string& tail, std::string_view chunk, size_t max_bytes) {
  tail.append(chunk);
  if (tail.size() > max_bytes) tail.erase(0, tail.size() - max_bytes);
}

bool is_gb_banner(const std::string& line) {
  for (const char* prefix : {"***WARNING***", "Run on (", "CPU Caches:", "  L1 ", "  L2 ", "  L3 ",
                             "  L4 ", "Load Average:", "Running "})
    if (line.rfind(prefix, 0) == 0) return true;
  // the date line: 2026-11-22T02:22:39+00:00
  return line.size() >= 20 && line[4] == '-' && line[7] == '-' && line[10] == 'T' &&
         line.find(' ') == std::string::npos;
}

std::string last_stderr_line(const std::string& tail) {
  if (size_t at = tail.rfind("SUMMARY: "); at != std::string::npos)
    return shortened(tail.substr(at, tail.find('\n', at) - at));
  const std::vector<std::string> last = lines_from_end(tail, 1);
  return last.empty() ? "" : last.front();
}

std::string last_stderr_lines(const std::string& tail, size_t count) {
  const std::vector<std::string> lines = lines_from_end(tail, count);
  std::string joined;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) joined += (joined.empty() ? "" : " | ") + *it;
  return joined;
}

}  // namespace gptbench::runner
