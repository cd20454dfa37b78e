// gptbench-premerge's output documents (runner/premerge_output.h) from a hand-made record:
// base.json/new.json load with the loader (runjson/load.h) and hold what was recorded.
#include "premerge_output.h"

#include <gtest/gtest.h>

#include <cmath>

#include "runjson/load.h"
#include "premerge_test_dir.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;

PremergeRecord sample_record() {
  PremergeRecord r;
  r.settings.seed = 5;
  r.settings.cpus = "0-1";
  r.date = "2026-11-25T01:00:00+00:00";
  r.host_name = "host";
  r.compared = 2;
  for (Side side : kSides) {
    r.worker(side).argv = {std::string("/bin/") + side_name(side), "--gptbench_worker=true"};
    r.worker(side).context = {{"gpu_name", "H200"}, {"libtorch", "2.9"}};
    r.worker(side).starts = 1;
  }
  BenchmarkRecord a;
  a.name = "gemm/torch/a";
  a.stop = StopReason::kDecidedSame;
  for (Side side : kSides) {
    SideRecord& s = a.side(side);
    s.listed = true;
    s.real_ns = {1000, 1010, 990};
    s.process_index = {0, 0, 1};
    s.calls = {10, 10, 12};
    s.counters = {json{{"FLOP/s", 1e9}, {"name", 3}}, json{{"FLOP/s", 1.1e9}}, json::object()};
  }
  a.comparison = compare::compare_metric(compare::describe(a.side(Side::kBase).real_ns),
                                         compare::describe(a.side(Side::kNew).real_ns),
                                         compare::Direction::kLowerIsBetter, 0.025, 0.02);
  BenchmarkRecord b;
  b.name = "gemm/torch/b";
  b.per_family_instance_index = 1;
  b.stop = StopReason::kLost;
  b.side(Side::kBase).listed = true;
  b.side(Side::kBase).real_ns = {5, 6};
  b.side(Side::kBase).calls = {1, 1};
  b.side(Side::kNew).listed = true;
  b.side(Side::kNew).lost = 2;
  b.side(Side::kNew).worker_losses = 2;
  b.side(Side::kNew).error = "worker crashed twice: SIGABRT (Aborted)";
  BenchmarkRecord c;
  c.name = "softmax/new_only";
  c.family_index = 1;
  c.stop = StopReason::kOneSide;
  c.side(Side::kNew).listed = true;
  c.side(Side::kNew).real_ns = {7};
  c.side(Side::kNew).calls = {3};
  r.added = {"softmax/new_only"};
  r.benchmarks = {a, b, c};
  return r;
}

