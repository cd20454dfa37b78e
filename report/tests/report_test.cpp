#include "report/report.h"

#include <gtest/gtest.h>

#include <regex>

#include "runjson/load.h"
#include "report/svg.h"

namespace gptbench::report {
namespace {

const std::string kSample = std::string(GPTBENCH_REPORT_TEST_DATA) + "/sample_made_up.json";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Report, CollectsEntriesAndSkips) {
  const auto c = collect({runjson::load_run_file(kSample)});
  ASSERT_FALSE(c.entries.empty());
  EXPECT_EQ(c.skipped.size(), 3u);  // B:64 eager and graph (out of memory), torch graph
  for (const auto& e : c.entries) EXPECT_EQ(e.name.find("manual_time"), std::string::npos) << e.name;
  const Entry* e = nullptr;
  for (const auto& x : c.entries)
    if (x.name == "model/train_step/small/bf16/B:16/T:1024/opt:torch_fused/attn:sdpa/accum:1/mode:graph") e = &x;
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->arg("B"), 16);
  EXPECT_EQ(e->arg("T"), 1024);
  EXPECT_EQ(e->arg("missing", -1), -1);
  EXPECT_EQ(e->without("B"), "model/train_step/small/bf16/T:1024/opt:torch_fused/attn:sdpa/accum:1/mode:graph");
  EXPECT_GT(e->counter("capture_ms"), 0);
}

TEST(Report, BaselineChoice) {
  const auto c = collect({runjson::load_run_file(kSample)});
  const Entry* def = pick_baseline(c, "");
  ASSERT_NE(def, nullptr);
  EXPECT_NE(def->name.find("opt:torch_fused"), std::string::npos);
  EXPECT_NE(def->name.find("mode:eager"), std::string::npos);
  const Entry* fp32 = pick_baseline(c, "small/fp32/");
  ASSERT_NE(fp32, nullptr);
  EXPECT_NE(fp32->name.find("/fp32/"), std::string::npos);
}

// The page is self-contained (no scripts, links or remote resources) and holds every chart.
TEST(Report, RendersEveryChartSelfContained) {
  const auto c = collect({runjson::load_run_file(kSample)});
  const std::string html = render_report(c, {});
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<svg"), 7u);  // tokens/s, memory, graph cost, warm-up, leaderboard, jitter, phases
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  // the only URLs are SVG namespaces
  EXPECT_EQ(count(html, "http"), count(html, "xmlns='http://www.w3.org/2000/svg'"));
  for (const char* title : {"tokens/s vs batch size", "peak memory vs batch size",
                            "one-off cost vs step time", "first steps relative", "relative to the baseline",
                            "step-time variation", "time per step by phase"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  EXPECT_NE(html.find("break-even:"), std::string::npos);
  EXPECT_NE(html.find("out of memory"), std::string::npos);  // skipped points are listed
  EXPECT_NE(html.find("MADE-UP GPU"), std::string::npos);
}

// MFU against both peaks: the measured GEMM rate and the datasheet's ("n/a" when the run has
// no mfu_datasheet_pct, as the made-up sample).
TEST(Report, MfuAgainstMeasuredAndDatasheetPeaks) {
  const std::string html = render_report(collect({runjson::load_run_file(kSample)}), {});
  EXPECT_NE(html.find("<th>bf16 peak (datasheet)</th>"), std::string::npos);
  EXPECT_NE(html.find("<th>MFU %</th><th>MFU % (datasheet)</th>"), std::string::npos);
  EXPECT_NE(html.find("</td><td>n/a</td>"), std::string::npos);
}

// Two runs holding the same names: labels say which file each point came from.
TEST(Report, SeveralRunsAreLabelled) {
  const auto run = runjson::load_run_file(kSample);
  const auto c = collect({run, run});
  bool labelled = false;
  for (const auto& e : c.entries) labelled |= e.label.find(" [sample_made_up]") != std::string::npos;
  EXPECT_TRUE(labelled);
  EXPECT_NO_THROW(render_report(c, {}));
}

// The memory family: a group per setting, a bar per size; a skipped size (does not fit) is a 0.
TEST(Report, MemorySectionDrawsTheLargestBatchPerSizeAndSetting) {
  Collected c;
  auto entry = [](const std::string& name, double b) {
    Entry e;
    e.name = e.label = name;
    e.counters = {{"max_batch", b}, {"predicted_max_batch", b}, {"peak_mem_bytes", 15.0 * (1 << 30)},
                  {"predicted_peak_bytes", 15.5 * (1 << 30)}, {"pred_error_pct", 3.3}, {"step_ms", 80}};
    return e;
  };
  c.entries = {entry("model/memory/small/bf16/opt:torch_fused/ckpt:none/T:512", 21),
               entry("model/memory/medium/bf16/opt:torch_fused/ckpt:none/T:512", 9),
               entry("model/memory/small/bf16/opt:torch_fused/ckpt:all/T:512", 40)};
  c.skipped = {{"model/memory/xl/bf16/opt:torch_fused/ckpt:none/T:512", "does not fit"}};
  c.contexts = {{{"memory_limit_bytes", "17179869184"}}};
  c.sources = {"run.json"};
  const std::string html = render_report(c, {});
  EXPECT_NE(html.find("What fits under the 16.0 GiB cap"), std::string::npos);
  EXPECT_NE(html.find("largest batch that fits under the 16.0 GiB cap"), std::string::npos);
  for (const char* label : {"bf16/opt:torch_fused/ckpt:none/T:512", "bf16/opt:torch_fused/ckpt:all/T:512",
                            ">xl<", ">medium<", "<td>21</td>", "<td>3.3</td>"})
    EXPECT_NE(html.find(label), std::string::npos) << label;
}

TEST(Report, EmptyInputStillRenders) {
  const std::string html = render_report(Collected{}, {});
  EXPECT_NE(html.find("no data in these results"), std::string::npos);
}

TEST(Svg, EscapesText) {
  LineChart chart{"a<b & c", "x", "y", false, {{"s<1>", {{1, 2}, {2, 3}}}}};
  const std::string svg = render_line_chart(chart);
  EXPECT_NE(svg.find("a&lt;b &amp; c"), std::string::npos);
  EXPECT_EQ(svg.find("s<1>"), std::string::npos);
  BarChart bars{"t", "x", {"k"}, false, true, true, {{"neg", {-12.5}, ""}, {"pos", {30}, ""}}};
  const std::string b = render_bar_chart(bars);
  EXPECT_NE(b.find("-12.5%"), std::string::npos);
  EXPECT_NE(b.find("+30.0%"), std::string::npos);
}

}  // namespace
}  // namespace gptbench::report
