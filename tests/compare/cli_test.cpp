// The command line end to end (in process): modes, formats, exit codes and
// one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace gptbench::compare {
namespace {

using test_util::data_path;
using test_util::kFixtureThresholdText;
using test_util::run;

bool one_line_error(const std::string& err) {
  return err.rfind("gptbench-compare: error: ", 0) == 0 && err.find('\n') == err.size() - 1;
}

TEST(Cli, AAExitsZeroPlantedSlowdownExitsOne) {
  const auto aa = run({"benchmarks", data_path("gb171_aa_base.json"), data_path("gb171_aa_new.json")});
  EXPECT_EQ(aa.code, 0) << aa.out << aa.err;
  EXPECT_NE(aa.out.find("PASS: 0 regression(s)"), std::string::npos);
  const auto slow = run({"benchmarks", data_path("gb171_aa_base.json"), data_path("gb171_slow_new.json"),
                         "--threshold", kFixtureThresholdText});
  EXPECT_EQ(slow.code, 1);
  EXPECT_NE(slow.out.find("FAIL: 1 regression(s)"), std::string::npos);
}

// Counters the suite does not declare (compare/counter_table.h) are judged from their names,
// and the note names them; declared ones pass silently.
TEST(Cli, UndeclaredCountersAreNamedInANote) {
  test_util::TempDir dir;
  std::string rows;
  for (int r = 0; r < 3; ++r) {
    rows += std::string(r ? "," : "") +
            R"({"name": "comm/x/manual_time", "family_index": 0, "per_family_instance_index": 0, )"
            R"("run_name": "comm/x/manual_time", "run_type": "iteration", "repetitions": 3, "repetition_index": )" +
            std::to_string(r) +
            R"(, "threads": 1, "iterations": 10, "real_time": 100, "cpu_time": 100, "time_unit": "us", )"
            R"("busbw_GBps": 300, "mystery_counter": 5})";
  }
  test_util::write_file(dir.file("run.json"), R"({"context": {}, "benchmarks": [)" + rows + "]}");
  const auto result = run({"benchmarks", dir.file("run.json"), dir.file("run.json")});
  EXPECT_EQ(result.code, 0) << result.err;
  EXPECT_NE(result.err.find("note: counters with no declared direction"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("mystery_counter"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("busbw_GBps"), std::string::npos) << result.err;
}

TEST(Cli, FilterRestrictsTheComparison) {
  const auto result = run({"benchmarks", data_path("gb171_aa_base.json"), data_path("gb171_slow_new.json"),
                           "--threshold", kFixtureThresholdText, "--filter", "^gemm/"});
  EXPECT_EQ(result.code, 0);
  EXPECT_EQ(result.out.find("softmax/"), std::string::npos);
  const auto none = run({"benchmarks", data_path("gb171_aa_base.json"), data_path("gb171_slow_new.json"),
                         "--filter", "^nothing"});
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(one_line_error(none.err)) << none.err;
}

TEST(Cli, ThresholdAndConfigOptions) {
  const std::vector<std::string> files = {data_path("gb171_aa_base.json"), data_path("gb171_slow_new.json")};
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--threshold", kFixtureThresholdText}).code, 1);
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--threshold", "50%"}).code, 0);
  EXPECT_EQ(run({"--threshold=0.5", "benchmarks", files[0], files[1]}).code, 0);  // options before the mode
  test_util::TempDir dir;
  test_util::write_file(dir.file("t.ini"), "softmax/fused/ = 40%\n");
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--threshold", kFixtureThresholdText, "--config", dir.file("t.ini")})
                .code,
            0);
  test_util::write_file(dir.file("bad.ini"), "softmax/fused/ 40%\n");
  const auto bad = run({"benchmarks", files[0], files[1], "--config", dir.file("bad.ini")});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(one_line_error(bad.err)) << bad.err;
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--alpha", "1.5"}).code, 2);
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--filter", "(unclosed"}).code, 2);
}

TEST(Cli, CorrectionOption) {
  test_util::TempDir dir;
  const test_util::ManyPairs runs = test_util::many_pairs();
  test_util::write_file(dir.file("base.json"), test_util::run_json(runs.base));
  test_util::write_file(dir.file("new.json"), test_util::run_json(runs.contender));
  const std::vector<std::string> files = {dir.file("base.json"), dir.file("new.json")};
  const auto verdicts = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"benchmarks", files[0], files[1], "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto result = run(args);
    EXPECT_EQ(result.code, 1) << result.err;
    return nlohmann::json::parse(result.out);
  };
  // Default: Holm over the 40 pairs keeps only the clean regression.
  const nlohmann::json holm = verdicts({});
  EXPECT_EQ(holm["settings"]["correction"], "holm");
  EXPECT_EQ(holm["summary"]["verdicts"]["regression"], 1);
  EXPECT_EQ(holm["summary"]["verdicts"]["improvement"], 0);
  EXPECT_EQ(holm["summary"]["tested_pairs"], 40);
  EXPECT_EQ(verdicts({"--correction", "holm"}), holm);
  // none: each pair at alpha on its own, as before the correction existed.
  const nlohmann::json none = verdicts({"--correction=none"});
  EXPECT_EQ(none["settings"]["correction"], "none");
  EXPECT_EQ(none["summary"]["verdicts"]["regression"], 2);
  EXPECT_EQ(none["summary"]["verdicts"]["improvement"], 1);
  EXPECT_NE(run({"benchmarks", files[0], files[1], "--correction", "none"}).out.find("alpha 0.05, correction none,"),
            std::string::npos);
  for (const char* bad : {"bonferroni", "Holm", ""}) {
    const auto result = run({"benchmarks", files[0], files[1], "--correction", bad});
    EXPECT_EQ(result.code, 2) << bad;
    EXPECT_TRUE(one_line_error(result.err)) << result.err;
  }
}

TEST(Cli, FiltersModePairsImplementations) {
  const auto result = run({"filters", data_path("filters_softmax.json"), "torch", "fused", "--format", "json"});
  EXPECT_EQ(result.code, 0) << result.err;
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["mode"], "filters");
  EXPECT_EQ(json["benchmarks"].size(), 2u);
  EXPECT_EQ(json["summary"]["verdicts"]["improvement"], 2);
  EXPECT_EQ(json["removed"].size(), 1u);
  // Reversed, the faster implementation is the base: both pairs regress.
  EXPECT_EQ(run({"filters", data_path("filters_softmax.json"), "fused", "torch"}).code, 1);
  EXPECT_EQ(run({"filters", data_path("filters_softmax.json"), "torch", "torch"}).code, 2);
}

TEST(Cli, InputErrorsAreOneLineWithExitTwo) {
  for (const std::string& bad : {data_path("malformed/empty.json"), data_path("malformed/truncated.json"),
                                 data_path("malformed/duplicate_iteration.json"), std::string("/no/such/file.json")}) {
    const auto result = run({"benchmarks", bad, data_path("gb171_aa_new.json")});
    EXPECT_EQ(result.code, 2) << bad;
    EXPECT_TRUE(one_line_error(result.err)) << result.err;
    EXPECT_NE(result.err.find(bad), std::string::npos) << result.err;
    EXPECT_TRUE(result.out.empty());
  }
}

TEST(Cli, UsageErrorsExitTwoAndHelpExitsZero) {
  EXPECT_EQ(run({}).code, 2);
  EXPECT_EQ(run({"benchmarks", data_path("gb171_aa_base.json")}).code, 2);
  EXPECT_EQ(run({"frobnicate"}).code, 2);
  EXPECT_EQ(run({"benchmarks", "a", "b", "--format", "yaml"}).code, 2);
  const auto help = run({"--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("benchmarks"), std::string::npos);
}

TEST(Cli, StrictContext) {
  const auto loose = run({"benchmarks", data_path("context_h200.json"), data_path("context_h100.json")});
  EXPECT_EQ(loose.code, 0);
  EXPECT_NE(loose.out.find("ENVIRONMENT DIFFERS: gpu_name"), std::string::npos);
  const auto strict =
      run({"benchmarks", data_path("context_h200.json"), data_path("context_h100.json"), "--strict-context"});
  EXPECT_EQ(strict.code, 2);
  EXPECT_TRUE(one_line_error(strict.err)) << strict.err;
}

TEST(Cli, ColourOnlyOnATerminalAndNeverWithNoColor) {
  const std::vector<std::string> args = {"benchmarks", data_path("gb171_aa_base.json"), data_path("gb171_slow_new.json"),
                                         "--threshold", kFixtureThresholdText};
  EXPECT_EQ(run(args, false).out.find("\033["), std::string::npos);
  EXPECT_NE(run(args, true).out.find("\033["), std::string::npos);
  std::vector<std::string> no_color = args;
  no_color.push_back("--no-color");
  EXPECT_EQ(run(no_color, true).out.find("\033["), std::string::npos);
}

TEST(Cli, MarkdownJsonAndHtmlOutputs) {
  const std::vector<std::string> files = {data_path("gb171_aa_base.json"), data_path("gb171_slow_new.json")};
  const std::string threshold = std::string("--threshold=") + kFixtureThresholdText;
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--format=markdown"}).out.rfind("### gptbench-compare", 0), 0u);
  const auto json = run({"benchmarks", files[0], files[1], threshold, "--format=json"});
  EXPECT_EQ(nlohmann::json::parse(json.out)["exit_code"], 1);
  test_util::TempDir dir;
  const auto html = run({"benchmarks", files[0], files[1], threshold, "--html", dir.file("r.html")});
  EXPECT_EQ(html.code, 1);
  EXPECT_NE(test_util::read_file(dir.file("r.html")).find("<svg"), std::string::npos);
  EXPECT_EQ(run({"benchmarks", files[0], files[1], "--html", "/no/such/dir/r.html"}).code, 2);
}

TEST(Cli, MergeSubcommandThenCompare) {
  test_util::TempDir dir;
  const std::string round =
      R"({"benchmarks": [{"name": "a", "repetition_index": 0, "real_time": %s, "cpu_time": 1, "time_unit": "ns"}]})";
  std::vector<std::string> base_files, new_files;
  for (int i = 0; i < 9; ++i) {
    char text[256];
    std::snprintf(text, sizeof text, round.c_str(), std::to_string(100 + i).c_str());
    base_files.push_back(dir.file("a" + std::to_string(i) + ".json"));
    test_util::write_file(base_files.back(), text);
    std::snprintf(text, sizeof text, round.c_str(), std::to_string(120 + i).c_str());
    new_files.push_back(dir.file("b" + std::to_string(i) + ".json"));
    test_util::write_file(new_files.back(), text);
  }
  std::vector<std::string> args = {"merge", dir.file("base.json")};
  args.insert(args.end(), base_files.begin(), base_files.end());
  EXPECT_EQ(run(args).code, 0);
  args = {"merge", dir.file("new.json")};
  args.insert(args.end(), new_files.begin(), new_files.end());
  EXPECT_EQ(run(args).code, 0);
  const auto result = run({"benchmarks", dir.file("base.json"), dir.file("new.json"), "--format", "json"});
  EXPECT_EQ(result.code, 1);
  const nlohmann::json json = nlohmann::json::parse(result.out);
  EXPECT_EQ(json["benchmarks"][0]["time"]["base"]["n"], 9);
  EXPECT_EQ(json["benchmarks"][0]["verdict"], "regression");
  EXPECT_EQ(run({"merge", dir.file("x.json"), data_path("malformed/empty.json")}).code, 2);
}

}  // namespace
}  // namespace gptbench::compare
