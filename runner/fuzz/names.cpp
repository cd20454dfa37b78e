// libFuzzer target: benchmark lists as gptbench prints them. Parsing, grouping and the exact
// filter must not crash; the filter, compiled as Google Benchmark compiles it (std::regex,
// extended syntax), must match every listed name and nothing that differs from them all.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string_view>

#include "names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gptbench::runner;
  if (size > 4096) return 0;  // std::regex recursion grows with the pattern
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> names = parse_benchmark_list(text);
  size_t grouped = 0;
  for (const Family& f : group_families(names)) {
    for (const std::string& n : f.benchmarks)
      if (family_of(n) != f.name) std::abort();
    grouped += f.benchmarks.size();
  }
  if (grouped != names.size()) std::abort();
  if (names.empty() || names.size() > 32) return 0;
  for (const auto& chunk : chunk_for_filter(names, 8, 512)) {
    if (chunk.empty()) std::abort();
    const std::regex re(exact_filter(chunk), std::regex::extended);
    for (const std::string& n : chunk)
      if (!std::regex_search(n, re)) std::abort();
    const std::string other = chunk.front() + "x";
    bool listed = false;
    for (const std::string& n : chunk) listed = listed || n == other;
    if (!listed && std::regex_search(other, re)) std::abort();
  }
  return 0;
}
