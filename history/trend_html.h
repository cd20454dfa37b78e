// The trend page: one self-contained HTML file (inline SVG, no scripts or external resources)
// with one chart per benchmark: the median of each run with its interquartile range, device
// and environment changes and detected steps marked, and a table of the steps.
#pragma once

#include <string>

#include "series.h"

namespace gptbench::history {

struct TrendPage {
  std::string title = "gptbench history";
  std::string database;  // shown in the header
  std::string filter;    // the regex that chose the benchmarks
};

std::string render_trend_html(const History& history, const TrendPage& page);

// "NVIDIA H200 · 580.159.04 · 13.0 · 2.11.0": the values of an environment_of() string.
std::string environment_label(const std::string& environment);

}  // namespace gptbench::history
