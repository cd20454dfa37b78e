// Device rows and host-launched rows: a launch:eager row whose launch:graph sibling is compared
// in the same comparison is informational (reported, never gating); without that sibling it
// gates as any row.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compare/launch_axis.h"
#include "compare/render.h"
#include "test_util.h"

namespace gptbench::compare {
namespace {

using test_util::NamedSamples;
using test_util::compare_samples;

constexpr const char* kGraph = "softmax/fused/bf16/rows:4096/launch:graph/manual_time";
constexpr const char* kEager = "softmax/fused/bf16/rows:4096/launch:eager/manual_time";

const std::vector<double> kQuiet = {96, 97, 98, 99, 100, 101, 102, 103, 104};

std::vector<double> scaled(double factor) {
  std::vector<double> out = kQuiet;
  for (double& v : out) v *= factor;
  return out;
}

// The graph row unchanged, the eager row 30% slower (a clear regression on its own).
struct Runs {
  NamedSamples base = {{kGraph, kQuiet}, {kEager, kQuiet}};
  NamedSamples contender = {{kGraph, kQuiet}, {kEager, scaled(1.3)}};
};


const PairResult& eager_row(const Report& report) {
  for (const PairResult& result : report.results) {
    if (result.name == kEager) return result;
  }
  throw std::runtime_error("no eager row");
}

TEST(LaunchAxis, GraphSiblingName) {
  EXPECT_EQ(graph_sibling(kEager), kGraph);
  EXPECT_EQ(graph_sibling("a/b/launch:eager"), "a/b/launch:graph");
  EXPECT_EQ(graph_sibling(kGraph), "");
  EXPECT_EQ(graph_sibling("a/launch:eagerly"), "");
  EXPECT_EQ(graph_sibling("a/b"), "");
}

TEST(LaunchAxis, InformationalOnlyBesideAComparedGraphRow) {
  const std::vector<std::string> names = {"a/launch:graph", "a/launch:eager", "b/launch:eager", "c/launch:graph",
                                          "c/launch:eager"};
  // c's graph row has no time (skipped: capture was not possible), so c's eager row gates.
  EXPECT_EQ(informational_rows(names, {true, true, true, false, true}),
            (std::vector<bool>{false, true, false, false, false}));
  // An eager row without a time (broken, skipped) is not informational: it is not a time.
  EXPECT_EQ(informational_rows(names, {true, false, true, true, true}),
            (std::vector<bool>{false, false, false, false, true}));
}

TEST(Informational, ARegressionOnAnEagerRowBesideItsGraphRowPasses) {
  const Runs runs;
  const Report report = compare_samples(runs.base, runs.contender);
  const PairResult& eager = eager_row(report);
  EXPECT_TRUE(eager.informational);
  EXPECT_EQ(eager.verdict, Verdict::kRegression);  // still the verdict of its samples
  EXPECT_TRUE(std::isfinite(eager.time.mde.value));
  EXPECT_EQ(exit_code(report), 0);
  EXPECT_EQ(report.summary.verdicts.count(Verdict::kRegression), 0u);
  EXPECT_EQ(report.summary.informational_verdicts.at(Verdict::kRegression), 1u);
  // Each row in its own Holm family: one gated test, one informational.
  EXPECT_EQ(report.summary.tested_pairs, 1u);
  EXPECT_EQ(report.summary.informational_tested_pairs, 1u);
  EXPECT_EQ(gate_message(report),
            "PASS: 0 regression(s), 0 broken, 0 improvement(s), 0 unreliable; 1 informational (not gated): "
            "1 regression(s)");
}

TEST(Informational, TheSameRowWithoutItsGraphSiblingFails) {
  Runs runs;
  runs.base.erase(runs.base.begin());
  runs.contender.erase(runs.contender.begin());
  const Report report = compare_samples(runs.base, runs.contender);
  EXPECT_FALSE(eager_row(report).informational);
  EXPECT_EQ(eager_row(report).verdict, Verdict::kRegression);
  EXPECT_EQ(exit_code(report), 1);
}

TEST(Informational, ABrokenEagerRowStillFails) {
  const Runs runs;
  std::string contender = test_util::run_json({runs.contender[0]});
  contender.insert(contender.size() - 2,
                   std::string(R"(,{"name": ")") + kEager + R"(", "error_occurred": true, "error_message": "wrong result"})");
  const Report report = build_report(pair_by_name(runjson::parse_run(test_util::run_json(runs.base), "base"),
                                                  runjson::parse_run(contender, "new"), NameFilter()),
                                     Settings());
  EXPECT_EQ(eager_row(report).verdict, Verdict::kBroken);
  EXPECT_FALSE(eager_row(report).informational);
  EXPECT_EQ(exit_code(report), 1);
}

TEST(Informational, NoisyEagerRowsAreNotCountedAsUnreliable) {
  Runs runs;
  runs.contender[1].second = {70, 85, 100, 115, 130, 145, 160, 175, 190};  // host-bound noise
  const Report report = compare_samples(runs.base, runs.contender);
  EXPECT_EQ(eager_row(report).verdict, Verdict::kUnreliable);
  EXPECT_EQ(eager_row(report).time.mde.limited_by, MdeLimit::kNoise);
  EXPECT_EQ(report.summary.verdicts.count(Verdict::kUnreliable), 0u);
  EXPECT_EQ(gate_message(report),
            "PASS: 0 regression(s), 0 broken, 0 improvement(s), 0 unreliable; 1 informational (not gated): "
            "1 unreliable");
}

TEST(Informational, EveryReportMarksTheRow) {
  const Runs runs;
  const Report report = compare_samples(runs.base, runs.contender);
  const std::string text = render_text(report, TextOptions{true});
  const size_t row = text.find(std::string(kEager) + " ");
  ASSERT_NE(row, std::string::npos);
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find("REGRESSION (informational)"), std::string::npos) << line;
  EXPECT_EQ(line.find("\033[31m"), std::string::npos) << line;  // not painted as a failure
  EXPECT_NE(text.find(std::string(kEager) + ": regression (informational, not gated: a launch:eager row"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("informational rows apart (1 pairs, p < 0.05 needed)"), std::string::npos) << text;

  const std::string markdown = render_markdown(report);
  EXPECT_NE(markdown.find(std::string("| `") + kEager + "` |"), std::string::npos);
  EXPECT_NE(markdown.find("| regression (informational) |"), std::string::npos) << markdown;
  EXPECT_EQ(markdown.find("**regression"), std::string::npos);
  EXPECT_NE(markdown.find("Rows marked *informational*"), std::string::npos);

  const nlohmann::json json = nlohmann::json::parse(render_json(report));
  EXPECT_EQ(json["exit_code"], 0);
  for (const nlohmann::json& bench : json["benchmarks"]) {
    EXPECT_EQ(bench["informational"], bench["name"] == kEager) << bench["name"];
    EXPECT_EQ(bench["verdict"], bench["name"] == kEager ? "regression" : "same");
  }
  EXPECT_EQ(json["summary"]["verdicts"]["regression"], 0);
  EXPECT_EQ(json["summary"]["informational"]["verdicts"]["regression"], 1);
  EXPECT_EQ(json["summary"]["informational"]["tested_pairs"], 1);

  const std::string html = render_html(report);
  EXPECT_NE(html.find("'>regression (informational)</td>"), std::string::npos);
  EXPECT_NE(html.find("class='gate pass'"), std::string::npos);
  EXPECT_NE(html.find("Rows marked informational"), std::string::npos);
}

TEST(Informational, TheCommandLineExitsZeroBesideTheGraphRowAndOneWithout) {
  const Runs runs;
  const test_util::TempDir dir;
  test_util::write_file(dir.file("base.json"), test_util::run_json(runs.base));
  test_util::write_file(dir.file("new.json"), test_util::run_json(runs.contender));
  const test_util::CliResult both = test_util::run({"benchmarks", dir.file("base.json"), dir.file("new.json")});
  EXPECT_EQ(both.code, 0) << both.out;
  EXPECT_NE(both.out.find("REGRESSION (informational)"), std::string::npos) << both.out;
  // The filter leaves the graph row out of the comparison: the eager row gates.
  const test_util::CliResult alone =
      test_util::run({"benchmarks", dir.file("base.json"), dir.file("new.json"), "--filter", "launch:eager"});
  EXPECT_EQ(alone.code, 1) << alone.out;
  EXPECT_NE(alone.out.find("FAIL: 1 regression(s)"), std::string::npos) << alone.out;
}

}  // namespace
}  // namespace gptbench::compare
