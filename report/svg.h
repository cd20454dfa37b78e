// Inline SVG charts for the training report and the history's trend page: line charts (with a
// log-2 x axis for batch sizes), horizontal bars (signed or not), grouped and stacked horizontal
// bars, drawn with runjson/svg.h. Plain strings, no scripts, fonts or external resources; text
// is escaped.
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
// Optional marks on a line chart: a vertical bar from lo to hi at x in the i-th series' colour
// (the spread of the samples behind a point), and dashed vertical lines across the plot,
// labelled at the top (events on the x axis: a change of device, a detected step; `alert`
// draws red, else grey).
struct Whisker {
  size_t series = 0;
  double x = 0, lo = 0, hi = 0;
};
struct Marker {
  double x = 0;
  std::string label;
  bool alert = false;
};
struct ChartMarks {
  std::vector<Whisker> whiskers;
  std::vector<Marker> markers;
};

std::string render_line_chart(const LineChart& chart, const ChartMarks& marks = {});

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
