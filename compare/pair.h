// Pairs benchmarks for comparison: across two runs by exact name
// ("benchmarks" mode), or within one run by swapping one implementation path
// segment ("filters" mode, e.g. softmax/torch/... vs softmax/fused/...).
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "runjson/run.h"

namespace gptbench::compare {

struct BenchmarkPair {
  std::string name;  // shown name: the shared name, or the name with "{a,b}" in place of the impl segment
  const runjson::Benchmark* base = nullptr;
  const runjson::Benchmark* contender = nullptr;  // "new" side
};

struct Pairing {
  std::vector<BenchmarkPair> pairs;     // in base order
  std::vector<std::string> removed;     // only in base (filters mode: only IMPL_A)
  std::vector<std::string> added;       // only in new (filters mode: only IMPL_B)
};

// A --filter: a benchmark is kept when the regex matches anywhere in its name
// (std::regex_search, ECMAScript syntax). No filter keeps everything.
class NameFilter {
 public:
  NameFilter() = default;
  explicit NameFilter(const std::string& pattern);  // throws std::regex_error
  bool keeps(const std::string& name) const;

 private:
  std::optional<std::regex> regex_;
};

Pairing pair_by_name(const runjson::Run& base, const runjson::Run& contender, const NameFilter& filter);

// Pairs each benchmark whose name has a path segment equal to impl_a with the
// benchmark whose name is the same except that segment reads impl_b. A pair is
// kept when the filter keeps either name.
Pairing pair_by_impl(const runjson::Run& run, const std::string& impl_a, const std::string& impl_b, const NameFilter& filter);

// "a/b/c" -> {"a", "b", "c"}.
std::vector<std::string> split_path(const std::string& name);

// {"a", "b", "c"} -> "a/b/c".
std::string join_path(const std::vector<std::string>& segments);

// First path segment: the benchmark family.
std::string family_of(const std::string& name);

}  // namespace gptbench::compare
