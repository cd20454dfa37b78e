#include "premerge_stop.h"

#include <algorithm>
#include <cmath>

namespace gptbench::runner {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kContinue: return "continue";
    case StopReason::kDecidedChange: return "decided-change";
    case StopReason::kDecidedSame: return "decided-same";
    case StopReason::kMaxSamples: return "max-samples";
    case StopReason::kMaxTime: return "max-time";
    case StopReason::kLost: return "lost";
    case StopReason::kSkipped: return "skipped";
    case StopReason::kOneSide: return "one-side";
    case StopReason::kEpochDone: return "epoch-done";
    case StopReason::kProcesses: return "processes";
  }
  return "?";
}

size_t samples_per_process(const StopSettings& settings) {
  const size_t processes = std::max<size_t>(settings.processes, 1);
  return std::max(settings.min_samples, (settings.max_samples + processes - 1) / processes);
}

bool clearly_same(const compare::MetricComparison& comparison, double threshold) {
  const double reach = std::fabs(comparison.change) + comparison.uncertainty;
  return std::isfinite(reach) && reach <= threshold / 2;
}

namespace {

// Samples of one side taken in `epoch`.
size_t in_epoch(const SideSamples& side, size_t epoch) {
  if (side.epochs.size() != side.times.size()) return side.times.size();
  return static_cast<size_t>(
      std::count(side.epochs.begin(), side.epochs.end(), static_cast<int64_t>(epoch)));
}

compare::SideStats describe(const SideSamples& side) {
  if (side.epochs.size() != side.times.size()) return compare::describe(side.times);
  return compare::describe(side.times, side.epochs);
}

}  // namespace

StopCheck check_stop(const SideSamples& base, const SideSamples& contender, const StopSettings& settings,
                     size_t epoch, double elapsed_s) {
  StopCheck check;
  if (base.times.size() >= compare::kMinRepetitions && contender.times.size() >= compare::kMinRepetitions) {
    // Both sides' samples of an epoch are interleaved: their processes pair (process_interval).
    check.comparison = compare::compare_metric(describe(base), describe(contender), compare::Direction::kLowerIsBetter,
                                               settings.alpha, settings.threshold, true);
    check.compared = true;
  }
  const size_t processes = std::max<size_t>(settings.processes, 1);
  const bool last = epoch + 1 >= processes;
  const StopReason end_of_epoch = StopReason::kEpochDone;
  const size_t fewest = std::min(in_epoch(base, epoch), in_epoch(contender, epoch));
  if (check.compared && fewest >= settings.min_samples) {
    const compare::MetricComparison& c = check.comparison;
    // compare_metric already calls a change with processes this far apart unreliable; the
    // check says so itself so that no change is ever decided on a process-level offset.
    const bool noisy_processes = !(c.process_interval <= settings.threshold);
    if ((c.verdict == compare::Verdict::kRegression || c.verdict == compare::Verdict::kImprovement) &&
        !noisy_processes) {
      check.reason = last ? StopReason::kDecidedChange : end_of_epoch;
      return check;
    }
    if (clearly_same(c, settings.threshold)) {
      check.reason = last ? StopReason::kDecidedSame : end_of_epoch;
      return check;
    }
    if (noisy_processes && process_limited(c)) {
      check.reason = last ? StopReason::kProcesses : end_of_epoch;
      return check;
    }
  }
  if (fewest >= samples_per_process(settings)) {
    check.reason = last ? StopReason::kMaxSamples : end_of_epoch;
  } else if (elapsed_s >= settings.max_seconds * static_cast<double>(epoch + 1) / static_cast<double>(processes)) {
    check.reason = last ? StopReason::kMaxTime : end_of_epoch;
  }
  return check;
}

bool process_limited(const compare::MetricComparison& comparison) {
  // A side counts when its processes differ beyond their medians' sampling error and that
  // error is small beside the threshold: with 2 or 3 processes the scatter of their medians is
  // itself a rough estimate, and for a benchmark whose samples are this noisy (a host-bound
  // row) more samples are what narrows the interval.
  const auto side = [&](const compare::SideStats& s) {
    return compare::processes_differ_beyond_sampling(s) &&
           compare::process_median_error(s) < comparison.threshold / 2;
  };
  return side(comparison.base) || side(comparison.contender);
}

bool wants_more_processes(StopReason reason, const compare::MetricComparison& comparison) {
  if (reason == StopReason::kProcesses) return true;
  if (reason != StopReason::kMaxSamples && reason != StopReason::kMaxTime) return false;
  // Undecided, not to be called same for what the processes leave, and their medians differ
  // beyond their sampling error.
  return std::fabs(comparison.change) + comparison.process_interval > comparison.threshold / 2 &&
         process_limited(comparison);
}

StopCheck check_stop(const std::vector<double>& base, const std::vector<double>& contender,
                     const StopSettings& settings, double elapsed_s) {
  return check_stop(SideSamples{base, {}}, SideSamples{contender, {}}, settings, 0, elapsed_s);
}

}  // namespace gptbench::runner
