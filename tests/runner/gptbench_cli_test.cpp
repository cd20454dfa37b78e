// Bad command lines through the real processes: gptbench-run (always) and, in the full build,
// gptbench itself on the CPU. Each must fail with one line and the documented exit code before
// running anything; what the flags allow must still run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child.h"
#include "gb_json.h"

namespace gptbench::runner {
namespace {

namespace fs = std::filesystem;

// Non-empty lines of `text`.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// Exit code 2, nothing on stdout, and exactly `line` on stderr.
void expect_refused(const std::vector<std::string>& argv, const std::string& line) {
  const Captured c = run_captured(argv);
  EXPECT_FALSE(c.status.signaled) << describe(c.status);
  EXPECT_EQ(c.status.code, 2) << c.err;
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(lines_of(c.err), std::vector<std::string>{line}) << argv.back();
}

TEST(GptbenchRunCli, InvalidFilterExits2WithOneLine) {
  const std::string out = (fs::temp_directory_path() / "gptbench_cli_never_written.json").string();
  expect_refused({GPTBENCH_RUNNER_EXE, "--binary", GPTBENCH_FAKE_EXE, "-o", out, "--benchmark_filter=("},
                 "gptbench-run: --benchmark_filter='(' is not a valid POSIX extended regular "
                 "expression: Mismatched '(' and ')' in regular expression");
  EXPECT_FALSE(fs::exists(out));
}

#ifdef GPTBENCH_REAL_EXE
std::vector<std::string> gptbench(std::vector<std::string> flags) {
  flags.insert(flags.begin(), {GPTBENCH_REAL_EXE, "--gptbench_device=cpu"});
  return flags;
}

// The custom model's fields survive --gptbench_models' split at commas, in both spellings, and
// give the same benchmark names.
TEST(GptbenchCli, CustomModelListsBenchmarksNamedWithIt) {
  std::vector<std::string> listed[2];
  int i = 0;
  for (const char* models : {"--gptbench_models=custom:L=2:d=64:h=2", "--gptbench_models=custom:L=2,d=64,h=2"}) {
    const Captured c = run_captured(gptbench({models, "--benchmark_list_tests", "--benchmark_filter=/custom:"}));
    EXPECT_EQ(c.status.code, 0) << models << ": " << c.err;
    listed[i++] = lines_of(c.out);
  }
  ASSERT_FALSE(listed[0].empty());
  for (const std::string& name : listed[0])
    EXPECT_NE(name.find("custom:L=2:d=64:h=2"), std::string::npos) << name;
  EXPECT_EQ(listed[0], listed[1]);
}

TEST(GptbenchCli, InvalidFilterExits2WithOneLine) {
  for (const char* list : {"--benchmark_list_tests=false", "--benchmark_list_tests=true"})
    expect_refused(gptbench({list, "--benchmark_filter=("}),
                   "gptbench: --benchmark_filter='(' is not a valid POSIX extended regular "
                   "expression: Mismatched '(' and ')' in regular expression");
}

// Consistent with Google Benchmark's own message for it, which is the one line printed;
// gptbench-run reads that exit code as an empty selection (exit 2, nothing written).
TEST(GptbenchCli, FilterMatchingNothingExits1) {
  for (const char* list : {"--benchmark_list_tests=false", "--benchmark_list_tests=true"}) {
    const Captured c = run_captured(gptbench({list, "--benchmark_filter=^no_such_family/"}));
    EXPECT_EQ(c.status.code, 1) << list << ": " << c.err;
    EXPECT_NE(c.err.find("Failed to match any benchmarks against regex: ^no_such_family/"),
              std::string::npos)
        << c.err;
  }
  const std::string out = (fs::temp_directory_path() / "gptbench_cli_never_written.json").string();
  expect_refused({GPTBENCH_RUNNER_EXE, "--binary", GPTBENCH_REAL_EXE, "-o", out, "--gptbench_device=cpu",
                  "--benchmark_filter=^no_such_family/"},
                 "gptbench-run: no benchmark matches the filter '^no_such_family/'");
  EXPECT_FALSE(fs::exists(out));
}

// Sizes no device could hold stop at flag parsing, before LibTorch allocates anything.
TEST(GptbenchCli, UnusableSizesExit2WithOneLine) {
  expect_refused(gptbench({"--gptbench_batch=99999999999"}),
                 "gptbench: --gptbench_batch: got '99999999999'; allowed: a whole number from 1 "
                 "to 2147483647");
  expect_refused(gptbench({"--gptbench_batch=0"}),
                 "gptbench: --gptbench_batch: got '0'; allowed: a whole number from 1 to 2147483647");
  expect_refused(gptbench({"--gptbench_batch=65536", "--gptbench_seq=65536"}),
                 "gptbench: --gptbench_batch=65536 --gptbench_seq=65536: B·T = 4.29e+09 tokens per "
                 "step; the limit is 2147483647 (B·T is the row count of every model GEMM, a "
                 "32-bit int in cuBLAS)");
  expect_refused(gptbench({"--gptbench_models=custom:L=2:d=64:h=2:V=99999999999"}),
                 "gptbench: --gptbench_models: custom model 'custom:L=2:d=64:h=2:V=99999999999': "
                 "field V got '99999999999'; allowed: a whole number from 1 to 2147483647");
}

// The console shows what ran and one line per family for what was skipped; the JSON file
// keeps every skipped row with its reason.
TEST(GptbenchCli, SkippedRowsAreSummarisedOnTheConsoleAndKeptInTheFile) {
  const fs::path json = fs::temp_directory_path() / ("gptbench_cli_skips_" + std::to_string(::getpid()) + ".json");
  const Captured c = run_captured(gptbench({"--benchmark_filter=^(attention/sdpa_efficient/fp32/|layernorm/torch/fp32/fwd/)",
                                            "--benchmark_min_time=0.001", "--benchmark_out=" + json.string()}));
  ASSERT_EQ(c.status.code, 0) << c.err;
  EXPECT_EQ(c.out.find("ERROR OCCURRED"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("layernorm/torch/fp32/fwd/"), std::string::npos) << c.out;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  size_t skipped = 0;
  for (const auto& row : read_gb_json(text.str()).rows)
    if (row.value("error_message", "") == "skipped: sdpa_efficient runs on CUDA only") ++skipped;
  EXPECT_GT(skipped, 0u);
  EXPECT_NE(c.out.find("attention: " + std::to_string(skipped) +
                       " benchmarks skipped: sdpa_efficient runs on CUDA only\n"),
            std::string::npos)
      << c.out;
  fs::remove(json);
}
#endif

}  // namespace
}  // namespace gptbench::runner
