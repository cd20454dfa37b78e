#include "merge.h"

#include <gtest/gtest.h>

#include "runjson/load.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;

json row(const std::string& name, int family_index, const std::string& run_type = "iteration") {
  json r = {{"name", name}, {"run_name", name}, {"run_type", run_type}, {"family_index", family_index},
            {"iterations", 1}, {"real_time", 1.5}, {"cpu_time", 1.0}, {"time_unit", "ms"}};
  if (run_type == "aggregate") {
    r["name"] = name + "_mean";
    r["aggregate_name"] = "mean";
  }
  return r;
}

TEST(Merge, ConcatenatesFamiliesKeepsAggregatesRenumbersFamilyIndex) {
  MergedRun m;
  m.offer_context({{"host_name", "first"}});
  m.offer_context({{"host_name", "second"}});  // ignored
  m.add_child_rows({row("a/x", 0), row("a/x", 0, "aggregate"), row("a/y", 1)});
  m.add_child_rows({row("b/x", 0)});  // the next child numbers from 0 again
  m.add_errored("b/crash", "crashed: SIGABRT (Aborted)");
  m.set_context_entry("gptbench_run_status", "complete");
  const json doc = json::parse(m.text());
  EXPECT_EQ(doc["context"]["host_name"], "first");
  EXPECT_EQ(doc["context"]["gptbench_run_status"], "complete");
  ASSERT_EQ(doc["benchmarks"].size(), 5u);
  EXPECT_EQ(doc["benchmarks"][1]["run_type"], "aggregate");
  std::vector<int> fi;
  for (const auto& r : doc["benchmarks"]) fi.push_back(r["family_index"]);
  EXPECT_EQ(fi, (std::vector<int>{0, 0, 1, 2, 3}));

  // gptbench-compare reads it: 4 benchmarks, the crash as errored with its reason.
  const runjson::Run run = runjson::parse_run(m.text(), "merged");
  ASSERT_EQ(run.benchmarks.size(), 4u);
  const runjson::Benchmark* crash = run.find("b/crash");
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash->status, runjson::RunStatus::kErrored);
  EXPECT_EQ(crash->message, "crashed: SIGABRT (Aborted)");
  EXPECT_EQ(run.find("a/x")->aggregates.size(), 1u);
}

TEST(Merge, InvalidUtf8InAReasonIsReplacedNotFatal) {
  MergedRun m;
  m.add_errored("a/b", std::string("stderr said \xff\xfe bytes"));
  const std::string text = m.text();
  EXPECT_NE(text.find("stderr said"), std::string::npos);
  EXPECT_EQ(validate_gb_json(text, "t"), "");
}

TEST(Merge, EmptyRunIsStillAValidDocument) {
  MergedRun m;
  EXPECT_EQ(validate_gb_json(m.text(), "t"), "");
  EXPECT_NE(validate_gb_json("{\"benchmarks\": 3}", "t"), "");
}

}  // namespace
}  // namespace gptbench::runner
