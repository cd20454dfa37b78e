// Renderers of a Report: terminal text, PR-ready markdown, machine-readable
// JSON and a self-contained HTML page with inline SVG charts.
#pragma once

#include <string>

#include "report.h"

namespace gptbench::compare {

struct TextOptions {
  bool color = false;  // ANSI colours (the CLI turns them on for a TTY only)
};

std::string render_text(const Report& report, const TextOptions& options);
std::string render_markdown(const Report& report);
std::string render_json(const Report& report);
std::string render_html(const Report& report);

// Shared by the renderers: results whose verdict is worth listing first
// (regression, broken, improvement), in that order, then the informational rows'
// regressions and improvements.
std::vector<const PairResult*> notable_results(const Report& report);

// "alpha 0.05, correction holm (7 pairs, p < 0.00833 needed)" or
// "alpha 0.05, correction none": the significance rule for the headers.
std::string significance_text(const Report& report);

// "base.json vs new.json" or "RUN.json: torch vs fused".
std::string report_title(const Report& report);

// Whether a compared pair has a side whose samples come from 2 or more processes (rows with
// process_index, as gptbench-premerge writes them): the tables then have a "Processes" column
// next to CV. Runs without process_index render as before.
bool shows_processes(const Report& report);

// That column's cell: the larger process spread of the two sides and each side's number of
// processes, "11.2% (3/3)"; "-" when neither side has 2 processes.
std::string process_cell(const MetricComparison& metric);

// The MDE column's cell: "2.0%", "none" when no change could have been detected, "-" when not
// judged.
std::string mde_cell(const MetricComparison& metric);

// The verdict as the tables show it: "regression", or "regression (informational)" for an
// informational row.
std::string verdict_label(const PairResult& result);

// Why a pair got its verdict: for an informational row first why it does not gate, then the
// status message or the time's reason, then the clock note.
std::string verdict_reason(const PairResult& result);

}  // namespace gptbench::compare
