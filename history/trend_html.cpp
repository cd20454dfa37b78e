#include "trend_html.h"

#include <algorithm>
#include <sstream>

#include "runjson/format.h"
#include "report/svg.h"

namespace gptbench::history {
namespace {

using runjson::html_escape;

struct TimeUnit {
  const char* name;
  double ns;
};

TimeUnit unit_for(double max_ns) {
  if (max_ns >= 1e9) return {"s", 1e9};
  if (max_ns >= 1e6) return {"ms", 1e6};
  if (max_ns >= 1e3) return {"us", 1e3};
  return {"ns", 1};
}

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1180px; overflow-wrap: anywhere; }
h1 { font-size: 22px; } h2 { font-size: 15px; margin: 28px 0 4px; font-family: monospace; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: left; }
td.num { text-align: right; font-family: monospace; }
.up { color: #b00020; } .down { color: #1a7f37; } .note { color: #555; font-size: 13px; }
svg text { font-size: 11px; } svg .title { font-size: 13px; font-weight: bold; }
svg .grid { stroke: #eee; } svg .axis { stroke: #555; }
svg .ytick { text-anchor: end; } svg .xtick { text-anchor: middle; }
)css";

std::string change_cell(double change) {
  // Times: up is slower.
  return std::string("<td class='num ") + (change > 0 ? "up" : "down") + "'>" + runjson::format_change(change) + "</td>";
}

// What differs in `now` from `before` (two environment_of() strings), as a marker label:
// "H100 80GB HBM3", "hold 50000".
std::string change_label(const std::string& before, const std::string& now) {
  std::string changed;
  std::istringstream items(now);
  std::string item;
  while (std::getline(items, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    if (before.find(item) != std::string::npos) continue;
    if (!changed.empty()) changed += ", ";
    changed += item;
  }
  std::string label = environment_label(changed.empty() ? now : changed);
  if (label.rfind("NVIDIA ", 0) == 0) label.erase(0, 7);
  return "now " + label;
}

std::string chart(const BenchmarkHistory& benchmark) {
  double max_ns = 0;
  // The benchmark's runs in order: its x axis, one step per run that has it.
  std::vector<std::pair<size_t, const EnvironmentSeries*>> order;
  for (const EnvironmentSeries& series : benchmark.series)
    for (const SeriesPoint& p : series.points) {
      max_ns = std::max(max_ns, p.q3);
      order.emplace_back(p.run, &series);
    }
  std::sort(order.begin(), order.end());
  auto x_of = [&](size_t run) {
    return static_cast<double>(std::lower_bound(order.begin(), order.end(), std::make_pair(run, nullptr),
                                                [](const auto& a, const auto& b) { return a.first < b.first; }) -
                               order.begin() + 1);
  };
  const TimeUnit unit = unit_for(max_ns);
  report::LineChart line;
  line.x_label = "run of this benchmark (oldest first)";
  line.y_label = std::string("median real time (") + unit.name + "), bar: quartiles";
  report::ChartMarks marks;
  for (const EnvironmentSeries& series : benchmark.series) {
    const size_t index = line.series.size();
    report::Series& drawn = line.series.emplace_back();
    drawn.name = environment_label(series.environment);
    for (const SeriesPoint& p : series.points) {
      const double x = x_of(p.run);
      drawn.points.emplace_back(x, p.median / unit.ns);
      if (p.q3 > p.q1) marks.whiskers.push_back(report::Whisker{index, x, p.q1 / unit.ns, p.q3 / unit.ns});
    }
    for (const Step& step : series.steps) {
      marks.markers.push_back(report::Marker{x_of(series.points[step.index].run), runjson::format_change(step.change), true});
    }
  }
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i].second != order[i - 1].second) {
      marks.markers.push_back(report::Marker{static_cast<double>(i + 1),
                                             change_label(order[i - 1].second->environment, order[i].second->environment),
                                             false});
    }
  }
  return report::render_line_chart(line, marks);
}

std::string steps_table(const History& history, const BenchmarkHistory& benchmark) {
  std::ostringstream out;
  bool any = false;
  for (const EnvironmentSeries& series : benchmark.series) {
    for (const Step& step : series.steps) {
      if (!any) out << "<table><tr><th>step</th><th>before</th><th>after</th><th>commits</th><th>environment</th></tr>\n";
      any = true;
      out << "<tr>" << change_cell(step.change) << "<td class='num'>" << runjson::format_time(step.before)
          << "</td><td class='num'>" << runjson::format_time(step.after) << "</td><td>"
          << html_escape(step_range(history, series, step)) << "</td><td>"
          << html_escape(environment_label(series.environment)) << "</td></tr>\n";
    }
  }
  if (any) out << "</table>\n";
  if (benchmark.series.size() > 1) {
    out << "<p class='note'>" << benchmark.series.size()
        << " environments: each is its own series, steps are found within one only.</p>\n";
  }
  return out.str();
}

}  // namespace

std::string environment_label(const std::string& environment) {
  std::string label;
  std::istringstream items(environment);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    key.erase(0, key.find_first_not_of(' '));
    const std::string value = eq == std::string::npos ? item : item.substr(eq + 1);
    if (!label.empty()) label += " · ";
    if (key == "cuda_runtime") label += "CUDA ";
    if (key == "libtorch") label += "LibTorch ";
    if (key == "timer_hold_ns") label += "hold ";
    label += value;
  }
  return label;
}

std::string render_trend_html(const History& history, const TrendPage& page) {
  size_t steps = 0;
  for (const BenchmarkHistory& benchmark : history.benchmarks)
    for (const EnvironmentSeries& series : benchmark.series) steps += series.steps.size();
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>" << html_escape(page.title)
      << "</title><style>" << kStyle << "</style></head><body>\n<h1>" << html_escape(page.title) << "</h1>\n"
      << "<p class='note'>" << history.runs.size() << " runs in <code>" << html_escape(page.database)
      << "</code>; " << history.benchmarks.size() << " benchmarks matching <code>" << html_escape(page.filter)
      << "</code>; " << steps << " steps detected (PELT on log medians, one series per environment; "
      << "grey lines: the environment changes, red lines: steps).</p>\n";
  if (steps > 0) {
    out << "<table><tr><th>benchmark</th><th>step</th><th>commits</th></tr>\n";
    for (const BenchmarkHistory& benchmark : history.benchmarks)
      for (const EnvironmentSeries& series : benchmark.series)
        for (const Step& step : series.steps)
          out << "<tr><td>" << html_escape(benchmark.name) << "</td>" << change_cell(step.change) << "<td>"
              << html_escape(step_range(history, series, step)) << "</td></tr>\n";
    out << "</table>\n";
  }
  for (const BenchmarkHistory& benchmark : history.benchmarks) {
    out << "<h2>" << html_escape(benchmark.name) << "</h2>\n"
        << chart(benchmark) << steps_table(history, benchmark);
  }
  out << "</body></html>\n";
  return out.str();
}

}  // namespace gptbench::history
