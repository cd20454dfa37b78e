// scripts/premerge.sh end to end with a fake suite binary
// (tests/compare/data/fake_gptbench.sh): interleaving, merging, gating.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace gptbench::compare {
namespace {

struct ScriptResult {
  int code = -1;
  std::string log;         // invocation order of the fake binaries
  std::string verify_log;  // their --gptbench_verify value, in the same order
};

ScriptResult run_premerge(const test_util::TempDir& dir, const std::string& new_slowdown, const std::string& extra = "") {
  const std::string fake = test_util::data_path("fake_gptbench.sh");
  test_util::write_file(dir.file("base.sh"), "#!/bin/sh\nFAKE_SIDE=A exec " + fake + " \"$@\"\n");
  test_util::write_file(dir.file("new.sh"),
                        "#!/bin/sh\nFAKE_SIDE=B FAKE_SLOWDOWN=" + new_slowdown + " exec " + fake + " \"$@\"\n");
  const std::string command = "chmod +x " + dir.file("base.sh") + " " + dir.file("new.sh") + " && FAKE_LOG=" +
                              dir.file("order.log") + " FAKE_VERIFY_LOG=" + dir.file("verify.log") + " bash " + std::string(GPTBENCH_COMPARE_TEST_DATA) +
                              "/../../scripts/premerge.sh --base-bin " + dir.file("base.sh") + " --new-bin " +
                              dir.file("new.sh") + " --device cpu --rounds 6 --out " + dir.file("out") +
                              " --compare " + GPTBENCH_COMPARE_EXE + " " + extra + " >" + dir.file("stdout") +
                              " 2>" + dir.file("stderr");
  const int status = std::system(command.c_str());
  ScriptResult result;
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.log = test_util::read_file(dir.file("order.log"));
  result.verify_log = test_util::read_file(dir.file("verify.log"));
  return result;
}

TEST(Premerge, InterleavesRoundsAndPassesOnAA) {
  test_util::TempDir dir;
  const ScriptResult result = run_premerge(dir, "1.0");
  EXPECT_EQ(result.code, 0) << test_util::read_file(dir.file("stderr"));
  EXPECT_EQ(result.log, "A cpu\nB cpu\nA cpu\nB cpu\nA cpu\nB cpu\nA cpu\nB cpu\nA cpu\nB cpu\nA cpu\nB cpu\n");
  // Round 0 checks results (both sides); later rounds only time.
  std::string expected_verify = "A verify=true\nB verify=true\n";
  for (int round = 1; round < 6; ++round) expected_verify += "A verify=false\nB verify=false\n";
  EXPECT_EQ(result.verify_log, expected_verify);
  const nlohmann::json merged = nlohmann::json::parse(test_util::read_file(dir.file("out/base.json")));
  EXPECT_EQ(merged["benchmarks"].size(), 12u);  // 2 benchmarks x 6 rounds
  EXPECT_EQ(merged["benchmarks"][5]["repetition_index"], 5);
  EXPECT_NE(test_util::read_file(dir.file("out/report.md")).find("PASS"), std::string::npos);
  EXPECT_NE(test_util::read_file(dir.file("out/report.html")).find("<svg"), std::string::npos);
}

TEST(Premerge, GatesOnAPlantedSlowdown) {
  test_util::TempDir dir;
  const ScriptResult result = run_premerge(dir, "1.2", "-- --format markdown");
  EXPECT_EQ(result.code, 1);
  const std::string report = test_util::read_file(dir.file("stdout"));
  EXPECT_NE(report.find("FAIL: 1 regression(s)"), std::string::npos) << report;
  EXPECT_NE(report.find("| `softmax/fused/bf16/rows:8/cols:1024` |"), std::string::npos);
}

TEST(Premerge, UsageErrorsExitTwo) {
  test_util::TempDir dir;
  const std::string script = std::string(GPTBENCH_COMPARE_TEST_DATA) + "/../../scripts/premerge.sh";
  const int status = std::system(("bash " + script + " --rounds 1 --base-bin /bin/true --new-bin /bin/true 2>/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const int missing = std::system(("bash " + script + " --out " + dir.file("o") + " /no/such/dir HEAD 2>/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(missing), 2);
}

}  // namespace
}  // namespace gptbench::compare
