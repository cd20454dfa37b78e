#include "names.h"

#include <gtest/gtest.h>

#include <regex>

namespace gptbench::runner {
namespace {

TEST(Names, ParseListSkipsBlankLinesAndDuplicates) {
  const auto names = parse_benchmark_list("gemm/a/manual_time\r\n\n  \nsoftmax/b \ngemm/a/manual_time\n");
  EXPECT_EQ(names, (std::vector<std::string>{"gemm/a/manual_time", "softmax/b"}));
  EXPECT_TRUE(parse_benchmark_list("").empty());
  // Regression (runner_fuzz_names): a NUL byte made the filter an invalid regex.
  using namespace std::string_literals;
  EXPECT_EQ(parse_benchmark_list("a/b\n\0zeta\\x\nc/d"s), (std::vector<std::string>{"a/b", "c/d"}));
}

TEST(Names, FamiliesAreFirstPathSegmentInOrderOfAppearance) {
  EXPECT_EQ(family_of("gemm/torch/fp32/M:64"), "gemm");
  EXPECT_EQ(family_of("lonely"), "lonely");
  const auto fams = group_families({"b/1", "a/1", "b/2", "c", "a/2"});
  ASSERT_EQ(fams.size(), 3u);
  EXPECT_EQ(fams[0].name, "b");
  EXPECT_EQ(fams[0].benchmarks, (std::vector<std::string>{"b/1", "b/2"}));
  EXPECT_EQ(fams[1].name, "a");
  EXPECT_EQ(fams[1].benchmarks, (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_EQ(fams[2].benchmarks, (std::vector<std::string>{"c"}));
}

// The exact filter selects precisely its names under both syntaxes std::regex offers.
TEST(Names, ExactFilterMatchesOnlyItsNames) {
  const std::vector<std::string> names = {"zeta/odd(name)[x]+1.5", "gemm/torch/fp32/M:64/N:64",
                                          "a|b/c^d$e\\f*g?h{2}"};
  for (auto syntax : {std::regex::extended, std::regex::ECMAScript}) {
    const std::regex re(exact_filter(names), syntax);
    for (const auto& n : names) EXPECT_TRUE(std::regex_search(n, re)) << n;
    EXPECT_FALSE(std::regex_search("zeta/oddnamex11.5", re));
    EXPECT_FALSE(std::regex_search("gemm/torch/fp32/M:64/N:640", re));  // anchored
    EXPECT_FALSE(std::regex_search("xgemm/torch/fp32/M:64/N:64", re));
    EXPECT_FALSE(std::regex_search("a", re));
  }
}

TEST(Names, ChunksRespectBothLimitsAndKeepOrder) {
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back("fam/bench" + std::to_string(i));
  const auto by_count = chunk_for_filter(names, 4, 1 << 20);
  ASSERT_EQ(by_count.size(), 3u);
  EXPECT_EQ(by_count[0].size(), 4u);
  EXPECT_EQ(by_count[2].back(), "fam/bench9");
  const auto by_chars = chunk_for_filter(names, 100, 40);
  std::vector<std::string> flat;
  for (const auto& c : by_chars) {
    ASSERT_FALSE(c.empty());
    if (c.size() > 1) {
      EXPECT_LE(exact_filter(c).size(), 40u);
    }
    flat.insert(flat.end(), c.begin(), c.end());
  }
  EXPECT_EQ(flat, names);
  // A name longer than the limit still gets a chunk of its own.
  EXPECT_EQ(chunk_for_filter({std::string(100, 'x')}, 10, 8).size(), 1u);
}

}  // namespace
}  // namespace gptbench::runner
