#include "context.h"

#include <cmath>
#include <cstdlib>

namespace gptbench::compare {
namespace {

constexpr const char* kAbsent = "(absent)";
constexpr double kCpuClockTolerance = 0.10;

std::string value_of(const std::map<std::string, std::string>& context, const std::string& key) {
  const auto it = context.find(key);
  return it == context.end() ? kAbsent : it->second;
}

bool clocks_close(const std::string& a, const std::string& b) {
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  if (end_a == a.c_str() || end_b == b.c_str() || !(x > 0) || !(y > 0)) return a == b;
  return std::fabs(x - y) <= kCpuClockTolerance * std::max(x, y);
}

}  // namespace

std::vector<ContextDifference> diff_context(const std::map<std::string, std::string>& base,
                                            const std::map<std::string, std::string>& contender) {
  std::vector<ContextDifference> out;
  auto check = [&](const std::string& key, bool environment) {
    const std::string a = value_of(base, key);
    const std::string b = value_of(contender, key);
    if (a == b) return;
    if (key == "mhz_per_cpu" && clocks_close(a, b)) return;
    out.push_back(ContextDifference{key, a, b, environment});
  };
  for (const std::string& key : kEnvironmentKeys) check(key, true);
  // Informational: the host, and the suite's timed seconds per benchmark (runs before
  // 2026-11-24 lack the key and used Google Benchmark's 0.5 s): means stay comparable, but the
  // number of repeats behind each differs.
  for (const char* key : {"host_name", "num_cpus", "mhz_per_cpu", "gptbench_min_time"}) check(key, false);
  return out;
}

bool has_environment_difference(const std::vector<ContextDifference>& differences) {
  for (const ContextDifference& difference : differences) {
    if (difference.environment) return true;
  }
  return false;
}

}  // namespace gptbench::compare
