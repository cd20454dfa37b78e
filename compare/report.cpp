#include "report.h"

#include <cmath>
#include <map>
#include <string>

#include "launch_axis.h"
#include "runjson/format.h"

namespace gptbench::compare {
using runjson::Aggregate;
using runjson::Benchmark;
using runjson::CounterSeries;
using runjson::RunStatus;

namespace {

// Counter names of a benchmark: from its repetitions, else its aggregate rows.
std::vector<std::string> counter_names(const Benchmark& bench) {
  std::vector<std::string> names;
  for (const CounterSeries& series : bench.counters) names.push_back(series.name);
  if (names.empty()) {
    for (const char* aggregate_name : {"median", "mean"}) {
      if (const Aggregate* agg = bench.aggregate(aggregate_name)) {
        for (const auto& entry : agg->counters) names.push_back(entry.first);
        break;
      }
    }
  }
  return names;
}

bool all_finite(const std::vector<double>& values) {
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

std::string side_message(const char* side, const Benchmark& bench) {
  std::string out = std::string(to_string(bench.status)) + " in " + side;
  if (!bench.message.empty()) out += ": " + bench.message;
  return out;
}

}  // namespace

PairResult compare_pair(const BenchmarkPair& pair, const Settings& settings) {
  PairResult result;
  result.name = pair.name;
  result.family = family_of(pair.name);
  result.base_status = pair.base->status;
  result.contender_status = pair.contender->status;
  if (result.base_status != RunStatus::kOk || result.contender_status != RunStatus::kOk) {
    std::string message;
    if (result.base_status != RunStatus::kOk) message = side_message("base", *pair.base);
    if (result.contender_status != RunStatus::kOk) {
      message += (message.empty() ? "" : "; ") + side_message("new", *pair.contender);
    }
    result.status_message = message;
    const bool broke = result.contender_status == RunStatus::kErrored && result.base_status == RunStatus::kOk;
    result.verdict = broke ? Verdict::kBroken : Verdict::kNotCompared;
    return result;
  }
  SideStats base_time = time_stats(*pair.base, settings.time);
  SideStats contender_time = time_stats(*pair.contender, settings.time);
  if (std::isnan(base_time.median) || std::isnan(contender_time.median)) {
    result.status_message = "no time to compare (only complexity rows such as BigO/RMS)";
    result.verdict = Verdict::kNotCompared;
    return result;
  }
  const double threshold = settings.thresholds.for_name(pair.name);
  result.time = compare_metric(std::move(base_time), std::move(contender_time), Direction::kLowerIsBetter,
                               settings.alpha, threshold, settings.paired_processes);
  result.verdict = result.time.verdict;

  for (const std::string& name : counter_names(*pair.base)) {
    SideStats base = counter_stats(*pair.base, name);
    SideStats contender = counter_stats(*pair.contender, name);
    if (std::isnan(contender.median) && contender.samples.empty()) continue;  // not on the new side
    Direction direction = counter_direction(name);
    if (!all_finite(base.samples) || !all_finite(contender.samples)) direction = Direction::kInformational;
    result.counters.push_back(
        CounterResult{name, compare_metric(std::move(base), std::move(contender), direction, settings.alpha, threshold,
                                           settings.paired_processes)});
  }
  return result;
}

namespace {

// Holm's step-down over one family of tested metrics: demotes the regressions
// and improvements whose p-value does not survive it; returns the cut-off.
double correct_family(const std::vector<MetricComparison*>& family, double alpha, const std::string& what) {
  std::vector<double> p_values;
  p_values.reserve(family.size());
  for (const MetricComparison* metric : family) p_values.push_back(metric->u_test.p_value);
  const double cutoff = holm_cutoff(p_values, alpha);
  for (MetricComparison* metric : family) apply_holm(*metric, cutoff, family.size(), what);
  return cutoff;
}

bool has_time(const PairResult& result) {
  return result.verdict != Verdict::kBroken && result.verdict != Verdict::kNotCompared;
}

// Flags the launch:eager rows whose launch:graph sibling has a compared time.
void mark_informational(Report& report) {
  std::vector<std::string> names;
  std::vector<bool> timed;
  for (const PairResult& result : report.results) {
    names.push_back(result.name);
    timed.push_back(has_time(result));
  }
  const std::vector<bool> informational = informational_rows(names, timed);
  for (size_t i = 0; i < report.results.size(); ++i) report.results[i].informational = informational[i];
}

// The multiple-testing correction of the settings, over the time tests of the gated pairs, of
// the informational pairs, and over all counter tests: three families. Leaves each family's
// level in the summary.
void apply_correction(Report& report) {
  std::vector<MetricComparison*> times;
  std::vector<MetricComparison*> informational;
  std::vector<MetricComparison*> counters;
  for (PairResult& result : report.results) {
    if (result.time.tested) (result.informational ? informational : times).push_back(&result.time);
    for (CounterResult& counter : result.counters) {
      if (counter.comparison.tested) counters.push_back(&counter.comparison);
    }
  }
  const Settings& settings = report.settings;
  Summary& summary = report.summary;
  summary.tested_pairs = times.size();
  summary.informational_tested_pairs = informational.size();
  summary.p_cutoff = summary.informational_p_cutoff = summary.counter_p_cutoff = settings.alpha;
  if (settings.correction == Correction::kNone) return;
  summary.p_cutoff = correct_family(times, settings.alpha, "pairs");
  summary.informational_p_cutoff = correct_family(informational, settings.alpha, "informational pairs");
  summary.counter_p_cutoff = correct_family(counters, settings.alpha, "counter tests");
  for (PairResult& result : report.results) {
    if (result.time.tested) result.verdict = result.time.verdict;
  }
}

// Every compared metric's MDE, at the level of its family.
void set_mdes(Report& report) {
  const Summary& summary = report.summary;
  for (PairResult& result : report.results) {
    if (!has_time(result)) continue;
    result.time.mde =
        minimum_detectable_effect(result.time, result.informational ? summary.informational_p_cutoff : summary.p_cutoff);
    for (CounterResult& counter : result.counters) {
      counter.comparison.mde = minimum_detectable_effect(counter.comparison, summary.counter_p_cutoff);
    }
  }
}

// Verdict counts, counter changes and geomeans over the final results.
void summarise(Report& report) {
  Summary& summary = report.summary;
  std::vector<double> ratios;
  std::map<std::string, std::vector<double>> family_ratios;
  for (const PairResult& result : report.results) {
    ++(result.informational ? summary.informational_verdicts : summary.verdicts)[result.verdict];
    // An informational row's counters are reported, never counted or gated.
    if (!result.informational) {
      for (const CounterResult& counter : result.counters) {
        if (counter.comparison.verdict == Verdict::kRegression) ++summary.counter_regressions;
        if (counter.comparison.verdict == Verdict::kImprovement) ++summary.counter_improvements;
      }
    }
    const double ratio = result.time.ratio;
    if (has_time(result) && ratio > 0 && std::isfinite(ratio)) {
      ratios.push_back(ratio);
      family_ratios[result.family].push_back(ratio);
    }
  }
  summary.geomean = geometric_mean(ratios);
  summary.geomean_pairs = ratios.size();
  for (const auto& [family, values] : family_ratios) {
    summary.families.push_back(FamilySummary{family, geometric_mean(values), values.size()});
  }
}

constexpr double kClockNoteChange = 0.02;

std::string clock_note(const PairResult& result) {
  if (result.verdict != Verdict::kRegression && result.verdict != Verdict::kImprovement &&
      result.verdict != Verdict::kUnreliable)
    return "";
  for (const CounterResult& counter : result.counters) {
    if (counter.name != "sm_clock_mhz") continue;
    const double base = counter.comparison.base.median, contender = counter.comparison.contender.median;
    if (!(base > 0) || !(contender > 0) || std::fabs(contender / base - 1) < kClockNoteChange) return "";
    return "SM clock " + std::to_string(std::llround(base)) + " → " + std::to_string(std::llround(contender)) +
           " MHz (" + runjson::format_change(contender / base - 1) + ")";
  }
  return "";
}

}  // namespace

Report build_report(const Pairing& pairing, const Settings& settings) {
  Report report;
  report.settings = settings;
  report.added = pairing.added;
  report.removed = pairing.removed;
  report.results.reserve(pairing.pairs.size());
  for (const BenchmarkPair& pair : pairing.pairs) report.results.push_back(compare_pair(pair, settings));
  mark_informational(report);
  apply_correction(report);
  set_mdes(report);
  for (PairResult& result : report.results) result.clock_note = clock_note(result);
  summarise(report);
  return report;
}

namespace {

size_t count_in(const std::map<Verdict, size_t>& verdicts, Verdict verdict) {
  const auto it = verdicts.find(verdict);
  return it == verdicts.end() ? 0 : it->second;
}

size_t count_of(const Report& report, Verdict verdict) { return count_in(report.summary.verdicts, verdict); }

// "; 2 informational (not gated): 1 regression(s), 1 same", or "" without informational rows.
std::string informational_text(const Summary& summary) {
  size_t rows = 0;
  std::string counts;
  for (Verdict verdict : {Verdict::kRegression, Verdict::kImprovement, Verdict::kUnreliable, Verdict::kSame}) {
    const size_t n = count_in(summary.informational_verdicts, verdict);
    rows += n;
    if (n == 0) continue;
    const bool plural_s = verdict == Verdict::kRegression || verdict == Verdict::kImprovement;
    counts += (counts.empty() ? "" : ", ") + std::to_string(n) + " " + to_string(verdict) + (plural_s ? "(s)" : "");
  }
  if (rows == 0) return "";
  return "; " + std::to_string(rows) + " informational (not gated): " + counts;
}

}  // namespace

int exit_code(const Report& report) {
  if (report.strict_context && has_environment_difference(report.context)) return 2;
  const bool failed = count_of(report, Verdict::kRegression) > 0 || count_of(report, Verdict::kBroken) > 0 ||
                      (report.settings.gate_counters && report.summary.counter_regressions > 0) ||
                      (report.settings.fail_on_removed && !report.removed.empty());
  return failed ? 1 : 0;
}

std::string gate_message(const Report& report) {
  const int code = exit_code(report);
  if (code == 2) return "ERROR: environment differs and --strict-context is set";
  std::string out = code == 0 ? "PASS" : "FAIL";
  out += ": " + std::to_string(count_of(report, Verdict::kRegression)) + " regression(s), " +
         std::to_string(count_of(report, Verdict::kBroken)) + " broken, " +
         std::to_string(count_of(report, Verdict::kImprovement)) + " improvement(s), " +
         std::to_string(count_of(report, Verdict::kUnreliable)) + " unreliable";
  if (report.settings.gate_counters) out += ", " + std::to_string(report.summary.counter_regressions) + " counter regression(s)";
  if (report.settings.fail_on_removed && !report.removed.empty()) {
    out += ", " + std::to_string(report.removed.size()) + " removed";
  }
  return out + informational_text(report.summary);
}

}  // namespace gptbench::compare
