// Pairing by exact name (benchmarks mode) and by implementation segment
// (filters mode), with --filter.
#include <gtest/gtest.h>

#include "runjson/load.h"
#include "compare/pair.h"

namespace gptbench::compare {
using runjson::Run;
using runjson::load_run_file;
using runjson::parse_run;

namespace {

// Minimal runs: one repetition per name.
Run make_run(const std::vector<std::string>& names) {
  std::string text = R"({"benchmarks": [)";
  for (size_t i = 0; i < names.size(); ++i) {
    text += (i ? "," : "") + std::string(R"({"name": ")") + names[i] +
            R"(", "real_time": 1, "cpu_time": 1, "time_unit": "ns"})";
  }
  return parse_run(text + "]}", "inline");
}

std::vector<std::string> pair_names(const Pairing& pairing) {
  std::vector<std::string> out;
  for (const BenchmarkPair& pair : pairing.pairs) out.push_back(pair.name);
  return out;
}

using Names = std::vector<std::string>;

TEST(PairByName, ListsAddedAndRemovedExplicitly) {
  const auto base = make_run({"gemm/a", "gemm/b", "softmax/x"});
  const auto contender = make_run({"softmax/x", "gemm/b", "attention/new"});
  const Pairing pairing = pair_by_name(base, contender, NameFilter());
  EXPECT_EQ(pair_names(pairing), (Names{"gemm/b", "softmax/x"}));  // base order
  EXPECT_EQ(pairing.removed, (Names{"gemm/a"}));
  EXPECT_EQ(pairing.added, (Names{"attention/new"}));
  EXPECT_EQ(pairing.pairs[0].base->name, "gemm/b");
  EXPECT_EQ(pairing.pairs[0].contender, contender.find("gemm/b"));
}

TEST(PairByName, FilterRestrictsEverySide) {
  const auto base = make_run({"gemm/a", "gemm/b", "softmax/x"});
  const auto contender = make_run({"gemm/b", "softmax/x", "softmax/y"});
  const Pairing pairing = pair_by_name(base, contender, NameFilter("^softmax/"));
  EXPECT_EQ(pair_names(pairing), (Names{"softmax/x"}));
  EXPECT_TRUE(pairing.removed.empty());
  EXPECT_EQ(pairing.added, (Names{"softmax/y"}));
}

TEST(PairByName, ExactNamesOnly) {
  const auto base = make_run({"gemm/a/manual_time"});
  const auto contender = make_run({"gemm/a"});
  const Pairing pairing = pair_by_name(base, contender, NameFilter());
  EXPECT_TRUE(pairing.pairs.empty());
  EXPECT_EQ(pairing.removed, (Names{"gemm/a/manual_time"}));
}

TEST(PairByImpl, SwapsOneSegment) {
  const auto run = make_run({"softmax/torch/bf16/rows:8/cols:1024", "softmax/fused/bf16/rows:8/cols:1024",
                             "softmax/torch/fp32/rows:8/cols:1024", "softmax/fused/fp32/rows:4/cols:1024",
                             "softmax/online/bf16/rows:8/cols:1024", "gemm/torchx/bf16"});
  const Pairing pairing = pair_by_impl(run, "torch", "fused", NameFilter());
  EXPECT_EQ(pair_names(pairing), (Names{"softmax/{torch,fused}/bf16/rows:8/cols:1024"}));
  EXPECT_EQ(pairing.pairs[0].base->name, "softmax/torch/bf16/rows:8/cols:1024");
  EXPECT_EQ(pairing.pairs[0].contender->name, "softmax/fused/bf16/rows:8/cols:1024");
  EXPECT_EQ(pairing.removed, (Names{"softmax/torch/fp32/rows:8/cols:1024"}));
  EXPECT_EQ(pairing.added, (Names{"softmax/fused/fp32/rows:4/cols:1024"}));  // segments must match exactly
}

TEST(PairByImpl, FilterKeepsPairsWhenEitherNameMatches) {
  const auto run = make_run({"softmax/torch/bf16/cols:1024", "softmax/fused/bf16/cols:1024",
                             "softmax/torch/bf16/cols:50304", "softmax/fused/bf16/cols:50304"});
  const Pairing pairing = pair_by_impl(run, "torch", "fused", NameFilter("fused/bf16/cols:50304"));
  EXPECT_EQ(pair_names(pairing), (Names{"softmax/{torch,fused}/bf16/cols:50304"}));
  EXPECT_TRUE(pairing.removed.empty());
  EXPECT_TRUE(pairing.added.empty());
}

TEST(PairByImpl, FromFixtureFile) {
  const auto run = load_run_file(std::string(GPTBENCH_COMPARE_TEST_DATA) + "/data/filters_softmax.json");
  const Pairing pairing = pair_by_impl(run, "torch", "fused", NameFilter());
  EXPECT_EQ(pairing.pairs.size(), 2u);
  EXPECT_EQ(pairing.removed, (Names{"softmax/torch/fp32/rows:786432/cols:1024"}));
  EXPECT_EQ(pairing.added, (Names{"softmax/fused/fp32/rows:4096/cols:1024"}));
}

TEST(Paths, SplitAndFamily) {
  EXPECT_EQ(split_path("a/b//c"), (Names{"a", "b", "", "c"}));
  EXPECT_EQ(family_of("softmax/fused/bf16"), "softmax");
  EXPECT_EQ(family_of("BM_Plain"), "BM_Plain");
}

TEST(NameFilterTest, SearchesAnywhereAndRejectsBadRegex) {
  EXPECT_TRUE(NameFilter().keeps("anything"));
  EXPECT_TRUE(NameFilter("fused").keeps("softmax/fused/bf16"));
  EXPECT_FALSE(NameFilter("^fused").keeps("softmax/fused/bf16"));
  EXPECT_THROW(NameFilter("(unclosed"), std::regex_error);
}

}  // namespace
}  // namespace gptbench::compare
