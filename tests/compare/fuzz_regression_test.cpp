// Inputs kept from fuzzing (tests/compare/data/fuzz/): each must load or fail
// with a LoadError naming the file, and a loaded run must compare with itself.
#include <gtest/gtest.h>

#include <filesystem>

#include "runjson/load.h"
#include "compare/report.h"
#include "test_util.h"

namespace gptbench::compare {
using runjson::LoadError;
using runjson::load_run_file;

namespace {

TEST(FuzzRegression, EveryKeptInputLoadsOrFailsCleanly) {
  size_t files = 0;
  size_t loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test_util::data_path("fuzz"))) {
    ++files;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    try {
      const auto run = load_run_file(path);
      const Report report = build_report(pair_by_name(run, run, NameFilter()), Settings());
      EXPECT_EQ(report.results.size(), run.benchmarks.size());
      EXPECT_NE(exit_code(report), 1);  // a run never regresses against itself
      ++loaded;
    } catch (const LoadError& error) {
      EXPECT_EQ(std::string(error.what()).rfind(path + ": ", 0), 0u) << error.what();
    }
  }
  EXPECT_GE(files, 4u);
  EXPECT_GE(loaded, 1u);
}

TEST(FuzzRegression, DeepNestingIsIgnoredNotRecursed) {
  const auto run = load_run_file(test_util::data_path("fuzz/deep_context.json"));
  EXPECT_TRUE(run.benchmarks.empty());
  EXPECT_THROW((void)load_run_file(test_util::data_path("fuzz/deep_nesting.json")), LoadError);
}

TEST(FuzzRegression, NonFiniteTokensInsideStringsAreLeftAlone) {
  const auto run = load_run_file(test_util::data_path("fuzz/nan_tokens_everywhere.json"));
  ASSERT_EQ(run.benchmarks.size(), 1u);
  EXPECT_EQ(run.benchmarks[0].name, "NaN");
  ASSERT_EQ(run.benchmarks[0].counters.size(), 1u);  // "x": -Infinity; "y" is a plain string
  EXPECT_EQ(run.benchmarks[0].counters[0].name, "x");
}

}  // namespace
}  // namespace gptbench::compare
