// Mann-Whitney U against scipy and against values derived by hand.
// Expected p-values were computed with scipy 1.17.1 (pip, Python 3.11):
//   scipy.stats.mannwhitneyu(x, y, alternative='two-sided')  (method='auto')
// printed with '%.17g'. The script is in tests/compare/tools/scipy_mwu.py.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compare/stats.h"

namespace gptbench::compare {
namespace {

constexpr double kTolerance = 1e-6;

struct ScipyCase {
  const char* name;
  std::vector<double> x;
  std::vector<double> y;
  double u1;
  double p_value;
  UTestMethod method;
};

const std::vector<ScipyCase>& scipy_cases() {
  static const std::vector<ScipyCase> kCases = {
      {"exact_3v3_disjoint", {1, 2, 3}, {4, 5, 6}, 0, 0.10000000000000001, UTestMethod::kExact},
      {"exact_3v3_one_swap", {1, 2, 4}, {3, 5, 6}, 1, 0.20000000000000001, UTestMethod::kExact},
      {"exact_5v7",
       {100.006, 101.494, 98.629, 95.547, 97.727},
       {99.042, 104.301, 110.701, 101.539, 100.898, 106.449, 105.784},
       3, 0.01767676767676768, UTestMethod::kExact},
      {"exact_3v50",
       {100.5271, 95.3477, 99.8537},
       {104.4765, 94.2789, 98.7119, 91.4939, 94.5523, 91.7913, 99.8245, 94.6628, 102.3563, 101.7838,
        100.0653, 88.4162, 98.3065, 100.7575, 101.5665, 93.3493, 98.6112, 96.1074, 96.9558, 106.3045,
        96.9623, 100.8374, 105.4219, 98.082, 100.4415, 101.5523, 101.3189, 94.8747, 101.3807, 107.7941,
        93.2643, 105.2969, 101.5968, 97.7926, 111.0021, 104.8113, 95.0036, 101.3726, 103.8834, 100.0561,
        104.4146, 100.6674, 104.3362, 108.1926, 97.6217, 102.0157, 98.6835, 101.6363, 95.064, 98.1035},
       60, 0.59600443951165383, UTestMethod::kExact},
      {"exact_8v8",
       {99.4114, 102.6963, 103.4357, 96.0294, 97.6161, 101.9407, 94.0227, 98.6105},
       {102.7081, 106.771, 105.0682, 102.0184, 101.8943, 102.2494, 107.5706, 101.7159},
       11, 0.028127428127428127, UTestMethod::kExact},
      {"asymptotic_9v9",
       {99.089, 101.0578, 99.6377, 99.4081, 96.6578, 99.9654, 98.6693, 103.4984, 101.9593},
       {102.9276, 105.0051, 101.9804, 106.1564, 102.9838, 104.7501, 99.1273, 104.04, 97.9354},
       17, 0.042260106083956639, UTestMethod::kAsymptotic},
      {"asymptotic_ties_4v5", {1, 2, 2, 3}, {2, 3, 4, 4, 5}, 2.5, 0.078545850951190668, UTestMethod::kAsymptotic},
      {"asymptotic_ties_10v12",
       {8, 10, 9, 10, 12, 9, 9, 10, 10, 10},
       {11, 12, 12, 10, 11, 11, 10, 11, 10, 12, 11, 11},
       18, 0.0044361904394683276, UTestMethod::kAsymptotic},
      {"asymptotic_30v40",
       {47.636, 49.526, 42.009, 45.474, 51.451, 41.486, 53.386, 43.016, 53.027, 46.618,
        53.116, 50.524, 43.853, 54.997, 55.767, 49.737, 48.904, 49.361, 46.099, 54.394,
        47.828, 49.795, 46.827, 47.496, 44.889, 55.028, 49.384, 53.864, 50.053, 47.222},
       {49.693, 48.759, 51.032, 49.499, 49.8, 45.486, 47.773, 57.616, 48.315, 46.784,
        52.349, 56.629, 45.184, 50.166, 48.472, 43.956, 53.94, 50.906, 51.286, 47.991,
        52.819, 48.843, 50.428, 46.567, 46.136, 56.342, 48.972, 52.167, 50.865, 49.235,
        48.968, 53.52, 49.793, 50.394, 51.089, 55.706, 53.722, 52.53, 48.746, 45.472},
       508, 0.27752092845197884, UTestMethod::kAsymptotic},
      {"all_tied", {5, 5, 5}, {5, 5}, 3, 1.0, UTestMethod::kAsymptotic},
      {"one_v_one", {1}, {2}, 0, 1.0, UTestMethod::kExact},
  };
  return kCases;
}

TEST(MannWhitneyU, MatchesScipyTwoSidedAuto) {
  for (const ScipyCase& c : scipy_cases()) {
    SCOPED_TRACE(c.name);
    const UTestResult result = mann_whitney_u(c.x, c.y);
    EXPECT_DOUBLE_EQ(result.u1, c.u1);
    EXPECT_NEAR(result.p_value, c.p_value, kTolerance);
    EXPECT_EQ(result.method, c.method);
  }
}

TEST(MannWhitneyU, SymmetricInItsArguments) {
  for (const ScipyCase& c : scipy_cases()) {
    SCOPED_TRACE(c.name);
    const UTestResult forward = mann_whitney_u(c.x, c.y);
    const UTestResult backward = mann_whitney_u(c.y, c.x);
    EXPECT_NEAR(forward.p_value, backward.p_value, 1e-12);
    EXPECT_DOUBLE_EQ(forward.u1 + backward.u1, static_cast<double>(c.x.size() * c.y.size()));
  }
}

// By hand: with n1 = n2 = 2 there are C(4,2) = 6 equally likely arrangements;
// U takes 0,1,2,2,3,4. Completely separated samples give U = 4, P(U >= 4) = 1/6,
// two-sided p = 2/6.
TEST(MannWhitneyU, ExactDistributionByHand) {
  EXPECT_NEAR(exact_u_p_value(2, 2, 4), 2.0 / 6.0, 1e-15);
  EXPECT_NEAR(exact_u_p_value(2, 2, 3), 2.0 * 2.0 / 6.0, 1e-15);  // P(U >= 3) = 2/6
  EXPECT_DOUBLE_EQ(exact_u_p_value(2, 2, 2), 1.0);                 // 2 * 4/6 clipped to 1
  // n1 = 1, n2 = 4: U uniform on {0..4}; P(U >= 4) = 1/5.
  EXPECT_NEAR(exact_u_p_value(1, 4, 4), 2.0 / 5.0, 1e-15);
  // Separated 4 vs 4: 2 / C(8,4) = 2/70.
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4}, {5, 6, 7, 8}).p_value, 2.0 / 70.0, 1e-15);
}

