// Terminal table: one row per pair, then counters that changed, notes on
// every verdict other than "same" and on every informational row, added/removed
// lists, summary and gate.
#include <algorithm>
#include <sstream>

#include "runjson/format.h"
#include "render.h"

namespace gptbench::compare {
using runjson::TimeKind;
using runjson::format_change;
using runjson::format_p_value;
using runjson::format_percent;
using runjson::format_ratio;
using runjson::format_si;
using runjson::format_time;

namespace {

constexpr const char* kRed = "\033[31m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kReset = "\033[0m";

class Painter {
 public:
  explicit Painter(bool enabled) : enabled_(enabled) {}
  std::string operator()(const std::string& text, const char* code) const {
    return enabled_ && code != nullptr ? std::string(code) + text + kReset : text;
  }

 private:
  bool enabled_;
};

const char* verdict_color(Verdict verdict) {
  switch (verdict) {
    case Verdict::kRegression:
    case Verdict::kBroken: return kRed;
    case Verdict::kImprovement: return kGreen;
    case Verdict::kUnreliable:
    case Verdict::kNotCompared: return kYellow;
    default: return nullptr;
  }
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

std::string pad(const std::string& text, size_t width, bool right = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return right ? fill + text : text + fill;
}

constexpr size_t kCells = 9;  // the last, "Processes", only when the report has processes

struct Row {
  std::string cells[kCells];
  const PairResult* result;
};

// The verdict column: upper case, coloured unless the row is informational.
std::string verdict_text(const PairResult& result, const Painter& paint) {
  const std::string verdict = upper(to_string(result.verdict));
  if (result.informational) return verdict + " (informational)";
  return paint(verdict, verdict_color(result.verdict));
}

Row time_row(const PairResult& result) {
  Row row;
  row.cells[0] = result.name;
  row.result = &result;
  if (result.verdict == Verdict::kBroken || result.verdict == Verdict::kNotCompared) {
    row.cells[1] = to_string(result.base_status);
    row.cells[2] = to_string(result.contender_status);
    return row;
  }
  const MetricComparison& time = result.time;
  row.cells[1] = format_time(time.base.median);
  row.cells[2] = format_time(time.contender.median);
  row.cells[3] = format_change(time.change);
  row.cells[4] = format_percent(time.uncertainty);
  row.cells[5] = time.tested ? format_p_value(time.u_test.p_value) : "-";
  row.cells[6] = mde_cell(time);
  row.cells[7] = format_percent(time.cv);
  row.cells[8] = process_cell(time);
  return row;
}

}  // namespace

std::string render_text(const Report& report, const TextOptions& options) {
  const Painter paint(options.color);
  std::ostringstream out;
  out << paint("gptbench-compare", kBold) << ": " << report_title(report) << " (" << report.mode << " mode, "
      << (report.settings.time == TimeKind::kReal ? "real" : "cpu") << " time, " << significance_text(report)
      << ", threshold " << format_percent(report.settings.thresholds.default_threshold()) << ")\n";

  for (const ContextDifference& diff : report.context) {
    if (diff.environment) {
      out << paint("!! ENVIRONMENT DIFFERS: " + diff.key + ": '" + diff.base + "' vs '" + diff.contender + "'",
                   report.strict_context ? kRed : kYellow)
          << "\n";
    } else {
      out << "   (context differs: " << diff.key << ": '" << diff.base << "' vs '" << diff.contender << "')\n";
    }
  }
  out << "\n";

  const char* headers[kCells] = {"Benchmark", report.base_label.c_str(), report.contender_label.c_str(),
                                 "Change",    "+/-95%",                  "p-value",
                                 "MDE",       "CV",                      "Processes"};
  const size_t cells = shows_processes(report) ? kCells : kCells - 1;
  std::vector<Row> rows;
  rows.reserve(report.results.size());
  for (const PairResult& result : report.results) rows.push_back(time_row(result));
  size_t widths[kCells];
  for (size_t c = 0; c < cells; ++c) {
    widths[c] = std::string(headers[c]).size();
    for (const Row& row : rows) widths[c] = std::max(widths[c], row.cells[c].size());
  }
  for (size_t c = 0; c < cells; ++c) out << pad(headers[c], widths[c], c > 0) << "  ";
  out << "Verdict\n";
  for (const Row& row : rows) {
    for (size_t c = 0; c < cells; ++c) out << pad(row.cells[c], widths[c], c > 0) << "  ";
    out << verdict_text(*row.result, paint) << "\n";
  }

  bool counter_header = false;
  for (const PairResult& result : report.results) {
    for (const CounterResult& counter : result.counters) {
      const Verdict verdict = counter.comparison.verdict;
      if (verdict != Verdict::kRegression && verdict != Verdict::kImprovement) continue;
      if (!counter_header) {
        out << "\nCounters that changed:\n";
        counter_header = true;
      }
      out << "  " << result.name << "  " << counter.name << ": " << format_si(counter.comparison.base.median) << " -> "
          << format_si(counter.comparison.contender.median) << " (" << format_change(counter.comparison.change)
          << ", " << to_string(counter.comparison.direction) << ") "
          << (result.informational ? upper(to_string(verdict)) + " (informational)"
                                   : paint(upper(to_string(verdict)), verdict_color(verdict)))
          << "\n";
    }
  }

  bool notes_header = false;
  for (const PairResult& result : report.results) {
    if (result.verdict == Verdict::kSame && !result.informational && result.kernel_note.empty()) continue;
    if (!notes_header) {
      out << "\nNotes:\n";
      notes_header = true;
    }
    out << "  " << result.name << ": " << to_string(result.verdict) << " (" << verdict_reason(result) << ")\n";
  }

  if (!report.removed.empty()) {
    out << "\nOnly in " << report.base_label << " (" << report.removed.size() << "):\n";
    for (const std::string& name : report.removed) out << "  - " << name << "\n";
  }
  if (!report.added.empty()) {
    out << "\nOnly in " << report.contender_label << " (" << report.added.size() << "):\n";
    for (const std::string& name : report.added) out << "  + " << name << "\n";
  }

  const Summary& summary = report.summary;
  out << "\nGeomean " << report.contender_label << "/" << report.base_label << " time: " << format_ratio(summary.geomean)
      << " (" << format_change(summary.geomean - 1) << ") over " << summary.geomean_pairs << " pair(s)\n";
  for (const FamilySummary& family : summary.families) {
    out << "  " << pad(family.family, 24) << format_ratio(family.geomean) << " (" << format_change(family.geomean - 1)
        << ", " << family.pairs << ")\n";
  }
  if (summary.counter_regressions + summary.counter_improvements > 0) {
    out << "Counters: " << summary.counter_regressions << " regression(s), " << summary.counter_improvements
        << " improvement(s)" << (report.settings.gate_counters ? " (gated)" : " (not gated)") << "\n";
  }
  const std::string gate = gate_message(report);
  out << paint(gate, exit_code(report) == 0 ? kGreen : kRed) << "\n";
  return out.str();
}

}  // namespace gptbench::compare
