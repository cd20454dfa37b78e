// The minimum detectable effect: the U test's critical values (exact and asymptotic, by hand and
// against the test's own p-values), the normal quantile, the detectable shift, and the MDE of a
// metric with what limits it. Expected values by hand, or with Python's statistics.NormalDist.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compare/mde.h"
#include "compare/report.h"
#include "compare/stats.h"
#include "compare/verdict.h"
#include "test_util.h"

namespace gptbench::compare {
namespace {

TEST(UCriticalValue, ExactByHand) {
  // 5 vs 5: U >= 25, 24, 23, 22 in 1, 2, 4, 7 of the C(10,5) = 252 arrangements: two-sided
  // p = 0.0079, 0.0159, 0.0317, 0.0556.
  EXPECT_EQ(u_critical_value(5, 5, 0.05), 23);
  EXPECT_EQ(u_critical_value(5, 5, 0.02), 24);
  EXPECT_EQ(u_critical_value(5, 5, 0.01), 25);
  // Complete separation (U = 25, p = 2/252) is the most any 5 vs 5 can show.
  EXPECT_EQ(u_critical_value(5, 5, 0.005), -1);
  EXPECT_EQ(u_critical_value(4, 4, 0.05), 16);  // 2/70 = 0.029; U = 15: 4/70 = 0.057
  EXPECT_EQ(u_critical_value(4, 4, 0.02), -1);
  EXPECT_EQ(u_critical_value(3, 3, 0.05), -1);  // 2/20 = 0.1
  EXPECT_EQ(u_critical_value(1, 1, 0.5), -1);
}

TEST(UCriticalValue, AsymptoticByHand) {
  // 9 vs 9: sigma = sqrt(81 * 19 / 12) = 11.3248, z = (U - 41) / sigma: U = 64 gives z = 2.031,
  // p = 0.042; U = 63 gives p = 0.052.
  EXPECT_EQ(u_critical_value(9, 9, 0.05), 64);
  EXPECT_EQ(u_critical_value(9, 9, 0.05 / 39), 78);
}

// Tie-free samples with U (pairs with the y value larger) = u: x = 0..n1-1, y_j just below the
// c_j-th x, c_j summing to u.
std::pair<std::vector<double>, std::vector<double>> samples_with_u(int64_t n1, int64_t n2, int64_t u) {
  std::vector<double> x, y;
  for (int64_t i = 0; i < n1; ++i) x.push_back(static_cast<double>(i));
  for (int64_t j = 0; j < n2; ++j) {
    const int64_t above = std::min(n1, u);
    u -= above;
    y.push_back(static_cast<double>(above) - 0.5 + 1e-6 * static_cast<double>(j));
  }
  return {x, y};
}

TEST(UCriticalValue, AgreesWithTheTestsOwnPValues) {
  for (int64_t n1 : {2, 4, 5, 8, 9, 12}) {
    for (int64_t n2 : {2, 3, 5, 9, 20}) {
      for (double level : {0.05, 0.01, 0.001, 1e-4}) {
        SCOPED_TRACE(std::to_string(n1) + " vs " + std::to_string(n2) + " at " + std::to_string(level));
        const int64_t u = u_critical_value(n1, n2, level);
        EXPECT_EQ(u < 0, smallest_p_value(n1, n2) >= level);
        if (u < 0) continue;
        const auto [x, y] = samples_with_u(n1, n2, u);
        const UTestResult at = mann_whitney_u(x, y);
        ASSERT_FALSE(at.ties);
        ASSERT_DOUBLE_EQ(at.u1, static_cast<double>(n1 * n2 - u));
        EXPECT_LT(at.p_value, level);
        if (2 * (u - 1) < n1 * n2) continue;  // u - 1 would not be the larger U
        const auto [x_below, y_below] = samples_with_u(n1, n2, u - 1);
        EXPECT_GE(mann_whitney_u(x_below, y_below).p_value, level);
      }
    }
  }
}

TEST(NormalQuantile, KnownValues) {
  EXPECT_NEAR(normal_quantile(0.975), 1.9599639845400536, 1e-13);
  EXPECT_NEAR(normal_quantile(0.001), -3.090232306167813, 1e-13);
  EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-11);
  EXPECT_NEAR(normal_quantile(0.96875), 1.862731867421651, 1e-13);
  EXPECT_DOUBLE_EQ(normal_quantile(0.5), 0.0);
  EXPECT_EQ(normal_quantile(0), -INFINITY);
  EXPECT_EQ(normal_quantile(1), INFINITY);
  EXPECT_TRUE(std::isnan(normal_quantile(1.5)));
}

TEST(DetectableShift, ByHand) {
  // 4 vs 4 at 0.05: only complete separation (U* = 16) counts; E[U] = 15.5 needs
  // P(new > base) = 15.5/16 = 0.96875, z = 1.8627, times sqrt(0.01^2 + 0.01^2).
  EXPECT_NEAR(u_test_detectable_shift(4, 4, 0.05, 0.01, 0.01), 0.026343006699722612, 1e-14);
  // 9 vs 9 at 0.05: U* = 64, P = 63.5/81, z = 0.78561, times sqrt(0.01^2 + 0.02^2).
  EXPECT_NEAR(u_test_detectable_shift(9, 9, 0.05, 0.01, 0.02), 0.01756666827813352, 1e-14);
  EXPECT_DOUBLE_EQ(u_test_detectable_shift(9, 9, 0.05, 0, 0), 0.0);  // no spread: any shift separates
  // Too few samples for the level: even complete separation is not significant.
  EXPECT_EQ(u_test_detectable_shift(3, 3, 0.05, 0.01, 0.01), INFINITY);
  EXPECT_EQ(u_test_detectable_shift(4, 4, 0.02, 0.01, 0.01), INFINITY);
  // More samples or a looser level detect less.
  EXPECT_LT(u_test_detectable_shift(30, 30, 0.001, 0.01, 0.01), u_test_detectable_shift(15, 15, 0.001, 0.01, 0.01));
  EXPECT_LT(u_test_detectable_shift(15, 15, 0.01, 0.01, 0.01), u_test_detectable_shift(15, 15, 0.001, 0.01, 0.01));
}

const std::vector<double> kQuiet = {96, 97, 98, 99, 100, 101, 102, 103, 104};  // robust CV 2.9652%

MetricComparison metric(const std::vector<double>& base, const std::vector<double>& contender,
                        Direction direction = Direction::kLowerIsBetter, double threshold = 0.05) {
  return compare_metric(describe(base), describe(contender), direction, 0.05, threshold);
}

TEST(MinimumDetectableEffect, TheThresholdWhenTheTestSeesLess) {
  // 9 vs 9 at 0.05: exp(0.78561 * sqrt(2) * 0.029652) - 1 = 3.35% < 5%.
  const MinimumDetectableEffect mde = minimum_detectable_effect(metric(kQuiet, kQuiet), 0.05);
  EXPECT_NEAR(mde.test, 0.03349243140204362, 1e-12);
  EXPECT_DOUBLE_EQ(mde.value, 0.05);
  EXPECT_EQ(mde.limited_by, MdeLimit::kThreshold);
}

TEST(MinimumDetectableEffect, TheTestAtACorrectedLevel) {
  // The same samples at Holm's level over 40 pairs (0.05/39): U* = 78, 7.45% > 5%.
  const MinimumDetectableEffect mde = minimum_detectable_effect(metric(kQuiet, kQuiet), 0.05 / 39);
  EXPECT_NEAR(mde.value, 0.07454811709763814, 1e-12);
  EXPECT_DOUBLE_EQ(mde.test, mde.value);
  EXPECT_EQ(mde.limited_by, MdeLimit::kTest);
  EXPECT_STREQ(to_string(mde.limited_by), "test");
}

TEST(MinimumDetectableEffect, NoneWhenCompleteSeparationCannotReachTheLevel) {
  const std::vector<double> four = {100, 100.2, 100.4, 100.6};
  EXPECT_EQ(minimum_detectable_effect(metric(four, four), 0.05).limited_by, MdeLimit::kThreshold);
  // 4 vs 4 cannot get below 2/70 = 0.029: at 0.02 no change of any size is significant.
  const MinimumDetectableEffect at_two_percent = minimum_detectable_effect(metric(four, four), 0.02);
  EXPECT_EQ(at_two_percent.value, INFINITY);
  EXPECT_EQ(at_two_percent.test, INFINITY);
  EXPECT_EQ(at_two_percent.limited_by, MdeLimit::kRepetitions);
  // 3 vs 3 (smallest p 0.1), one sample, or aggregates only: none at any usual level.
  EXPECT_EQ(minimum_detectable_effect(metric({100, 101, 102}, {100, 101, 102}), 0.05).value, INFINITY);
  EXPECT_EQ(minimum_detectable_effect(metric({100}, kQuiet), 0.05).limited_by, MdeLimit::kRepetitions);
  SideStats aggregates = describe(kQuiet);
  aggregates.aggregates_only = true;
  const MetricComparison from_aggregates =
      compare_metric(aggregates, describe(kQuiet), Direction::kLowerIsBetter, 0.05, 0.05);
  EXPECT_EQ(minimum_detectable_effect(from_aggregates, 0.05).limited_by, MdeLimit::kRepetitions);
}

TEST(MinimumDetectableEffect, NoneWhenTheNoiseRuleHidesEveryChange) {
  const std::vector<double> spread = {88, 92, 96, 100, 104, 108, 112, 116, 120};  // robust CV 11.4%
  const MinimumDetectableEffect mde = minimum_detectable_effect(metric(kQuiet, spread), 0.05);
  EXPECT_EQ(mde.value, INFINITY);
  EXPECT_EQ(mde.limited_by, MdeLimit::kNoise);
  EXPECT_TRUE(std::isfinite(mde.test));  // what the U test alone could have seen
}

TEST(MinimumDetectableEffect, DirectionOfCounters) {
  // Higher is better: a regression is a drop, 1 - exp(-L), a little smaller than exp(L) - 1.
  const MinimumDetectableEffect lower = minimum_detectable_effect(metric(kQuiet, kQuiet), 0.05);
  const MinimumDetectableEffect higher =
      minimum_detectable_effect(metric(kQuiet, kQuiet, Direction::kHigherIsBetter), 0.05);
  const double shift = std::log1p(lower.test);
  EXPECT_NEAR(higher.test, -std::expm1(-shift), 1e-14);
  const MinimumDetectableEffect informational =
      minimum_detectable_effect(metric(kQuiet, kQuiet, Direction::kInformational), 0.05);
  EXPECT_TRUE(std::isnan(informational.value));
  EXPECT_EQ(informational.limited_by, MdeLimit::kNotJudged);
}

TEST(MinimumDetectableEffect, ReportsUseTheLevelOfTheCorrection) {
  const test_util::ManyPairs runs = test_util::many_pairs();
  Settings settings;
  const auto report_with = [&](Correction correction) {
    settings.correction = correction;
    return test_util::compare_samples(runs.base, runs.contender, settings);
  };
  const Report holm = report_with(Correction::kHolm);
  const Report none = report_with(Correction::kNone);
  const PairResult& same_holm = holm.results.front();
  ASSERT_EQ(same_holm.name, "many/same/0");
  // Holm needs p < 0.05/39 here: a 5% slowdown of these samples could not have been called.
  EXPECT_NEAR(same_holm.time.mde.value, 0.07454811709763814, 1e-12);
  EXPECT_EQ(same_holm.time.mde.limited_by, MdeLimit::kTest);
  EXPECT_DOUBLE_EQ(none.results.front().time.mde.value, 0.05);
  for (const PairResult& result : holm.results) {
    const MinimumDetectableEffect expected = minimum_detectable_effect(result.time, holm.summary.p_cutoff);
    EXPECT_DOUBLE_EQ(result.time.mde.value, expected.value) << result.name;
  }
}

}  // namespace
}  // namespace gptbench::compare
