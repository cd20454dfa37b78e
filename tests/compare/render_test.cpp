// Each output format on the planted-slowdown comparison: what must be there.
#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "runjson/load.h"
#include "compare/render.h"
#include "test_util.h"

namespace gptbench::compare {
using runjson::load_run_file;

namespace {

using test_util::data_path;

constexpr const char* kPlanted = "softmax/fused/fp32/rows:64/cols:1024";
constexpr const char* kNoisy = "gemm/blocked/fp32/M:48";  // robust CV over 10% on both sides

Report planted_report() {
  const auto base = load_run_file(data_path("gb171_aa_base.json"));
  const auto contender = load_run_file(data_path("gb171_slow_new.json"));
  Report report = build_report(pair_by_name(base, contender, NameFilter()), test_util::fixture_settings());
  report.mode = "benchmarks";
  report.base_source = "base.json";
  report.contender_source = "new.json";
  report.removed = {"gemm/old/fp32"};
  report.added = {"gemm/new|pipe/fp32"};
  report.context = {ContextDifference{"gpu_name", "NVIDIA H200", "NVIDIA H100", true}};
  return report;
}

const PairResult& planted(const Report& report) {
  for (const PairResult& result : report.results) {
    if (result.name == kPlanted) return result;
  }
  throw std::runtime_error("planted benchmark missing");
}

TEST(RenderText, TableVerdictsSummaryAndNoColourByDefault) {
  const std::string text = render_text(planted_report(), TextOptions{false});
  EXPECT_EQ(text.find("\033["), std::string::npos);
  EXPECT_NE(text.find("alpha 0.05, correction holm (7 pairs, p < "), std::string::npos) << text.substr(0, 200);
  EXPECT_NE(text.find("!! ENVIRONMENT DIFFERS: gpu_name: 'NVIDIA H200' vs 'NVIDIA H100'"), std::string::npos);
  // The planted row carries its verdict on the same line.
  const size_t row = text.find(std::string(kPlanted) + " ");
  ASSERT_NE(row, std::string::npos);
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find("REGRESSION"), std::string::npos) << line;
  EXPECT_NE(line.find("+29"), std::string::npos) << line;
  // The MDE column: the threshold where the test sees less, "none" where the noise hides any change.
  EXPECT_NE(text.find("  p-value    MDE     CV  Verdict\n"), std::string::npos) << text;
  EXPECT_NE(line.find("  10.0%  "), std::string::npos) << line;
  const size_t noisy = text.find(std::string(kNoisy) + " ");
  ASSERT_NE(noisy, std::string::npos);
  EXPECT_NE(text.substr(noisy, text.find('\n', noisy) - noisy).find("   none  "), std::string::npos);
  EXPECT_NE(text.find("Only in base (1):\n  - gemm/old/fp32"), std::string::npos);
  EXPECT_NE(text.find("Only in new (1):\n  + gemm/new|pipe/fp32"), std::string::npos);
  EXPECT_NE(text.find("Geomean new/base time: "), std::string::npos);
  EXPECT_NE(text.find("FAIL: 1 regression(s)"), std::string::npos);
  EXPECT_NE(text.find("optim/adamw_check/fp32/model:tiny: not_compared (errored in base: wrong result"),
            std::string::npos);
}

TEST(RenderText, ColourOnlyWhenAsked) {
  const std::string text = render_text(planted_report(), TextOptions{true});
  EXPECT_NE(text.find("\033[31mREGRESSION\033[0m"), std::string::npos);
}

TEST(RenderMarkdown, PullRequestReady) {
  const std::string markdown = render_markdown(planted_report());
  EXPECT_EQ(markdown.rfind("### gptbench-compare: :x: FAIL: 1 regression(s)", 0), 0u) << markdown.substr(0, 80);
  EXPECT_NE(markdown.find("alpha 0.05, correction holm (7 pairs"), std::string::npos);
  EXPECT_NE(markdown.find("> :warning: **Environment differs between the runs**"), std::string::npos);
  EXPECT_NE(markdown.find("| `softmax` |"), std::string::npos);  // family geomean table
  EXPECT_NE(markdown.find("#### Changes"), std::string::npos);
  const size_t changes = markdown.find("#### Changes");
  const size_t details = markdown.find("<details>");
  const size_t row = markdown.find(std::string("| `") + kPlanted + "` |", changes);
  EXPECT_LT(row, details);  // listed among the changes, before the full table
  EXPECT_NE(markdown.find("**regression**", row), std::string::npos);
  EXPECT_NE(markdown.find("| Change | ±95% | p-value | MDE | CV | Verdict |\n|---|---:|---:|---:|---:|---:|---:|---:|---|"),
            std::string::npos);
  EXPECT_NE(markdown.find("| 0.0002 | 10.0% | "), std::string::npos);
  EXPECT_NE(markdown.find(std::string("| `") + kNoisy + "` |"), std::string::npos);
  EXPECT_NE(markdown.find(" | none | "), std::string::npos);
  EXPECT_EQ(markdown.find("Rows marked *informational*"), std::string::npos);  // none here
  EXPECT_NE(markdown.find("`gemm/new|pipe/fp32`"), std::string::npos);
  EXPECT_NE(markdown.find("</details>"), std::string::npos);
}

TEST(RenderJson, EveryNumberIsThere) {
  const Report report = planted_report();
  const nlohmann::json json = nlohmann::json::parse(render_json(report));
  EXPECT_EQ(json["tool"], "gptbench-compare");
  EXPECT_EQ(json["exit_code"], 1);
  EXPECT_EQ(json["environment_differs"], true);
  EXPECT_EQ(json["summary"]["verdicts"]["regression"], 1);
  EXPECT_EQ(json["settings"]["correction"], "holm");
  EXPECT_DOUBLE_EQ(json["settings"]["alpha"].get<double>(), 0.05);
  EXPECT_EQ(json["summary"]["tested_pairs"], 7);
  EXPECT_DOUBLE_EQ(json["summary"]["p_cutoff"].get<double>(), report.summary.p_cutoff);
  EXPECT_DOUBLE_EQ(json["summary"]["geomean"].get<double>(), report.summary.geomean);
  EXPECT_EQ(json["removed"], nlohmann::json::array({"gemm/old/fp32"}));
  const PairResult& expected = planted(report);
  bool found = false;
  for (const nlohmann::json& bench : json["benchmarks"]) {
    if (bench["name"] != kPlanted) continue;
    found = true;
    const nlohmann::json& time = bench["time"];
    EXPECT_EQ(bench["verdict"], "regression");
    EXPECT_DOUBLE_EQ(time["change"].get<double>(), expected.time.change);
    EXPECT_DOUBLE_EQ(time["u_test"]["p_value"].get<double>(), expected.time.u_test.p_value);
    EXPECT_EQ(time["u_test"]["method"], "asymptotic");
    EXPECT_DOUBLE_EQ(time["base"]["median"].get<double>(), expected.time.base.median);
    EXPECT_EQ(time["new"]["samples"].size(), 10u);
    EXPECT_DOUBLE_EQ(time["mde"].get<double>(), 0.10);  // the threshold
    EXPECT_EQ(time["mde_limited_by"], "threshold");
    EXPECT_DOUBLE_EQ(time["mde_test"].get<double>(), expected.time.mde.test);
    EXPECT_LT(time["mde_test"].get<double>(), 0.10);
    EXPECT_EQ(bench["informational"], false);
    EXPECT_FALSE(bench["counters"].empty());
  }
  EXPECT_TRUE(found);
  // No change could have been detected on the noisy one: null, and why.
  for (const nlohmann::json& bench : json["benchmarks"]) {
    if (bench["name"] != kNoisy) continue;
    EXPECT_TRUE(bench["time"]["mde"].is_null());
    EXPECT_EQ(bench["time"]["mde_limited_by"], "noise");
  }
  EXPECT_EQ(json["summary"]["informational"]["tested_pairs"], 0);
  // The benchmark that never ran has no time block but says why.
  for (const nlohmann::json& bench : json["benchmarks"]) {
    if (bench["verdict"] == "not_compared") {
      EXPECT_TRUE(bench["time"].is_null());
      EXPECT_NE(bench["status_message"].get<std::string>().find("wrong result"), std::string::npos);
    }
  }
}

// The JSON is written piece by piece; it must read as one nlohmann document
// dumped with indent 2 (sorted keys, nlohmann's number formatting, NaN as null),
// which is what the output was when it was built as one DOM.
void expect_one_document_dump(const Report& report) {
  const std::string text = render_json(report);
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json.dump(2) + "\n", text);
  std::vector<std::string> keys;
  for (const auto& item : json.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"added", "base", "benchmarks", "context_differences",
                                            "environment_differs", "exit_code", "format_version", "gate", "mode",
                                            "new", "removed", "settings", "summary", "tool"}));
  EXPECT_EQ(json["added"], nlohmann::json(report.added));
  EXPECT_EQ(json["removed"], nlohmann::json(report.removed));
  EXPECT_EQ(json["base"], nlohmann::json({{"source", report.base_source}, {"label", report.base_label}}));
  EXPECT_EQ(json["exit_code"], exit_code(report));
  EXPECT_EQ(json["gate"], gate_message(report));
  ASSERT_EQ(json["benchmarks"].size(), report.results.size());
  for (size_t i = 0; i < report.results.size(); ++i) {
    const nlohmann::json& bench = json["benchmarks"][i];
    const PairResult& result = report.results[i];
    EXPECT_EQ(bench["name"], result.name);
    EXPECT_EQ(bench["counters"].size(), result.counters.size());
    if (bench["time"].is_null()) continue;
    EXPECT_EQ(bench["time"]["base"]["samples"], nlohmann::json(result.time.base.samples));
    EXPECT_EQ(bench["time"]["new"]["samples"], nlohmann::json(result.time.contender.samples));
  }
  ASSERT_EQ(json["context_differences"].size(), report.context.size());
  for (size_t i = 0; i < report.context.size(); ++i) {
    EXPECT_EQ(json["context_differences"][i]["key"], report.context[i].key);
  }
}

