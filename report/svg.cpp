#include "svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "runjson/format.h"
#include "runjson/svg.h"

namespace gptbench::report {
namespace {

using runjson::SvgWriter;
using runjson::svg_number;

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Up to ~6 "nice" ticks covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step, last = std::ceil(hi / step - 1e-9) * step;
  for (double t = first; t <= last + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

void legend(std::ostream& out, const std::vector<std::string>& names, double x, double y) {
  SvgWriter svg(out);
  for (size_t i = 0; i < names.size(); ++i) {
    const double yy = y + 16.0 * static_cast<double>(i);
    svg.element("rect", {{"x", x}, {"y", yy - 9}, {"width", "10"}, {"height", "10"}, {"fill", palette(i)}});
    svg.text("text", {{"x", x + 14}, {"y", yy}}, names[i]);
    out << "\n";
  }
}

// The <svg> element with the chart's title; false (the element closed) when there is no data.
bool begin_chart(std::ostream& out, double width, double height, const std::string& title_x,
                 const std::string& title, bool empty, const char* empty_y) {
  SvgWriter svg(out);
  svg.open("svg", {{"xmlns", "http://www.w3.org/2000/svg"}, {"width", width}, {"height", height}});
  out << "\n";
  svg.text("text", {{"class", "title"}, {"x", title_x}, {"y", "18"}}, title);
  out << "\n";
  if (!empty) return true;
  svg.text("text", {{"x", title_x}, {"y", empty_y}}, "no data in these results");
  svg.close("svg");
  out << "\n";
  return false;
}

}  // namespace

const char* palette(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string short_number(double v) { return runjson::format_si(v); }

std::string render_line_chart(const LineChart& c, const ChartMarks& marks) {
  constexpr double kW = 560, kH = 300, kLeft = 70, kTop = 30, kLegendW = 460;
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, yhi = 0;
  for (const auto& s : c.series)
    for (auto [x, y] : s.points) {
      const double xv = c.log2_x ? std::log2(std::max(x, 1e-9)) : x;
      xlo = std::min(xlo, xv);
      xhi = std::max(xhi, xv);
      yhi = std::max(yhi, y);
    }
  for (const Whisker& w : marks.whiskers) yhi = std::max(yhi, w.hi);
  std::ostringstream out;
  SvgWriter svg(out);
  const bool empty = c.series.empty() || !std::isfinite(xlo);
  const double height = empty ? 80 : kTop + kH + 50 + std::max(0.0, 16.0 * c.series.size() - kH);
  if (!begin_chart(out, kLeft + kW + kLegendW, height, svg_number(kLeft), c.title, empty, "60")) return out.str();
  if (xhi == xlo) {
    xlo -= 1;
    xhi += 1;
  }
  const auto yt = nice_ticks(0, yhi > 0 ? yhi : 1);
  const double ytop = yt.back();
  auto px = [&](double x) {
    const double xv = c.log2_x ? std::log2(std::max(x, 1e-9)) : x;
    return kLeft + (xv - xlo) / (xhi - xlo) * kW;
  };
  auto py = [&](double y) { return kTop + kH - y / ytop * kH; };
  for (double t : yt) {
    svg.element("line", {{"class", "grid"}, {"x1", kLeft}, {"x2", kLeft + kW}, {"y1", py(t)}, {"y2", py(t)}});
    svg.text("text", {{"class", "ytick"}, {"x", kLeft - 6}, {"y", py(t) + 4}}, short_number(t));
    out << "\n";
  }
  // x ticks: the distinct x values (batch sizes), at most 12
  std::vector<double> xs;
  for (const auto& s : c.series)
    for (auto [x, y] : s.points) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const size_t stride = std::max<size_t>(1, (xs.size() + 11) / 12);
  for (size_t i = 0; i < xs.size(); i += stride) {
    svg.text("text", {{"class", "xtick"}, {"x", px(xs[i])}, {"y", kTop + kH + 16}}, short_number(xs[i]));
    out << "\n";
  }
  svg.element("line", {{"class", "axis"}, {"x1", kLeft}, {"x2", kLeft + kW}, {"y1", kTop + kH}, {"y2", kTop + kH}});
  out << "\n";
  svg.text("text", {{"class", "xtick"}, {"x", kLeft + kW / 2}, {"y", kTop + kH + 36}}, c.x_label);
  out << "\n";
  svg.text("text",
           {{"class", "ylabel"}, {"x", "12"}, {"y", kTop + kH / 2},
            {"transform", "rotate(-90 12 " + svg_number(kTop + kH / 2) + ")"}},
           c.y_label);
  out << "\n";
  for (size_t i = 0; i < marks.markers.size(); ++i) {
    const Marker& m = marks.markers[i];
    const char* colour = m.alert ? "#d62728" : "#7f7f7f";
    const bool right = px(m.x) > kLeft + kW / 2;
    svg.element("line", {{"x1", px(m.x)}, {"x2", px(m.x)}, {"y1", kTop}, {"y2", kTop + kH}, {"stroke", colour},
                         {"stroke-dasharray", "4 3"}});
    svg.text("text",
             {{"x", px(m.x) + (right ? -3 : 3)}, {"y", kTop + 10 + 12.0 * static_cast<double>(i % 4)},
              {"fill", colour}, {"font-size", "10"}, {right ? "text-anchor" : nullptr, "end"}},
             m.label);
    out << "\n";
  }
  for (const Whisker& w : marks.whiskers) {
    svg.element("line", {{"x1", px(w.x)}, {"x2", px(w.x)}, {"y1", py(w.lo)}, {"y2", py(w.hi)},
                         {"stroke", palette(w.series)}, {"stroke-width", "5"}, {"opacity", "0.35"}});
    out << "\n";
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < c.series.size(); ++i) {
    auto pts = c.series[i].points;
    std::sort(pts.begin(), pts.end());
    names.push_back(c.series[i].name);
    std::string points;
    for (auto [x, y] : pts) points += svg_number(px(x)) + "," + svg_number(py(y)) + " ";
    svg.element("polyline", {{"fill", "none"}, {"stroke", palette(i)}, {"stroke-width", "2"}, {"points", points}});
    out << "\n";
    for (auto [x, y] : pts) {
      svg.titled("circle", {{"cx", px(x)}, {"cy", py(y)}, {"r", "3"}, {"fill", palette(i)}},
                 c.series[i].name + ": x=" + short_number(x) + " y=" + short_number(y));
      out << "\n";
    }
  }
  legend(out, names, kLeft + kW + 20, kTop + 10);
  svg.close("svg");
  out << "\n";
  return out.str();
}

std::string render_bar_chart(const BarChart& c) {
  constexpr double kLabelW = 420, kPlotW = 420, kNoteW = 170, kTop = 30;
  const size_t per = c.stacked ? 1 : std::max<size_t>(1, c.keys.size());
  const double bar_h = 12, gap = 8;
  const double row_h = static_cast<double>(per) * bar_h + gap;
  double lo = 0, hi = 0;
  for (const auto& b : c.bars) {
    double sum = 0;
    for (double v : b.values) {
      if (!std::isfinite(v)) continue;
      sum += v;
      lo = std::min(lo, v);
      hi = std::max(hi, c.stacked ? sum : v);
    }
  }
  if (c.signed_axis) {
    const double m = std::max({std::fabs(lo), std::fabs(hi), 1e-9});
    lo = -m;
    hi = m;
  } else {
    lo = 0;
    if (!(hi > 0)) hi = 1;
  }
  const auto ticks = nice_ticks(lo, hi);
  lo = std::min(lo, ticks.front());
  hi = std::max(hi, ticks.back());
  auto px = [&](double v) { return kLabelW + (v - lo) / (hi - lo) * kPlotW; };
  const double plot_h = row_h * static_cast<double>(c.bars.size());
  const double legend_h = c.keys.size() > 1 ? 16.0 * static_cast<double>(c.keys.size()) + 8 : 0;
  std::ostringstream out;
  SvgWriter svg(out);
  if (!begin_chart(out, kLabelW + kPlotW + kNoteW, c.bars.empty() ? 80 : kTop + plot_h + 40 + legend_h, "10",
                   c.title, c.bars.empty(), "50")) {
    return out.str();
  }
  auto fmt = [&](double v) {
    if (!c.percent) return short_number(v);
    char buf[32];
    std::snprintf(buf, sizeof buf, c.signed_axis ? "%+.1f%%" : "%.1f%%", v);
    return std::string(buf);
  };
  for (double t : ticks) {
    svg.element("line", {{"class", "grid"}, {"x1", px(t)}, {"x2", px(t)}, {"y1", kTop}, {"y2", kTop + plot_h}});
    svg.text("text", {{"class", "xtick"}, {"x", px(t)}, {"y", kTop + plot_h + 14}}, fmt(t));
    out << "\n";
  }
  svg.text("text", {{"class", "xtick"}, {"x", kLabelW + kPlotW / 2}, {"y", kTop + plot_h + 30}}, c.x_label);
  out << "\n";
  for (size_t r = 0; r < c.bars.size(); ++r) {
    const Bar& b = c.bars[r];
    const double y0 = kTop + row_h * static_cast<double>(r) + gap / 2;
    svg.text("text", {{"class", "label"}, {"x", kLabelW - 6}, {"y", y0 + row_h / 2}}, b.label);
    out << "\n";
    double acc = 0, right = px(0);
    for (size_t i = 0; i < b.values.size(); ++i) {
      const double v = b.values[i];
      if (!std::isfinite(v)) continue;
      double x0, x1, y = c.stacked ? y0 : y0 + bar_h * static_cast<double>(i);
      if (c.stacked) {
        x0 = px(acc);
        acc += v;
        x1 = px(acc);
      } else {
        x0 = px(std::min(0.0, v));
        x1 = px(std::max(0.0, v));
      }
      right = std::max(right, x1);
      const std::string key = i < c.keys.size() ? c.keys[i] : "";
      svg.titled("rect",
                 {{"x", x0}, {"y", y}, {"width", std::max(0.5, x1 - x0)}, {"height", bar_h - 1}, {"fill", palette(i)}},
                 (key.empty() ? b.label : key + ": ") + fmt(v));
      out << "\n";
      if (!c.stacked) {
        svg.text("text", {{"class", "value"}, {"x", x1 + 3}, {"y", y + bar_h - 2}}, fmt(v));
        out << "\n";
      }
    }
    if (c.stacked) {
      svg.text("text", {{"class", "value"}, {"x", right + 3}, {"y", y0 + bar_h - 2}},
               fmt(acc) + (b.note.empty() ? "" : "  ") + b.note);
      out << "\n";
    } else if (!b.note.empty()) {
      svg.text("text", {{"class", "value"}, {"x", kLabelW + kPlotW + 6}, {"y", y0 + row_h / 2}}, b.note);
      out << "\n";
    }
  }
  if (c.signed_axis) {
    svg.element("line", {{"class", "axis"}, {"x1", px(0)}, {"x2", px(0)}, {"y1", kTop}, {"y2", kTop + plot_h}});
    out << "\n";
  }
  if (c.keys.size() > 1) legend(out, c.keys, kLabelW, kTop + plot_h + 50);
  svg.close("svg");
  out << "\n";
  return out.str();
}

}  // namespace gptbench::report
