// Verdict rules: significance AND threshold, too few repetitions, noise,
// direction of counters.
#include <gtest/gtest.h>

#include <cmath>

#include "compare/verdict.h"

namespace gptbench::compare {
namespace {

constexpr double kAlpha = 0.05;
constexpr double kThreshold = 0.05;

// n samples around `center` with a deterministic relative spread.
std::vector<double> samples(double center, double spread, size_t n = 9) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) {
    const double offset = (static_cast<double>(i % 5) - 2.0) / 2.0;  // -1 .. 1
    out.push_back(center * (1 + spread * offset));
  }
  return out;
}

MetricComparison decide(const std::vector<double>& base, const std::vector<double>& contender,
                        Direction direction = Direction::kLowerIsBetter, double threshold = kThreshold) {
  return compare_metric(describe(base), describe(contender), direction, kAlpha, threshold);
}

TEST(Verdict, SignificantSlowdownAboveThresholdIsRegression) {
  const MetricComparison result = decide(samples(100, 0.01), samples(110, 0.01));
  EXPECT_EQ(result.verdict, Verdict::kRegression);
  EXPECT_NEAR(result.change, 0.10, 1e-9);
  EXPECT_TRUE(result.tested);
  EXPECT_LT(result.u_test.p_value, kAlpha);
}

TEST(Verdict, SignificantSpeedupIsImprovement) {
  EXPECT_EQ(decide(samples(100, 0.01), samples(80, 0.01)).verdict, Verdict::kImprovement);
}

TEST(Verdict, SignificantButBelowThresholdIsSame) {
  const MetricComparison result = decide(samples(100, 0.002), samples(102, 0.002));
  EXPECT_LT(result.u_test.p_value, kAlpha);
  EXPECT_EQ(result.verdict, Verdict::kSame);
}

TEST(Verdict, PerBenchmarkThresholdDecides) {
  EXPECT_EQ(decide(samples(100, 0.01), samples(108, 0.01), Direction::kLowerIsBetter, 0.10).verdict, Verdict::kSame);
  EXPECT_EQ(decide(samples(100, 0.01), samples(108, 0.01), Direction::kLowerIsBetter, 0.05).verdict,
            Verdict::kRegression);
}

TEST(Verdict, IdenticalRunsAreSame) {
  const MetricComparison result = decide(samples(100, 0.01), samples(100, 0.01));
  EXPECT_EQ(result.verdict, Verdict::kSame);
  EXPECT_DOUBLE_EQ(result.change, 0.0);
}

TEST(Verdict, FewerThanTwoRepetitionsIsUnreliable) {
  const MetricComparison result = decide({100}, {200});
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
  EXPECT_FALSE(result.tested);
  EXPECT_NE(result.reason.find("at least 2 repetitions"), std::string::npos);
}

TEST(Verdict, TooFewRepetitionsToReachAlphaIsUnreliable) {
  const MetricComparison result = decide({100, 101, 102}, {200, 201, 202});  // smallest p = 0.1
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
  EXPECT_NE(result.reason.find("use at least 4 per side"), std::string::npos);
  EXPECT_EQ(repetitions_needed(0.05), 4u);
}

TEST(Verdict, NoiseWiderThanThresholdIsUnreliable) {
  // 2% median shift, but +-20% spread: a 5% change could hide in it.
  const MetricComparison result = decide(samples(100, 0.4), samples(102, 0.4));
  EXPECT_GT(result.uncertainty, kThreshold);
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
  EXPECT_NE(result.reason.find("too noisy"), std::string::npos);
}

const std::vector<double> kQuiet = {96, 97, 98, 99, 100, 101, 102, 103, 104};  // CV 2.7%

TEST(Verdict, NoisyAAChangeIsUnreliableNotRegression) {
  // As seen in an A/A run: CV 22% on one side, change +8.2%, p = 0.042, 5% threshold.
  const MetricComparison result = decide(kQuiet, {66, 99.5, 101.5, 106, 108.2, 112, 128, 142, 150});
  EXPECT_NEAR(result.contender.cv, 0.223, 0.001);
  EXPECT_NEAR(result.change, 0.082, 1e-9);
  EXPECT_NEAR(result.u_test.p_value, 0.042, 0.001);
  EXPECT_LT(result.u_test.p_value, kAlpha);  // significant and above the threshold on their own
  EXPECT_GT(result.change, kThreshold);
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
  EXPECT_EQ(result.reason.rfind("too noisy: robust CV 11.9% (new), change known to +/-", 0), 0u) << result.reason;
  EXPECT_NE(result.reason.find("change +8.2%, p=0.0423"), std::string::npos) << result.reason;
}