TEST(PremergeOutput, SideDocumentsAreGoogleBenchmarkJsonThatCompareLoads) {
  const PremergeRecord record = sample_record();
  const runjson::Run base = runjson::parse_run(side_document(record, Side::kBase).dump(), "base");
  const runjson::Run contender = runjson::parse_run(side_document(record, Side::kNew).dump(), "new");
  ASSERT_EQ(base.benchmarks.size(), 2u);
  ASSERT_EQ(contender.benchmarks.size(), 3u);
  const runjson::Benchmark& a = base.benchmarks[0];
  EXPECT_EQ(a.name, "gemm/torch/a");
  EXPECT_EQ(a.declared_repetitions, 3);
  EXPECT_EQ(a.samples(runjson::TimeKind::kReal), (std::vector<double>{1000, 1010, 990}));
  ASSERT_NE(a.counter("FLOP/s"), nullptr);
  EXPECT_EQ(a.counter("FLOP/s")->values, (std::vector<double>{1e9, 1.1e9}));
  EXPECT_EQ(a.counter("name"), nullptr);  // a counter may not shadow a row field
  EXPECT_EQ(contender.benchmarks[1].status, runjson::RunStatus::kErrored);
  EXPECT_EQ(contender.benchmarks[1].message, "worker crashed twice: SIGABRT (Aborted)");
  EXPECT_EQ(base.benchmarks[1].status, runjson::RunStatus::kOk);
  EXPECT_EQ(contender.benchmarks[2].name, "softmax/new_only");
  EXPECT_EQ(base.context.at("premerge"), "resident workers");
  EXPECT_EQ(base.context.at("gpu_name"), "H200");
  EXPECT_EQ(base.context.at("executable"), "/bin/base");
  EXPECT_EQ(contender.context.at("executable"), "/bin/new");
  EXPECT_EQ(base.context.at("date"), "2026-11-25T01:00:00+00:00");
  EXPECT_EQ(base.context.at("host_name"), "host");
  EXPECT_EQ(base.context.at("premerge_seed"), "5");
  EXPECT_EQ(base.context.at("premerge_cpus"), "0-1");
  const json rows = side_document(record, Side::kBase)["benchmarks"];
  EXPECT_EQ(rows[0]["iterations"], 10);
  EXPECT_EQ(rows[0]["time_unit"], "ns");
  EXPECT_EQ(rows[0]["threads"], 1);
  EXPECT_EQ(rows[0]["run_type"], "iteration");
  EXPECT_EQ(rows[2]["repetition_index"], 2);
  EXPECT_EQ(rows[1]["process_index"], 0);
  EXPECT_EQ(rows[2]["process_index"], 1);
  EXPECT_FALSE(rows[3].contains("process_index"));  // none recorded
  EXPECT_EQ(rows[3]["per_family_instance_index"], 1);
  EXPECT_EQ(a.processes(), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(a.counter("process_index"), nullptr);
}

// Each sample's row carries the kernel list its worker process recorded, so a process that chose
// other kernels is seen in the loaded run's labels (gptbench-compare's kernel note).
TEST(PremergeOutput, SampleRowsCarryTheirProcessKernelLabel) {
  PremergeRecord record = sample_record();
  SideRecord& s = record.benchmarks[0].side(Side::kBase);
  s.labels = {"kernels: k1; k2", "kernels: k1; k2", "kernels: k1; k3"};
  const json rows = side_document(record, Side::kBase)["benchmarks"];
  EXPECT_EQ(rows[0]["label"], "kernels: k1; k2");
  EXPECT_EQ(rows[2]["label"], "kernels: k1; k3");
  EXPECT_FALSE(rows[3].contains("label"));  // benchmark b recorded none
  const runjson::Run base = runjson::parse_run(side_document(record, Side::kBase).dump(), "base");
  EXPECT_EQ(base.benchmarks[0].labels, (std::vector<std::string>{"kernels: k1; k2", "kernels: k1; k3"}));
}

TEST(PremergeOutput, PremergeDocumentHoldsRecordsAndTotals) {
  const json doc = premerge_document(sample_record());
  EXPECT_EQ(doc["tool"], "gptbench-premerge");
  EXPECT_EQ(doc["settings"]["seed"], 5);
  EXPECT_DOUBLE_EQ(doc["settings"]["alpha_per_benchmark"].get<double>(), 0.025);
  ASSERT_EQ(doc["benchmarks"].size(), 3u);
  const json& a = doc["benchmarks"][0];
  EXPECT_EQ(a["stop"], "decided-same");
  EXPECT_EQ(a["samples"], (json{{"base", 3}, {"new", 3}}));
  EXPECT_EQ(a["samples_per_process"], (json{{"base", {2, 1, 0}}, {"new", {2, 1, 0}}}));
  EXPECT_EQ(doc["settings"]["processes"], 3);
  EXPECT_EQ(a["sides"], "both");
  EXPECT_DOUBLE_EQ(a["ratio"].get<double>(), 1.0);
  EXPECT_LT(a["ratio_interval"][0].get<double>(), 1.0);
  EXPECT_GT(a["ratio_interval"][1].get<double>(), 1.0);
  // 3 samples a side cannot reach p < 0.1: no change could have been detected.
  EXPECT_TRUE(a["mde"].is_null());
  EXPECT_EQ(a["mde_limited_by"], "repetitions");
  PremergeRecord more = sample_record();
  BenchmarkRecord& quiet = more.benchmarks[0];
  quiet.alpha = 0.025;
  for (Side side : kSides) quiet.side(side).real_ns = {1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008};
  quiet.comparison = compare::compare_metric(compare::describe(quiet.side(Side::kBase).real_ns),
                                             compare::describe(quiet.side(Side::kNew).real_ns),
                                             compare::Direction::kLowerIsBetter, quiet.alpha, 0.02);
  const json mde = premerge_document(more)["benchmarks"][0];
  EXPECT_DOUBLE_EQ(mde["mde"].get<double>(), 0.02);  // spread 0.3%: the threshold decides
  EXPECT_EQ(mde["mde_limited_by"], "threshold");
  const json& b = doc["benchmarks"][1];
  EXPECT_EQ(b["stop"], "lost");
  EXPECT_EQ(b["lost"]["new"], 2);
  EXPECT_EQ(b["errors"]["new"], "worker crashed twice: SIGABRT (Aborted)");
  EXPECT_TRUE(b["errors"]["base"].is_null());
  EXPECT_TRUE(b["ratio"].is_null());
  EXPECT_TRUE(b["mde"].is_null());
  EXPECT_EQ(doc["benchmarks"][2]["sides"], "new");
  EXPECT_EQ(doc["benchmarks"][2]["samples"], (json{{"new", 1}}));
  EXPECT_EQ(doc["added"], (json{"softmax/new_only"}));
  EXPECT_EQ(doc["totals"]["samples"], (json{{"base", 5}, {"new", 4}}));
  EXPECT_EQ(doc["totals"]["lost"], (json{{"base", 0}, {"new", 2}}));
  EXPECT_EQ(doc["totals"]["stop"], (json{{"decided-same", 1}, {"lost", 1}, {"one-side", 1}}));
  EXPECT_EQ(doc["workers"]["new"]["restarts"], 0);
  // Restarts are the starts beyond one per epoch.
  PremergeRecord epochs = sample_record();
  epochs.worker(Side::kNew).starts = 4;
  epochs.worker(Side::kNew).epoch_starts = 3;
  epochs.worker(Side::kNew).epoch_startup_s = {0.5, std::nan(""), 0.4};
  const json workers = premerge_document(epochs)["workers"];
  EXPECT_EQ(workers["new"]["restarts"], 1);
  EXPECT_EQ(workers["new"]["epoch_startup_s"], (json{0.5, nullptr, 0.4}));
}

class PremergeOutputFiles : public testing::ScratchDir {};

TEST_F(PremergeOutputFiles, WritesTheThreeFiles) {
  write_premerge_outputs(sample_record(), dir_.string());
  EXPECT_EQ(runjson::load_run_file(path("base.json")).benchmarks.size(), 2u);
  EXPECT_EQ(runjson::load_run_file(path("new.json")).benchmarks.size(), 3u);
  EXPECT_EQ(json::parse(slurp(path("premerge.json")))["tool"], "gptbench-premerge");
}

}  // namespace
}  // namespace gptbench::runner
