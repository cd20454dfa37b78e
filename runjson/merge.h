// Merges per-round Google Benchmark JSON files (the pre-merge check runs each
// binary once per round, interleaved) into one run in which every benchmark
// has one iteration row per round, repetition_index 0..N-1, as if it had been
// run once with --benchmark_repetitions=N.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gptbench::runjson {

struct NamedText {
  std::string source;
  std::string text;
};

// Every input is parsed once, by parse_run, which validates it (LoadError on bad input) and
// gives its document.
// Aggregate rows are dropped (they summarise one round only); the context is
// the first input's. Benchmarks keep the order of their first appearance.
nlohmann::json merge_runs(const std::vector<NamedText>& inputs);

// Reads the files and merges them.
nlohmann::json merge_run_files(const std::vector<std::string>& paths);

}  // namespace gptbench::runjson