TEST(RenderJson, StreamedAsOneDocument) {
  expect_one_document_dump(planted_report());
  // Empty arrays, a NaN, and names that need escaping.
  Report report = planted_report();
  report.added.clear();
  report.removed.clear();
  report.context.clear();
  report.summary.geomean = std::numeric_limits<double>::quiet_NaN();
  report.results.front().name = "quote\" back\\slash\nnewline\ttab \xc3\xbc";
  report.results.back().counters.clear();
  expect_one_document_dump(report);
  EXPECT_TRUE(nlohmann::json::parse(render_json(report))["summary"]["geomean"].is_null());
}

TEST(RenderHtml, SelfContainedWithInlineSvgCharts) {
  const std::string html = render_html(planted_report());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // no external resource of any kind
  EXPECT_EQ(html.find("<link"), std::string::npos);
  size_t charts = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++charts;
  EXPECT_EQ(charts, 2u);  // geomean per family, change per benchmark
  EXPECT_NE(html.find("Environment differs"), std::string::npos);
  EXPECT_NE(html.find(std::string("<title>") + kPlanted), std::string::npos);  // one chart row per benchmark
  EXPECT_NE(html.find("gemm/new|pipe/fp32"), std::string::npos);
  EXPECT_NE(html.find("class='gate fail'"), std::string::npos);
  EXPECT_NE(html.find("alpha 0.05, correction holm (7 pairs, p &lt; "), std::string::npos);
  EXPECT_NE(html.find("<th>p-value</th><th>MDE</th><th>CV</th>"), std::string::npos);
  EXPECT_NE(html.find("</td><td>0.0002</td><td>10.0%</td>"), std::string::npos);
  EXPECT_NE(html.find("</td><td>none</td>"), std::string::npos);
}

TEST(RenderHtml, EscapesNames) {
  Report report = planted_report();
  report.added = {"<script>alert(1)</script>"};
  const std::string html = render_html(report);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
}

}  // namespace
}  // namespace gptbench::compare
