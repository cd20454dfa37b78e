// Shared by the compare tests: fixture paths, running the CLI in
// process, settings for the noisy fixtures, synthetic runs, and a temporary
// directory.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compare/cli.h"
#include "compare/report.h"
#include "runjson/load.h"

namespace gptbench::compare::test_util {

inline std::string data_path(const std::string& name) {
  return std::string(GPTBENCH_COMPARE_TEST_DATA) + "/data/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliResult run(const std::vector<std::string>& args, bool color_terminal = false) {
  std::vector<const char*> argv = {"gptbench-compare"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out;
  std::ostringstream err;
  CliResult result;
  result.code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err, color_terminal);
  result.out = out.str();
  result.err = err.str();
  return result;
}

// The gb171_* fixtures were recorded on a shared 2-core VM (CV 2-19%): at the
// default 5% threshold every benchmark in them is too noisy to call, the
// planted 30% slowdown included (its base side has CV 5.7%). 10% suits them.
constexpr double kFixtureThreshold = 0.10;
constexpr const char* kFixtureThresholdText = "10%";

inline Settings fixture_settings() {
  Settings settings;
  settings.thresholds.set_default(kFixtureThreshold);
  return settings;
}

using NamedSamples = std::vector<std::pair<std::string, std::vector<double>>>;

// Google Benchmark JSON with one iteration row (real time in ns) per sample.
inline std::string run_json(const NamedSamples& benchmarks) {
  std::string out = R"({"benchmarks": [)";
  bool first = true;
  for (const auto& [name, samples] : benchmarks) {
    for (size_t i = 0; i < samples.size(); ++i) {
      out += std::string(first ? "" : ",") + R"({"name": ")" + name + R"(", "repetition_index": )" +
             std::to_string(i) + R"(, "real_time": )" + std::to_string(samples[i]) + R"(, "cpu_time": )" +
             std::to_string(samples[i]) + R"(, "time_unit": "ns"})";
      first = false;
    }
  }
  return out + "]}";
}

// The comparison of two such runs, in benchmarks mode.
inline Report compare_samples(const NamedSamples& base, const NamedSamples& contender,
                              const Settings& settings = Settings()) {
  Report report = build_report(pair_by_name(runjson::parse_run(run_json(base), "base"),
                                            runjson::parse_run(run_json(contender), "new"), NameFilter()),
                               settings);
  report.mode = "benchmarks";
  return report;
}

// Forty quiet pairs (CV <= 3.6%, 9 repetitions, 5% threshold): 37 unchanged,
// "many/clean_regression" +30% (p = 0.0004), and "many/moderate_regression"
// +6% / "many/moderate_improvement" -6% (p = 0.0062 each: significant at 0.05
// on their own, not after Holm's correction over 40 pairs, which needs
// p < 0.05/39 = 0.00128 at their rank).
struct ManyPairs {
  NamedSamples base;
  NamedSamples contender;
};

inline ManyPairs many_pairs() {
  const std::vector<double> quiet = {96, 97, 98, 99, 100, 101, 102, 103, 104};
  ManyPairs out;
  for (int i = 0; i < 37; ++i) {
    out.base.emplace_back("many/same/" + std::to_string(i), quiet);
    out.contender.emplace_back("many/same/" + std::to_string(i), quiet);
  }
  const std::pair<const char*, std::vector<double>> changed[] = {
      {"many/clean_regression", {126, 127, 128, 129, 130, 131, 132, 133, 134}},
      {"many/moderate_regression", {100.5, 101.5, 102.5, 104.5, 106, 107, 108, 109, 110}},
      {"many/moderate_improvement", {90, 91, 92, 93, 94, 95.5, 97.5, 98.5, 99.5}},
  };
  for (const auto& [name, samples] : changed) {
    out.base.emplace_back(name, quiet);
    out.contender.emplace_back(name, samples);
  }
  return out;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gptbench-compare-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace gptbench::compare::test_util
