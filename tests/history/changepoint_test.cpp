// PELT change points on synthetic series with known steps, drifts and pure noise.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "changepoint.h"

namespace gptbench::history {
namespace {

// 1000 ns times (1 + N(0, sd)) with the given multiplicative level per position.
std::vector<double> noisy(const std::vector<double>& levels, double sd, unsigned seed) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> noise(0.0, sd);
  std::vector<double> values;
  for (double level : levels) values.push_back(1000.0 * level * (1 + noise(random)));
  return values;
}

std::vector<double> levels(std::initializer_list<std::pair<size_t, double>> pieces) {
  std::vector<double> out;
  for (auto [count, level] : pieces) out.insert(out.end(), count, level);
  return out;
}

TEST(PeltTest, NoiseFreeStepsAreExact) {
  std::vector<double> y(30, 0.0);
  for (size_t i = 10; i < 20; ++i) y[i] = 1.0;
  EXPECT_EQ(pelt_mean_changes(y, 0.01, 10, 2), (std::vector<size_t>{10, 20}));
  EXPECT_TRUE(pelt_mean_changes(std::vector<double>(30, 1.0), 0.01, 10, 2).empty());
}

TEST(PeltTest, TooShortForTwoSegments) {
  EXPECT_TRUE(pelt_mean_changes({1, 1, 5, 5, 5}, 0.01, 1, 3).empty());
  EXPECT_TRUE(detect_steps({1000, 1000, 2000}).empty());
}

TEST(DifferenceNoiseTest, StepsDoNotInflateIt) {
  const auto y = noisy(levels({{100, 1.0}, {100, 1.5}}), 0.01, 3);
  std::vector<double> logs;
  for (double v : y) logs.push_back(std::log(v));
  EXPECT_NEAR(difference_noise(logs), 0.01, 0.003);
}

TEST(DetectStepsTest, OneStepAtTheRightRun) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const auto steps = detect_steps(noisy(levels({{50, 1.0}, {50, 1.10}}), 0.01, seed));
    ASSERT_EQ(steps.size(), 1u) << "seed " << seed;
    EXPECT_EQ(steps[0].index, 50u) << "seed " << seed;
    EXPECT_NEAR(steps[0].change, 0.10, 0.01);
    EXPECT_NEAR(steps[0].before, 1000, 10);
  }
}

TEST(DetectStepsTest, StepUpThenBackDown) {
  const auto steps = detect_steps(noisy(levels({{40, 1.0}, {20, 1.25}, {40, 1.0}}), 0.02, 7));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].index, 40u);
  EXPECT_EQ(steps[1].index, 60u);
  EXPECT_NEAR(steps[0].change, 0.25, 0.03);
  EXPECT_NEAR(steps[1].change, -0.20, 0.03);
}

TEST(DetectStepsTest, SmallStepInLowNoiseIsFound) {
  // A 3% step under 0.5% noise: five standard deviations.
  const auto steps = detect_steps(noisy(levels({{60, 1.0}, {60, 1.03}}), 0.005, 11));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_NEAR(static_cast<double>(steps[0].index), 60, 1);
}

TEST(DetectStepsTest, StepBelowMinimumEffectIsNotReported) {
  const auto values = noisy(levels({{60, 1.0}, {60, 1.015}}), 0.001, 5);
  EXPECT_TRUE(detect_steps(values).empty());  // 1.5% < the default 2%
  ChangePointSettings settings;
  settings.min_effect = 0.01;
  ASSERT_EQ(detect_steps(values, settings).size(), 1u);
  EXPECT_EQ(detect_steps(values, settings)[0].index, 60u);
}

TEST(DetectStepsTest, SlowDriftIsReportedWhereItHappens) {
  // Flat, then 1% slower per run for 10 runs, then flat: no single run is a 5% step, but the
  // 10% drift is found, inside the drift, adding up to about 10%.
  std::vector<double> level = levels({{60, 1.0}});
  for (int i = 1; i <= 10; ++i) level.push_back(1.0 + 0.01 * i);
  level.insert(level.end(), 60, 1.10);
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const auto steps = detect_steps(noisy(level, 0.005, seed));
    ASSERT_FALSE(steps.empty()) << "seed " << seed;
    double total = 1;
    for (const Step& step : steps) {
      EXPECT_GE(step.index, 58u) << "seed " << seed;
      EXPECT_LE(step.index, 72u) << "seed " << seed;
      total *= 1 + step.change;
    }
    EXPECT_NEAR(total - 1, 0.10, 0.03) << "seed " << seed;
  }
}

TEST(DetectStepsTest, NoFalseStepsInStationaryNoise) {
  // 200 runs of pure noise, 100 different series each of Gaussian and of heavy-tailed noise.
  for (unsigned seed = 1; seed <= 100; ++seed) {
    EXPECT_TRUE(detect_steps(noisy(levels({{200, 1.0}}), 0.02, seed)).empty()) << "gaussian, seed " << seed;
    std::mt19937_64 random(seed);
    std::student_t_distribution<double> heavy(3.0);
    std::vector<double> values;
    for (int i = 0; i < 200; ++i) values.push_back(1000 * std::exp(0.02 * heavy(random)));
    const auto steps = detect_steps(values);
    EXPECT_TRUE(steps.empty()) << "student-t, seed " << seed << ": step at " << steps[0].index << ", "
                               << steps[0].change;
  }
}

TEST(DetectStepsTest, OneOutlyingRunIsNoStep) {
  auto values = noisy(levels({{100, 1.0}}), 0.01, 2);
  values[50] *= 3;
  values[51] *= 2;
  EXPECT_TRUE(detect_steps(values).empty());
}

}  // namespace
}  // namespace gptbench::history
