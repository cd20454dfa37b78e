// compare/kernel_note.h: rows recorded with --gptbench_kernels carry their processes' kernel
// lists; the report names kernels that differ between the runs or between one run's processes.
#include "compare/kernel_note.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compare/render.h"
#include "runjson/load.h"

namespace gptbench::compare {
namespace {

using nlohmann::json;

// A run of one benchmark, "gemm/torch/bf16/x", with one row per label (process i, label i).
runjson::Run run_with_labels(const std::vector<std::string>& labels) {
  json rows = json::array();
  for (size_t i = 0; i < labels.size(); ++i) {
    json row = {{"name", "gemm/torch/bf16/x"}, {"run_name", "gemm/torch/bf16/x"}, {"run_type", "iteration"},
                {"repetitions", labels.size()}, {"repetition_index", i}, {"process_index", i},
                {"threads", 1}, {"iterations", 10}, {"real_time", 100.0 + static_cast<double>(i)},
                {"cpu_time", 100.0}, {"time_unit", "ns"}};
    if (!labels[i].empty()) row["label"] = labels[i];
    rows.push_back(row);
  }
  return runjson::parse_run(json{{"context", json::object()}, {"benchmarks", rows}}.dump(), "run");
}

std::string note_of(const std::vector<std::string>& base, const std::vector<std::string>& contender) {
  const runjson::Run b = run_with_labels(base), n = run_with_labels(contender);
  return kernel_note(&b.benchmarks.at(0), &n.benchmarks.at(0));
}

TEST(KernelNote, NothingWithoutKernelLists) {
  EXPECT_EQ(note_of({"", ""}, {"", ""}), "");
  EXPECT_EQ(note_of({"inductor", "inductor"}, {"inductor", "inductor"}), "");  // another kind of label
}

TEST(KernelNote, NothingWhenEveryProcessRanTheSameKernels) {
  EXPECT_EQ(note_of({"kernels: a; b", "kernels: a; b"}, {"kernels: b; a", "kernels: a; b"}), "");
}

TEST(KernelNote, NamesKernelsOnlyOneRunLaunched) {
  EXPECT_EQ(note_of({"kernels: gemv; nvjet_192x128", "kernels: gemv; nvjet_192x128"},
                    {"kernels: gemv; nvjet_256x128", "kernels: gemv; nvjet_256x128"}),
            "kernels differ: base only nvjet_192x128; new only nvjet_256x128");
  EXPECT_EQ(note_of({"kernels: a"}, {"kernels: a; b"}), "kernels differ: new only b");
}

TEST(KernelNote, NamesProcessesOfOneRunThatDisagree) {
  // Both runs saw both kernels in all, but base's two processes chose differently.
  EXPECT_EQ(note_of({"kernels: k; x", "kernels: k; y"}, {"kernels: k; x; y", "kernels: k; x; y"}),
            "processes differ in kernels: base x | y");
}

TEST(KernelNote, OneSideWithoutListsIsNotADifference) {
  EXPECT_EQ(note_of({"", ""}, {"kernels: a", "kernels: a"}), "");
}

TEST(KernelNote, TheReportsCarryIt) {
  const runjson::Run b = run_with_labels({"kernels: a", "kernels: a"});
  const runjson::Run n = run_with_labels({"kernels: b", "kernels: b"});
  const Pairing pairing = pair_by_name(b, n, NameFilter());
  Report report = build_report(pairing, Settings());
  add_kernel_notes(report, pairing);
  ASSERT_EQ(report.results.size(), 1u);
  EXPECT_EQ(report.results[0].kernel_note, "kernels differ: base only a; new only b");
  const json doc = json::parse(render_json(report));
  EXPECT_NE(doc.dump().find("\"kernel_note\":\"kernels differ: base only a; new only b\""), std::string::npos);
  EXPECT_NE(render_markdown(report).find("kernels differ: base only a; new only b"), std::string::npos);
  // The text report lists the row under its notes although its verdict is "same".
  EXPECT_NE(render_text(report, TextOptions{}).find("gemm/torch/bf16/x: "), std::string::npos);
}

}  // namespace
}  // namespace gptbench::compare
