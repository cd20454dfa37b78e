// gptbench-premerge's adaptive stopping rule (runner/premerge_stop.h) on synthetic samples.
#include "premerge_stop.h"

#include <gtest/gtest.h>

#include <random>

namespace gptbench::runner {
namespace {

// Normal samples around `mean` with relative spread `relative_sd`, from a fixed seed.
class Source {
 public:
  Source(double mean, double relative_sd, uint64_t seed) : mean_(mean), noise_(0, relative_sd), rng_(seed) {}
  double next() { return mean_ * (1 + noise_(rng_)); }

 private:
  double mean_;
  std::normal_distribution<double> noise_;
  std::mt19937_64 rng_;
};

struct Outcome {
  StopCheck check;
  size_t rounds = 0;
};

// Rounds of one sample per side until the rule stops (or 1000 rounds).
Outcome run(Source base, Source contender, const StopSettings& settings) {
  std::vector<double> b, c;
  Outcome out;
  while (out.rounds < 1000) {
    b.push_back(base.next());
    c.push_back(contender.next());
    ++out.rounds;
    out.check = check_stop(b, c, settings, 0);
    if (out.check.reason != StopReason::kContinue) break;
  }
  return out;
}

StopSettings settings(double alpha = 0.05 / 10) {
  StopSettings s;
  s.min_samples = 5;
  s.max_samples = 30;
  s.max_seconds = 10;
  s.alpha = alpha;  // 10 benchmarks in the check
  s.threshold = 0.02;
  return s;
}

TEST(PremergeStop, ClearRegressionStopsEarlyAsDecidedChange) {
  const Outcome out = run(Source(100e3, 0.002, 1), Source(110e3, 0.002, 2), settings());
  EXPECT_EQ(out.check.reason, StopReason::kDecidedChange);
  EXPECT_EQ(out.check.comparison.verdict, compare::Verdict::kRegression);
  // 6 vs 6 is the fewest for which the exact U test reaches p < 0.005.
  EXPECT_LE(out.rounds, 7u);
  EXPECT_NEAR(out.check.comparison.change, 0.10, 0.01);
}

TEST(PremergeStop, ClearImprovementIsADecidedChangeToo) {
  const Outcome out = run(Source(100e3, 0.002, 3), Source(80e3, 0.002, 4), settings());
  EXPECT_EQ(out.check.reason, StopReason::kDecidedChange);
  EXPECT_EQ(out.check.comparison.verdict, compare::Verdict::kImprovement);
}

TEST(PremergeStop, IdenticalDistributionsStopAsDecidedSame) {
  const Outcome out = run(Source(100e3, 0.002, 5), Source(100e3, 0.002, 6), settings());
  EXPECT_EQ(out.check.reason, StopReason::kDecidedSame);
  EXPECT_EQ(out.rounds, 5u);  // at min_samples: the interval is far inside ±1%
  EXPECT_TRUE(clearly_same(out.check.comparison, 0.02));
}

TEST(PremergeStop, NoisyDistributionsRunToMaxSamplesUndecided) {
  const Outcome out = run(Source(1e6, 0.15, 7), Source(1e6, 0.15, 8), settings());
  EXPECT_EQ(out.check.reason, StopReason::kMaxSamples);
  EXPECT_EQ(out.rounds, 30u);
  EXPECT_TRUE(out.check.compared);
  EXPECT_GT(out.check.comparison.uncertainty, 0.01);
}

TEST(PremergeStop, NothingIsDecidedBeforeMinSamples) {
  // 4 vs 4 clearly apart: significant at 0.05, but min_samples is 5.
  StopSettings s = settings(0.05);
  const std::vector<double> b = {100, 101, 100.5, 100.2}, c = {150, 151, 150.5, 150.2};
  const StopCheck check = check_stop(b, c, s, 0);
  EXPECT_EQ(check.reason, StopReason::kContinue);
  EXPECT_TRUE(check.compared);  // the numbers are there for the progress line
  EXPECT_NEAR(check.comparison.change, 0.5, 0.01);
  s.min_samples = 4;
  EXPECT_EQ(check_stop(b, c, s, 0).reason, StopReason::kDecidedChange);
}

TEST(PremergeStop, ASmallerAlphaNeedsMoreSamples) {
  // The same regression, once for a check of 1 benchmark and once for one of 1000.
  const Outcome one = run(Source(100e3, 0.002, 9), Source(110e3, 0.002, 10), settings(0.05));
  const Outcome many = run(Source(100e3, 0.002, 9), Source(110e3, 0.002, 10), settings(0.05 / 1000));
  EXPECT_EQ(one.check.reason, StopReason::kDecidedChange);
  EXPECT_EQ(many.check.reason, StopReason::kDecidedChange);
  EXPECT_EQ(one.rounds, 5u);
  EXPECT_GT(many.rounds, one.rounds);
}

TEST(PremergeStop, TimeLimitStopsUndecided) {
  const std::vector<double> b = {1, 2, 3, 4, 5, 6}, c = {2, 3, 4, 5, 6, 7};
  EXPECT_EQ(check_stop(b, c, settings(), 9.9).reason, StopReason::kContinue);
  EXPECT_EQ(check_stop(b, c, settings(), 10).reason, StopReason::kMaxTime);
  // Before the samples for a comparison, too.
  EXPECT_EQ(check_stop({1}, {}, settings(), 11).reason, StopReason::kMaxTime);
  EXPECT_FALSE(check_stop({1}, {}, settings(), 11).compared);
}

TEST(PremergeStop, ASignificantChangeWithinTheThresholdIsNotADecidedChange) {
  // +1.5% with almost no noise: significant, but within the 2% threshold; the interval reaches
  // beyond ±1%, so it is not clearly the same either, until max_samples.
  StopSettings s = settings(0.05);
  std::vector<double> b, c;
  for (int i = 0; i < 30; ++i) {
    b.push_back(100 + 0.001 * i);
    c.push_back(101.5 + 0.001 * i);
  }
  const StopCheck check = check_stop(b, c, s, 0);
  EXPECT_EQ(check.comparison.verdict, compare::Verdict::kSame);
  EXPECT_EQ(check.reason, StopReason::kMaxSamples);
}

TEST(PremergeStop, ReasonNames) {
  EXPECT_STREQ(to_string(StopReason::kDecidedChange), "decided-change");
  EXPECT_STREQ(to_string(StopReason::kDecidedSame), "decided-same");
  EXPECT_STREQ(to_string(StopReason::kMaxSamples), "max-samples");
  EXPECT_STREQ(to_string(StopReason::kMaxTime), "max-time");
  EXPECT_STREQ(to_string(StopReason::kLost), "lost");
  EXPECT_STREQ(to_string(StopReason::kSkipped), "skipped");
  EXPECT_STREQ(to_string(StopReason::kOneSide), "one-side");
  EXPECT_STREQ(to_string(StopReason::kEpochDone), "epoch-done");
}

// --- Epochs: one fresh worker process per side each (--processes) -----------------------------

StopSettings epoch_settings(size_t processes = 3) {
  StopSettings s = settings(0.05);
  s.processes = processes;
  return s;
}

// Rounds of epoch `epoch` (one sample per side each) appended to the pooled samples until the
// rule ends the epoch's part or stops the benchmark.
struct EpochRun {
  SideSamples base, contender;
  StopCheck check;
  size_t rounds = 0;
};

void run_epoch(EpochRun& run, Source& base, Source& contender, const StopSettings& s, size_t epoch,
               double base_offset = 0, double contender_offset = 0) {
  run.rounds = 0;
  while (run.rounds < 1000) {
    run.base.times.push_back(base.next() * (1 + base_offset));
    run.base.epochs.push_back(static_cast<int64_t>(epoch));
    run.contender.times.push_back(contender.next() * (1 + contender_offset));
    run.contender.epochs.push_back(static_cast<int64_t>(epoch));
    ++run.rounds;
    run.check = check_stop(run.base, run.contender, s, epoch, 0);
    if (run.check.reason != StopReason::kContinue) return;
  }
}

TEST(PremergeStop, SamplesPerProcessSplitMaxSamplesButNeverBelowMinSamples) {
  StopSettings s = epoch_settings(3);
  EXPECT_EQ(samples_per_process(s), 10u);
  s.max_samples = 31;
  EXPECT_EQ(samples_per_process(s), 11u);  // rounded up
  s.max_samples = 10;
  EXPECT_EQ(samples_per_process(s), 5u);  // min_samples
  s.processes = 1;
  s.max_samples = 30;
  EXPECT_EQ(samples_per_process(s), 30u);
}

TEST(PremergeStop, OnlyTheLastEpochStopsEarlyEarlierOnesEndAtMinSamples) {
  const StopSettings s = epoch_settings(3);
  Source base(100e3, 0.002, 5), contender(100e3, 0.002, 6);
  EpochRun run;
  for (size_t epoch = 0; epoch < 2; ++epoch) {
    run_epoch(run, base, contender, s, epoch);
    EXPECT_EQ(run.check.reason, StopReason::kEpochDone) << epoch;
    EXPECT_EQ(run.rounds, 5u) << epoch;  // clearly the same already: this epoch's part is done
  }
  run_epoch(run, base, contender, s, 2);
  EXPECT_EQ(run.check.reason, StopReason::kDecidedSame);
  EXPECT_EQ(run.rounds, 5u);
  EXPECT_EQ(run.base.times.size(), 15u);
  EXPECT_EQ(run.check.comparison.base.processes, 3u);
  // A clear regression likewise: every epoch contributes its min_samples first.
  Source slow_base(100e3, 0.002, 1), slow(110e3, 0.002, 2);
  EpochRun change;
  run_epoch(change, slow_base, slow, s, 0);
  EXPECT_EQ(change.check.reason, StopReason::kEpochDone);
  EXPECT_EQ(change.check.comparison.verdict, compare::Verdict::kRegression);
  run_epoch(change, slow_base, slow, s, 1);
  run_epoch(change, slow_base, slow, s, 2);
  EXPECT_EQ(change.check.reason, StopReason::kDecidedChange);
  EXPECT_EQ(change.rounds, 5u);
}

TEST(PremergeStop, UndecidedEpochsTakeTheirShareOfMaxSamples) {
  const StopSettings s = epoch_settings(3);
  Source base(1e6, 0.15, 7), contender(1e6, 0.15, 8);
  EpochRun run;
  run_epoch(run, base, contender, s, 0);
  EXPECT_EQ(run.check.reason, StopReason::kEpochDone);
  EXPECT_EQ(run.rounds, 10u);
  run_epoch(run, base, contender, s, 1);
  EXPECT_EQ(run.check.reason, StopReason::kEpochDone);
  run_epoch(run, base, contender, s, 2);
  EXPECT_EQ(run.check.reason, StopReason::kMaxSamples);
  EXPECT_EQ(run.base.times.size(), 30u);
}

TEST(PremergeStop, TheTimeLimitIsSharedAmongTheEpochs) {
  const StopSettings s = epoch_settings(3);  // 10 s in all
  const SideSamples b{{1, 2, 3}, {0, 0, 0}}, c{{2, 3, 4}, {0, 0, 0}};
  EXPECT_EQ(check_stop(b, c, s, 0, 3.3).reason, StopReason::kContinue);
  EXPECT_EQ(check_stop(b, c, s, 0, 3.4).reason, StopReason::kEpochDone);
  EXPECT_EQ(check_stop(b, c, s, 1, 6.6).reason, StopReason::kContinue);
  EXPECT_EQ(check_stop(b, c, s, 2, 9.9).reason, StopReason::kContinue);
  EXPECT_EQ(check_stop(b, c, s, 2, 10).reason, StopReason::kMaxTime);
}

TEST(PremergeStop, ProcessesFartherApartThanTheThresholdAreNoDecidedChange) {
  // New is 10% slower, within-process noise 0.2%, but base's third process runs 2.5% slower than
  // its other two: the processes leave the change known to +/-3.3%, wider than the 2%
  // threshold. Pooled without the processes this is a clear regression; with them it is noise,
  // and since the processes differ far beyond their samples' noise, more samples of them cannot
  // help: the benchmark stops for its processes at min_samples, and wants more of them.
  const StopSettings s = epoch_settings(3);
  Source base(100e3, 0.002, 11), contender(110e3, 0.002, 12);
  EpochRun run;
  run_epoch(run, base, contender, s, 0);
  run_epoch(run, base, contender, s, 1);
  run_epoch(run, base, contender, s, 2, 0.025, 0);
  EXPECT_EQ(run.check.reason, StopReason::kProcesses);
  EXPECT_EQ(run.rounds, 5u);
  EXPECT_GT(run.check.comparison.process_interval, 0.02);
  EXPECT_TRUE(process_limited(run.check.comparison));
  EXPECT_TRUE(wants_more_processes(run.check.reason, run.check.comparison));
  EXPECT_GT(run.check.comparison.base.process_spread, 0.02);
  EXPECT_EQ(run.check.comparison.verdict, compare::Verdict::kUnreliable);
  const StopCheck pooled = check_stop(SideSamples{run.base.times, {}}, SideSamples{run.contender.times, {}}, s, 2, 0);
  EXPECT_EQ(pooled.comparison.verdict, compare::Verdict::kRegression) << pooled.comparison.reason;
  EXPECT_EQ(pooled.reason, StopReason::kDecidedChange);
  // Offsets an epoch gives both sides (the GPU's state at that time) cancel: the sides' epochs
  // pair, and processes 1.5% apart on each side still make a clear "same".
  Source same_base(100e3, 0.002, 13), same_new(100e3, 0.002, 14);
  EpochRun same;
  run_epoch(same, same_base, same_new, s, 0, 0, 0);
  run_epoch(same, same_base, same_new, s, 1, 0.015, 0.015);
  run_epoch(same, same_base, same_new, s, 2, 0.0075, 0.0075);
  EXPECT_EQ(same.check.reason, StopReason::kDecidedSame);
  EXPECT_TRUE(same.check.comparison.processes_paired);
  EXPECT_GT(same.check.comparison.base.process_spread, 0.014);
  EXPECT_LT(same.check.comparison.uncertainty, 0.01);
  // Offsets of one side's processes alone do not: the paired differences keep them, and the
  // interval stays wider than threshold/2 (no decided-same).
  Source one_base(100e3, 0.002, 15), one_new(100e3, 0.002, 16);
  EpochRun one;
  run_epoch(one, one_base, one_new, s, 0, 0, 0);
  run_epoch(one, one_base, one_new, s, 1, 0.006, 0);
  run_epoch(one, one_base, one_new, s, 2, 0.003, 0);
  EXPECT_NE(one.check.reason, StopReason::kDecidedSame);
  EXPECT_GT(std::fabs(one.check.comparison.change) + one.check.comparison.uncertainty, 0.01);
}

}  // namespace
}  // namespace gptbench::runner
