#include "side_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "runjson/median.h"
#include "stats.h"

namespace gptbench::compare {

using runjson::Aggregate;
using runjson::Benchmark;
using runjson::CounterSeries;
using runjson::TimeKind;
using runjson::median;

namespace {

constexpr double kMadToSigma = 1.4826;          // MAD of a normal sample -> sigma
constexpr double kMedianEfficiency = 1.2533;    // sqrt(pi/2): SE(median) / SE(mean)

}  // namespace

double relative_median_error(double spread, double center, size_t n) {
  if (n == 0 || !(center > 0) || !std::isfinite(spread)) return std::numeric_limits<double>::infinity();
  return kMedianEfficiency * spread / (center * std::sqrt(static_cast<double>(n)));
}

SideStats describe(std::vector<double> samples, const std::vector<int64_t>& processes) {
  SideStats stats = describe(std::move(samples));
  if (processes.size() != stats.samples.size()) return stats;
  std::map<int64_t, std::vector<double>> by_process;  // -1 (no process_index) sorts first
  bool named = false;
  for (size_t i = 0; i < processes.size(); ++i) {
    by_process[processes[i]].push_back(stats.samples[i]);
    named = named || processes[i] >= 0;
  }
  if (!named) return stats;
  stats.processes = by_process.size();
  for (const auto& [process, values] : by_process) {
    stats.process_ids.push_back(process);
    stats.process_medians.push_back(median(values));
  }
  if (stats.processes >= 2) {
    const auto [lo, hi] = std::minmax_element(stats.process_medians.begin(), stats.process_medians.end());
    const double range = *hi - *lo;
    if (stats.median > 0) {
      stats.process_spread = range / stats.median;
    } else {
      stats.process_spread = range > 0 ? std::numeric_limits<double>::infinity() : 0;
    }
    std::vector<double> logs;
    for (double m : stats.process_medians) logs.push_back(m > 0 ? std::log(m) : std::numeric_limits<double>::quiet_NaN());
    stats.process_log_sd = sample_stddev(logs);
    std::vector<double> deviations;
    size_t p = 0;
    for (const auto& [process, values] : by_process) {
      const double m = stats.process_medians[p++];
      for (double v : values) deviations.push_back(m > 0 ? std::fabs(v / m - 1) : 0);
    }
    stats.within_process_cv = kMadToSigma * median(std::move(deviations));
  }
  return stats;
}

double sample_noise_cv(const SideStats& side) {
  return side.processes >= 2 ? side.within_process_cv : side.robust_cv;
}

double process_median_error(const SideStats& side) {
  if (side.processes < 2 || side.n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double per_process = static_cast<double>(side.n) / static_cast<double>(side.processes);
  return kMedianEfficiency * side.within_process_cv / std::sqrt(per_process);
}

bool processes_differ_beyond_sampling(const SideStats& side) {
  return side.process_log_sd > 2 * process_median_error(side);
}

namespace {

// d_e = ln(new_e / base_e) over the epochs both sides ran (process_interval's `paired`); empty
// with a non-positive median among them (`broken` set).
std::vector<double> epoch_differences(const SideStats& base, const SideStats& contender, bool& broken) {
  broken = false;
  std::map<int64_t, double> base_by_id;
  for (size_t i = 0; i < base.process_ids.size() && i < base.process_medians.size(); ++i)
    if (base.process_ids[i] >= 0) base_by_id[base.process_ids[i]] = base.process_medians[i];
  std::vector<double> differences;
  for (size_t i = 0; i < contender.process_ids.size() && i < contender.process_medians.size(); ++i) {
    const auto match = base_by_id.find(contender.process_ids[i]);
    if (match == base_by_id.end()) continue;
    if (!(match->second > 0) || !(contender.process_medians[i] > 0)) {
      broken = true;
      return {};
    }
    differences.push_back(std::log(contender.process_medians[i] / match->second));
  }
  return differences;
}

// The paired interval of process_interval, or NaN without 2 epochs on both sides.
double paired_process_interval(const SideStats& base, const SideStats& contender) {
  bool broken = false;
  const std::vector<double> differences = epoch_differences(base, contender, broken);
  if (broken) return std::numeric_limits<double>::infinity();
  if (differences.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  const double k = static_cast<double>(differences.size());
  const double error = sample_stddev(differences) / std::sqrt(k);
  return error == 0 ? 0 : std::expm1(student_t_quantile(0.975, k - 1) * error);
}

}  // namespace

double process_interval(const SideStats& base, const SideStats& contender, bool paired) {
  if (paired) {
    const double interval = paired_process_interval(base, contender);
    if (!std::isnan(interval)) return interval;
  }
  const bool base_known = base.processes >= 2;
  const bool new_known = contender.processes >= 2;
  if (!base_known && !new_known) return 0;
  const auto count = [](const SideStats& s) { return static_cast<double>(std::max<size_t>(s.processes, 1)); };
  const double sd_base = base_known ? base.process_log_sd : contender.process_log_sd;
  const double sd_new = new_known ? contender.process_log_sd : base.process_log_sd;
  const double var_base = sd_base * sd_base / count(base);
  const double var_new = sd_new * sd_new / count(contender);
  const double variance = var_base + var_new;
  if (std::isnan(variance)) return std::numeric_limits<double>::infinity();
  if (variance == 0) return 0;
  // Welch-Satterthwaite; a side of one process contributes no degrees of freedom of its own.
  double denominator = 0;
  if (base_known) denominator += var_base * var_base / (count(base) - 1);
  if (new_known) denominator += var_new * var_new / (count(contender) - 1);
  if (!base_known || !new_known) {
    // Both variances come from the one side that has processes: its k - 1 degrees of freedom.
    denominator = variance * variance / (base_known ? count(base) - 1 : count(contender) - 1);
  }
  const double dof = variance * variance / denominator;
  const double t = student_t_quantile(0.975, dof);
  return std::expm1(t * std::sqrt(variance));
}

double process_change(const SideStats& base, const SideStats& contender, bool paired) {
  constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
  if (base.processes < 2 || contender.processes < 2) return kUnknown;
  if (paired) {
    bool broken = false;
    const std::vector<double> differences = epoch_differences(base, contender, broken);
    if (broken) return kUnknown;
    if (differences.size() >= 2) return std::expm1(mean(differences));
  }
  const auto mean_log = [](const SideStats& s) {
    double sum = 0;
    for (double m : s.process_medians) sum += m > 0 ? std::log(m) : std::numeric_limits<double>::quiet_NaN();
    return sum / static_cast<double>(s.process_medians.size());
  };
  if (base.process_medians.empty() || contender.process_medians.empty()) return kUnknown;
  return std::expm1(mean_log(contender) - mean_log(base));
}

SideStats describe(std::vector<double> samples) {
  SideStats stats;
  stats.n = samples.size();
  if (!samples.empty()) {
    stats.median = median(samples);
    stats.mean = mean(samples);
    stats.stddev = sample_stddev(samples);
    stats.cv = coefficient_of_variation(samples);
    const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
    stats.min = *lo;
    stats.max = *hi;
    std::vector<double> deviations;
    deviations.reserve(samples.size());
    for (double v : samples) deviations.push_back(std::fabs(v - stats.median));
    stats.mad = median(std::move(deviations));
    stats.median_error = relative_median_error(kMadToSigma * stats.mad, stats.median, stats.n);
    if (stats.median > 0) stats.robust_cv = kMadToSigma * stats.mad / stats.median;
  }
  stats.samples = std::move(samples);
  return stats;
}

SideStats time_stats(const Benchmark& bench, TimeKind kind) {
  if (!bench.repetitions.empty()) return describe(bench.samples(kind), bench.processes());
  // Aggregates only (--benchmark_report_aggregates_only): median, else mean.
  SideStats stats;
  stats.aggregates_only = true;
  stats.n = static_cast<size_t>(std::max<int64_t>(bench.declared_repetitions, 0));
  const Aggregate* central = bench.aggregate("median");
  if (central == nullptr || !central->has_time) central = bench.aggregate("mean");
  if (central != nullptr && central->has_time) {
    stats.median = kind == TimeKind::kReal ? central->real_ns : central->cpu_ns;
  } else {
    stats.median = std::numeric_limits<double>::quiet_NaN();
  }
  const Aggregate* mean_row = bench.aggregate("mean");
  stats.mean = mean_row != nullptr && mean_row->has_time ? (kind == TimeKind::kReal ? mean_row->real_ns : mean_row->cpu_ns)
                                                          : stats.median;
  const Aggregate* stddev_row = bench.aggregate("stddev");
  if (stddev_row != nullptr && stddev_row->has_time) {
    stats.stddev = kind == TimeKind::kReal ? stddev_row->real_ns : stddev_row->cpu_ns;
  }
  stats.cv = stats.mean > 0 ? stats.stddev / stats.mean : 0;
  stats.median_error = relative_median_error(stats.stddev, stats.median, stats.n);
  stats.min = stats.max = stats.median;
  return stats;
}

SideStats counter_stats(const Benchmark& bench, const std::string& name) {
  if (const CounterSeries* series = bench.counter(name)) return describe(series->values, series->processes);
  SideStats stats;
  stats.aggregates_only = true;
  for (const char* aggregate_name : {"median", "mean"}) {
    if (const Aggregate* agg = bench.aggregate(aggregate_name)) {
      const auto it = agg->counters.find(name);
      if (it != agg->counters.end()) {
        stats.median = stats.mean = stats.min = stats.max = it->second;
        return stats;
      }
    }
  }
  stats.median = std::numeric_limits<double>::quiet_NaN();
  return stats;
}

}  // namespace gptbench::compare
