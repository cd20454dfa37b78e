// Inline SVG charts for the training report: line charts (with a log-2 x axis for batch
// sizes), horizontal bars (signed or not), grouped and stacked horizontal bars. Plain strings,
// no scripts, fonts or external resources; text is escaped.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gptbench::report {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in x order
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log2_x = false;
  std::vector<Series> series;
};
std::string render_line_chart(const LineChart& chart);

struct Bar {
  std::string label;
  std::vector<double> values;  // one per segment (stacked) or per group member (grouped)
  std::string note;            // drawn after the bar ("12 steps to break even")
};

struct BarChart {
  std::string title, x_label;
  std::vector<std::string> keys;  // legend: one per value of a bar
  bool stacked = false;           // stacked segments, else grouped bars
  bool signed_axis = false;       // zero in the middle (speed-up leaderboard)
  bool percent = false;           // values are percentages: "+12.3%"
  std::vector<Bar> bars;
};
std::string render_bar_chart(const BarChart& chart);

// The i-th colour of the palette (cycled).
const char* palette(size_t i);

// Number with 3 significant digits and an SI suffix where large ("12.3k").
std::string short_number(double v);

}  // namespace gptbench::report