TEST(Verdict, OneOutlierDoesNotHideAChangeButSpreadOfEitherSideIsUnreliable) {
  // One outlier: classical CV 29%, yet the medians are tight and p = 0.0004. The verdict rests
  // on medians and ranks, so the noise rule judges the robust CV (1.4826 MAD / median), 2.7%.
  const std::vector<double> outlier = {110, 110.5, 111, 111.5, 112, 112.5, 113, 113.5, 220};
  const MetricComparison slower = decide(kQuiet, outlier);
  EXPECT_GT(slower.contender.cv, 0.29);
  EXPECT_LT(slower.contender.robust_cv, kThreshold);
  EXPECT_LT(slower.u_test.p_value, 0.001);
  EXPECT_EQ(slower.verdict, Verdict::kRegression) << slower.reason;
  EXPECT_EQ(decide(outlier, kQuiet).verdict, Verdict::kImprovement);
  EXPECT_EQ(decide(outlier, outlier).verdict, Verdict::kSame);
  // Spread through the bulk of the samples (robust CV 11.4%) on either side: unreliable, even
  // with no change at all (a threshold-sized change could hide in it).
  const std::vector<double> spread = {88, 92, 96, 100, 104, 108, 112, 116, 120};
  const MetricComparison noisy_new = decide(kQuiet, spread);
  EXPECT_EQ(noisy_new.verdict, Verdict::kUnreliable);
  EXPECT_NE(noisy_new.reason.find("robust CV 11.4% (new)"), std::string::npos) << noisy_new.reason;
  const MetricComparison noisy_base = decide(spread, kQuiet);
  EXPECT_EQ(noisy_base.verdict, Verdict::kUnreliable);
  EXPECT_NE(noisy_base.reason.find("(base)"), std::string::npos) << noisy_base.reason;
  // Only a threshold wider than the noise lets it be judged.
  EXPECT_EQ(decide(kQuiet, spread, Direction::kLowerIsBetter, 0.30).verdict, Verdict::kSame);
}

TEST(Verdict, HolmDemotesWhatItDoesNotKeep) {
  MetricComparison result = decide({100, 101, 102, 103}, {110, 111, 112, 113});  // 4 vs 4: p = 0.029
  ASSERT_EQ(result.verdict, Verdict::kRegression);
  MetricComparison kept = result;
  apply_holm(kept, 0.03, 2, "pairs");
  EXPECT_EQ(kept.verdict, Verdict::kRegression);
  EXPECT_NE(kept.reason.find("significant after Holm correction over 2 pairs (needed < 0.03)"), std::string::npos)
      << kept.reason;
  apply_holm(result, 0.00125, 40, "pairs");
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
  EXPECT_EQ(result.reason,
            "|change| 9.9% > 5.0% but p = 0.029 not significant after Holm correction over 40 pairs "
            "(needed < 0.00125); 4 and 4 repetitions cannot get below 0.029, use at least 7 per side");
  MetricComparison same = decide(kQuiet, kQuiet);
  apply_holm(same, 1e-9, 40, "pairs");
  EXPECT_EQ(same.verdict, Verdict::kSame);
}

TEST(Verdict, LargeButInsignificantChangeIsUnreliable) {
  const MetricComparison result = decide({100, 130, 90, 125, 95}, {125, 92, 135, 99, 120});
  EXPECT_GT(std::fabs(result.change), kThreshold);
  EXPECT_GE(result.u_test.p_value, kAlpha);
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
}

TEST(Verdict, UncertaintyFollowsMedianAbsoluteDeviation) {
  const SideStats side = describe({98, 99, 100, 101, 102});
  EXPECT_DOUBLE_EQ(side.mad, 1.0);
  EXPECT_NEAR(side.median_error, 1.2533 * 1.4826 / (100 * std::sqrt(5.0)), 1e-9);
  const MetricComparison result = decide({98, 99, 100, 101, 102}, {98, 99, 100, 101, 102});
  EXPECT_NEAR(result.uncertainty, 1.96 * std::sqrt(2.0) * side.median_error, 1e-9);
}

TEST(Verdict, HigherIsBetterCountersFlipTheDirection) {
  EXPECT_EQ(decide(samples(100, 0.01), samples(80, 0.01), Direction::kHigherIsBetter).verdict, Verdict::kRegression);
  EXPECT_EQ(decide(samples(100, 0.01), samples(120, 0.01), Direction::kHigherIsBetter).verdict, Verdict::kImprovement);
  EXPECT_EQ(decide(samples(100, 0.01), samples(120, 0.01), Direction::kInformational).verdict, Verdict::kInformational);
}

}  // namespace
}  // namespace gptbench::compare
