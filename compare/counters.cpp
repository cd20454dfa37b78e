#include "counters.h"

#include <algorithm>
#include <cctype>

namespace gptbench::compare {
namespace {

bool contains(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const char* to_string(Direction direction) {
  switch (direction) {
    case Direction::kHigherIsBetter: return "higher_is_better";
    case Direction::kLowerIsBetter: return "lower_is_better";
    case Direction::kInformational: return "informational";
  }
  return "?";
}

Direction counter_direction(const std::string& name) {
  if (const CounterKind* kind = declared_counter(name)) return kind->direction;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ends_with(lower, "/s") || contains(lower, "per_second") || contains(lower, "%peak") ||
      contains(lower, "flops") || contains(lower, "throughput")) {
    return Direction::kHigherIsBetter;
  }
  if (contains(lower, "mem") || contains(lower, "bytes") || contains(lower, "alloc") || contains(lower, "time") ||
      contains(lower, "latency")) {
    return Direction::kLowerIsBetter;
  }
  return Direction::kInformational;
}

}  // namespace gptbench::compare
