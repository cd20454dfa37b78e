#include "pair.h"

#include <unordered_set>

namespace gptbench::compare {
using runjson::Benchmark;
using runjson::Run;

NameFilter::NameFilter(const std::string& pattern) {
  if (!pattern.empty()) regex_.emplace(pattern, std::regex::ECMAScript | std::regex::optimize);
}

bool NameFilter::keeps(const std::string& name) const {
  return !regex_ || std::regex_search(name, *regex_);
}

std::vector<std::string> split_path(const std::string& name) {
  std::vector<std::string> segments;
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    segments.push_back(name.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return segments;
}

std::string join_path(const std::vector<std::string>& segments) {
  std::string out;
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) out.push_back('/');
    out += segments[i];
  }
  return out;
}

std::string family_of(const std::string& name) { return name.substr(0, name.find('/')); }

Pairing pair_by_name(const Run& base, const Run& contender, const NameFilter& filter) {
  Pairing pairing;
  for (const Benchmark& bench : base.benchmarks) {
    if (!filter.keeps(bench.name)) continue;
    if (const Benchmark* match = contender.find(bench.name)) {
      pairing.pairs.push_back(BenchmarkPair{bench.name, &bench, match});
    } else {
      pairing.removed.push_back(bench.name);
    }
  }
  for (const Benchmark& bench : contender.benchmarks) {
    if (filter.keeps(bench.name) && base.find(bench.name) == nullptr) pairing.added.push_back(bench.name);
  }
  return pairing;
}

Pairing pair_by_impl(const Run& run, const std::string& impl_a, const std::string& impl_b, const NameFilter& filter) {
  Pairing pairing;
  std::unordered_set<const Benchmark*> paired_b;
  for (const Benchmark& bench : run.benchmarks) {
    std::vector<std::string> segments = split_path(bench.name);
    bool has_a = false;
    bool paired = false;
    for (size_t i = 0; i < segments.size() && !paired; ++i) {
      if (segments[i] != impl_a) continue;
      has_a = true;
      segments[i] = impl_b;
      const Benchmark* match = run.find(join_path(segments));
      if (match != nullptr && (filter.keeps(bench.name) || filter.keeps(match->name))) {
        segments[i] = "{" + impl_a + "," + impl_b + "}";
        pairing.pairs.push_back(BenchmarkPair{join_path(segments), &bench, match});
        paired_b.insert(match);
        paired = true;
      }
      segments[i] = impl_a;
    }
    if (has_a && !paired && filter.keeps(bench.name)) pairing.removed.push_back(bench.name);
  }
  for (const Benchmark& bench : run.benchmarks) {
    if (paired_b.count(&bench) != 0 || !filter.keeps(bench.name)) continue;
    for (const std::string& segment : split_path(bench.name)) {
      if (segment == impl_b) {
        pairing.added.push_back(bench.name);
        break;
      }
    }
  }
  return pairing;
}

}  // namespace gptbench::compare
