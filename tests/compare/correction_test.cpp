// Holm-Bonferroni step-down on p-value sets decided by hand: all significant,
// the first failure stopping the rest, ties, the boundary, empty and NaN input.
#include <gtest/gtest.h>

#include <cmath>

#include "compare/correction.h"

namespace gptbench::compare {
namespace {

constexpr double kAlpha = 0.05;

TEST(Correction, NamesRoundTrip) {
  EXPECT_STREQ(to_string(Correction::kHolm), "holm");
  EXPECT_STREQ(to_string(Correction::kNone), "none");
  EXPECT_EQ(parse_correction("holm"), Correction::kHolm);
  EXPECT_EQ(parse_correction("none"), Correction::kNone);
  EXPECT_FALSE(parse_correction("bonferroni").has_value());
  EXPECT_FALSE(parse_correction("Holm").has_value());
}

TEST(Correction, BonferroniAlpha) {
  EXPECT_DOUBLE_EQ(bonferroni_alpha(kAlpha, 40), 0.00125);
  EXPECT_DOUBLE_EQ(bonferroni_alpha(kAlpha, 1), kAlpha);
  EXPECT_DOUBLE_EQ(bonferroni_alpha(kAlpha, 0), kAlpha);
}

TEST(Correction, HolmAllSignificant) {
  // Sorted: 0.001 < 0.05/4, 0.012 < 0.05/3, 0.02 < 0.05/2, 0.04 < 0.05/1.
  const std::vector<double> p = {0.04, 0.001, 0.02, 0.012};
  EXPECT_EQ(holm_significant(p, kAlpha), std::vector<bool>({true, true, true, true}));
  EXPECT_DOUBLE_EQ(holm_cutoff(p, kAlpha), kAlpha);
}

TEST(Correction, HolmFirstFailureStopsTheRest) {
  // Sorted: 0.003 < 0.0125; 0.02 >= 0.05/3 fails, so 0.021 and 0.024 are not
  // significant either, although each is below its own level (0.025, 0.05).
  const std::vector<double> p = {0.024, 0.02, 0.003, 0.021};
  EXPECT_EQ(holm_significant(p, kAlpha), std::vector<bool>({false, false, true, false}));
  EXPECT_DOUBLE_EQ(holm_cutoff(p, kAlpha), kAlpha / 3);
  // Holm is never stricter than plain Bonferroni (0.05/4 for each), often
  // less: here all four pass where Bonferroni keeps only 0.012.
  EXPECT_EQ(holm_significant({0.012, 0.015, 0.02, 0.04}, kAlpha), std::vector<bool>({true, true, true, true}));
}

TEST(Correction, HolmTiesShareTheirDecision) {
  // Ranks 1-3 tie at 0.01 (< 0.0125, < 0.0167, < 0.025); rank 4 fails.
  EXPECT_EQ(holm_significant({0.01, 0.5, 0.01, 0.01}, kAlpha), std::vector<bool>({true, false, true, true}));
  // Three ties at 0.02: the first already fails 0.05/3, and takes the others with it.
  EXPECT_EQ(holm_significant({0.02, 0.02, 0.02}, kAlpha), std::vector<bool>({false, false, false}));
  // Three ties at 0.015 all pass (0.015 < 0.0167 at rank 1).
  EXPECT_EQ(holm_significant({0.015, 0.015, 0.015}, kAlpha), std::vector<bool>({true, true, true}));
}

TEST(Correction, HolmLevelIsStrict) {
  // p equal to its level (0.05/4) is not below it.
  EXPECT_EQ(holm_significant({0.0125, 0.0125, 0.0125, 0.0125}, kAlpha),
            std::vector<bool>({false, false, false, false}));
  EXPECT_EQ(holm_significant({0.0124, 0.5, 0.5, 0.5}, kAlpha), std::vector<bool>({true, false, false, false}));
}

TEST(Correction, HolmEmptyAndNaN) {
  EXPECT_TRUE(holm_significant({}, kAlpha).empty());
  EXPECT_DOUBLE_EQ(holm_cutoff({}, kAlpha), kAlpha);
  EXPECT_EQ(holm_significant({std::nan(""), 0.001}, kAlpha), std::vector<bool>({false, true}));
  EXPECT_DOUBLE_EQ(holm_cutoff({std::nan(""), 0.001}, kAlpha), kAlpha);  // NaN counts as 1, the last rank
}

TEST(Correction, SingleTestIsUncorrected) {
  EXPECT_EQ(holm_significant({0.049}, kAlpha), std::vector<bool>({true}));
  EXPECT_EQ(holm_significant({0.05}, kAlpha), std::vector<bool>({false}));
}

}  // namespace
}  // namespace gptbench::compare
