// Markdown for a pull request: verdict line, environment warning, summary,
// the notable rows, then every row in a collapsed <details> block.
#include <sstream>

#include "launch_axis.h"
#include "runjson/format.h"
#include "render.h"

namespace gptbench::compare {
using runjson::format_change;
using runjson::format_p_value;
using runjson::format_percent;
using runjson::format_ratio;
using runjson::format_time;
using runjson::markdown_escape;

namespace {

constexpr size_t kMaxListed = 50;  // added/removed names listed before "and N more"

void table_header(std::ostringstream& out, const Report& report, bool processes) {
  out << "| Benchmark | " << markdown_escape(report.base_label) << " | " << markdown_escape(report.contender_label)
      << " | Change | ±95% | p-value | MDE | CV | " << (processes ? "Processes | " : "") << "Verdict |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|" << (processes ? "---:|" : "") << "---|\n";
}

void table_row(std::ostringstream& out, const PairResult& result, bool processes) {
  out << "| `" << result.name << "` | ";
  if (result.verdict == Verdict::kBroken || result.verdict == Verdict::kNotCompared) {
    out << to_string(result.base_status) << " | " << to_string(result.contender_status) << " | | | | | | "
        << (processes ? "| " : "") << "**" << to_string(result.verdict)
        << "**: " << markdown_escape(result.status_message) << " |\n";
    return;
  }
  const MetricComparison& time = result.time;
  const bool bold =
      !result.informational && (result.verdict == Verdict::kRegression || result.verdict == Verdict::kImprovement);
  out << format_time(time.base.median) << " | " << format_time(time.contender.median) << " | "
      << format_change(time.change) << " | " << format_percent(time.uncertainty) << " | "
      << (time.tested ? format_p_value(time.u_test.p_value) : "-") << " | " << mde_cell(time) << " | "
      << format_percent(time.cv) << " | ";
  if (processes) out << process_cell(time) << " | ";
  out << (bold ? "**" : "") << verdict_label(result) << (bold ? "**" : "");
  for (const std::string* note : {&result.clock_note, &result.kernel_note})
    if (!note->empty()) out << " (" << markdown_escape(*note) << ")";
  out << " |\n";
}

void name_list(std::ostringstream& out, const std::string& title, const std::vector<std::string>& names) {
  if (names.empty()) return;
  out << "\n**" << title << " (" << names.size() << "):** ";
  for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) out << (i ? ", " : "") << "`" << names[i] << "`";
  if (names.size() > kMaxListed) out << " and " << names.size() - kMaxListed << " more";
  out << "\n";
}

}  // namespace

std::string render_markdown(const Report& report) {
  std::ostringstream out;
  const int code = exit_code(report);
  out << "### gptbench-compare: " << (code == 0 ? ":white_check_mark: " : ":x: ") << gate_message(report) << "\n\n";
  out << markdown_escape(report_title(report)) << " (" << report.mode << " mode, "
      << significance_text(report) << ", threshold " << format_percent(report.settings.thresholds.default_threshold())
      << ")\n";

  bool environment_header = false;
  for (const ContextDifference& diff : report.context) {
    if (!diff.environment) continue;
    if (!environment_header) {
      out << "\n> :warning: **Environment differs between the runs**: the comparison may not be fair.\n";
      environment_header = true;
    }
    out << "> - `" << diff.key << "`: `" << markdown_escape(diff.base) << "` vs `" << markdown_escape(diff.contender)
        << "`\n";
  }

  const Summary& summary = report.summary;
  out << "\n**Geomean " << markdown_escape(report.contender_label) << "/" << markdown_escape(report.base_label)
      << " time:** " << format_ratio(summary.geomean) << " (" << format_change(summary.geomean - 1) << ") over "
      << summary.geomean_pairs << " pair(s)\n\n";
  out << "| Family | Geomean | Change | Pairs |\n|---|---:|---:|---:|\n";
  for (const FamilySummary& family : summary.families) {
    out << "| `" << family.family << "` | " << format_ratio(family.geomean) << " | " << format_change(family.geomean - 1)
        << " | " << family.pairs << " |\n";
  }

  out << "\nMDE: the smallest slowdown each benchmark could have been called a regression for (`none`: "
         "too few samples or too much noise for any).\n";
  if (!summary.informational_verdicts.empty()) {
    out << "Rows marked *informational* are `" << kEagerLaunch << "` rows whose `" << kGraphLaunch
        << "` row was compared too: reported, never gating.\n";
  }

  const bool processes = shows_processes(report);
  const std::vector<const PairResult*> notable = notable_results(report);
  if (!notable.empty()) {
    out << "\n#### Changes\n\n";
    table_header(out, report, processes);
    for (const PairResult* result : notable) table_row(out, *result, processes);
  }
  name_list(out, "Only in " + report.base_label, report.removed);
  name_list(out, "Only in " + report.contender_label, report.added);

  out << "\n<details><summary>All " << report.results.size() << " benchmarks</summary>\n\n";
  table_header(out, report, processes);
  for (const PairResult& result : report.results) table_row(out, result, processes);
  out << "\n</details>\n";
  return out.str();
}

}  // namespace gptbench::compare
