// The whole comparison: one result per benchmark pair (time and counters),
// added/removed benchmarks, context differences and the summary that the
// renderers print and the exit code is taken from.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "context.h"
#include "correction.h"
#include "pair.h"
#include "runjson/run.h"
#include "thresholds.h"
#include "verdict.h"

namespace gptbench::compare {

struct Settings {
  double alpha = 0.05;
  Correction correction = Correction::kHolm;  // multiple-testing control over all tested pairs
  Thresholds thresholds;
  runjson::TimeKind time = runjson::TimeKind::kReal;
  bool gate_counters = false;    // counter regressions fail the gate too
  bool fail_on_removed = false;  // benchmarks missing from NEW fail the gate
  // Both runs come from one gptbench-premerge check (the same `premerge_check` in their
  // contexts): process e of each side ran in the same epoch, interleaved (process_interval).
  bool paired_processes = false;
};

// The context key gptbench-premerge writes, the same in both files of one check.
constexpr const char* kPremergeCheckKey = "premerge_check";

struct CounterResult {
  std::string name;
  MetricComparison comparison;
};

struct PairResult {
  std::string name;
  std::string family;
  runjson::RunStatus base_status = runjson::RunStatus::kOk;
  runjson::RunStatus contender_status = runjson::RunStatus::kOk;
  std::string status_message;  // why it was not compared / broken
  MetricComparison time;       // meaningful when verdict is not kBroken / kNotCompared
  std::vector<CounterResult> counters;  // counters present on both sides
  Verdict verdict = Verdict::kSame;     // the time verdict, or kBroken / kNotCompared
  // A launch:eager row whose launch:graph sibling was compared too (launch_axis.h): reported with
  // its verdict and MDE, tested in a multiple-testing family of its own, never gating, and
  // counted apart from the gated rows in the summary.
  bool informational = false;
  // Where the time changed or could not be decided and both sides carry the suite's
  // `sm_clock_mhz` counter, which moved by 2% or more: "SM clock 1850 → 1740 MHz (-5.9%)".
  // On a GPU at its power limit the clock follows the code's power draw and the board's
  // temperature, so a reader of a regression should see it; "" otherwise.
  std::string clock_note;
  // Where the two runs' rows carry kernel lists (--gptbench_kernels) that differ, between the
  // runs or between one run's processes: which kernels (kernel_note.h); "" otherwise, and
  // always in filters mode, whose two implementations run different kernels by design.
  std::string kernel_note;
};

struct FamilySummary {
  std::string family;
  double geomean = 0;  // geometric mean of contender/base time ratios
  size_t pairs = 0;    // ratios that entered it
};

struct Summary {
  double geomean = 0;  // NaN when no pair had two valid medians
  size_t geomean_pairs = 0;
  std::vector<FamilySummary> families;  // sorted by name
  std::map<Verdict, size_t> verdicts;   // time verdicts of the gated (not informational) rows
  std::map<Verdict, size_t> informational_verdicts;  // time verdicts of the informational rows
  size_t counter_regressions = 0;   // of the gated rows
  size_t counter_improvements = 0;  // of the gated rows
  size_t tested_pairs = 0;  // gated pairs whose time U test ran: the family of the correction
  double p_cutoff = 0;      // a time p-value had to be below this to count (alpha without correction)
  size_t informational_tested_pairs = 0;  // informational pairs whose U test ran: a family of their own
  double informational_p_cutoff = 0;      // their level, as p_cutoff
  double counter_p_cutoff = 0;            // the counter tests' level, as p_cutoff
};

struct Report {
  std::string mode;             // "benchmarks" or "filters"
  std::string base_source;      // BASE.json, or RUN.json in filters mode
  std::string contender_source;
  std::string base_label = "base";       // IMPL_A in filters mode
  std::string contender_label = "new";   // IMPL_B in filters mode
  Settings settings;
  std::vector<PairResult> results;
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<ContextDifference> context;
  Summary summary;
  bool strict_context = false;
};

PairResult compare_pair(const BenchmarkPair& pair, const Settings& settings);

// Compares every pair, marks the informational rows, applies the multiple-testing correction
// (over the time tests of the gated pairs, separately over those of the informational pairs and
// over all counter tests), sets each metric's MDE at its family's level and fills the summary.
Report build_report(const Pairing& pairing, const Settings& settings);

// 0: no regression, 1: regressions or broken benchmarks (or gated counters /
// removed benchmarks when those options are on), 2: environment differs under
// --strict-context. Informational rows never count.
int exit_code(const Report& report);

// Human sentence for the exit code, e.g. "FAIL: 1 regression(s), 0 broken, ...", with
// "; 2 informational (not gated): 1 regression(s), 1 same" when there are informational rows.
std::string gate_message(const Report& report);

}  // namespace gptbench::compare