// By hand, normal approximation for two separated samples of 9:
// U = 81, mu = 40.5, sigma = sqrt(81 * 19 / 12) = 11.3248, z = (81 - 40.5 - 0.5) / sigma.
TEST(MannWhitneyU, NormalApproximationByHand) {
  std::vector<double> x, y;
  for (int i = 0; i < 9; ++i) {
    x.push_back(i);
    y.push_back(100 + i);
  }
  const double z = 40.0 / std::sqrt(81.0 * 19.0 / 12.0);
  const UTestResult result = mann_whitney_u(x, y);
  EXPECT_EQ(result.method, UTestMethod::kAsymptotic);
  EXPECT_NEAR(result.p_value, std::erfc(z / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(result.p_value, 0.0004122948021, 1e-9);  // scipy gives the same
}

TEST(MannWhitneyU, SmallestReachablePValue) {
  EXPECT_NEAR(smallest_p_value(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(smallest_p_value(4, 4), 2.0 / 70.0, 1e-12);
  EXPECT_GT(smallest_p_value(2, 2), 0.05);
  EXPECT_LT(smallest_p_value(9, 9), 0.001);
}

TEST(MannWhitneyU, LargeSamplesAreFastAndSane) {
  std::vector<double> x, y;
  for (int i = 0; i < 100000; ++i) {
    x.push_back(i % 1000);
    y.push_back(i % 1000 + 0.5);
  }
  const UTestResult result = mann_whitney_u(x, y);
  EXPECT_EQ(result.method, UTestMethod::kAsymptotic);
  EXPECT_GT(result.p_value, 0.0);
  EXPECT_LT(result.p_value, 1.0);
}

TEST(Descriptive, MeanStddevCv) {
  EXPECT_DOUBLE_EQ(mean({1, 2, 3, 4}), 2.5);
  EXPECT_NEAR(sample_stddev({2, 4, 4, 4, 5, 5, 7, 9}), 2.1380899, 1e-6);
  EXPECT_DOUBLE_EQ(sample_stddev({5}), 0);
  EXPECT_NEAR(coefficient_of_variation({90, 100, 110}), 10.0 / 100.0, 1e-12);
}

TEST(Descriptive, GeometricMeanIgnoresInvalidRatios) {
  EXPECT_NEAR(geometric_mean({2.0, 0.5}), 1.0, 1e-12);
  EXPECT_NEAR(geometric_mean({1.1, 1.1, 1.1}), 1.1, 1e-12);
  EXPECT_NEAR(geometric_mean({4.0, 0.0, -1.0, INFINITY, NAN}), 4.0, 1e-12);
  EXPECT_TRUE(std::isnan(geometric_mean({})));
}


TEST(StudentT, QuantilesMatchTheTables) {
  // scipy.stats.t.ppf(0.975, dof) for dof 1, 2, 4, 10, 30, and a fractional dof.
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.706204736174698, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.302652729749464, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764451051977934, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.2281388519862735, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0422724563012373, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 3.5), 2.9400886, 1e-6);  // by numerical integration
  EXPECT_NEAR(student_t_quantile(0.025, 4), -2.7764451051977934, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.5, 7), 0, 1e-12);
  // Many degrees of freedom: the normal quantile.
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), normal_quantile(0.975), 1e-6);
  EXPECT_NEAR(student_t_cdf(2.7764451051977934, 4), 0.975, 1e-12);
  EXPECT_NEAR(student_t_cdf(0, 3), 0.5, 1e-15);
  EXPECT_TRUE(std::isnan(student_t_quantile(0.975, 0)));
  EXPECT_TRUE(std::isnan(student_t_quantile(1.5, 4)));
  EXPECT_TRUE(std::isinf(student_t_quantile(1, 4)));
}

}  // namespace
}  // namespace gptbench::compare
