#include "svg.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "results/format.h"

namespace gptbench::report {
namespace {

using results::html_escape;

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Coordinates with one decimal (std::to_chars: a page of many charts formats millions of them).
std::string num(double v) {
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 1);
  return std::string(buf, result.ptr);
}

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

std::string legend(const std::vector<std::string>& names, double x, double y) {
  std::ostringstream out;
  for (size_t i = 0; i < names.size(); ++i) {
    const double yy = y + 16.0 * static_cast<double>(i);
    out << "<rect x='" << num(x) << "' y='" << num(yy - 9) << "' width='10' height='10' fill='"
        << palette(i) << "'/><text x='" << num(x + 14) << "' y='" << num(yy) << "'>"
        << html_escape(names[i]) << "</text>\n";
  }
  return out.str();
}

}  // namespace

const char* palette(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string short_number(double v) { return results::format_si(v); }

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
  const bool empty = c.series.empty() || !std::isfinite(xlo);
  const double height = empty ? 80 : kTop + kH + 50 + std::max(0.0, 16.0 * c.series.size() - kH);
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << num(kLeft + kW + kLegendW)
      << "' height='" << num(height) << "'>\n<text class='title' x='" << num(kLeft) << "' y='18'>"
      << html_escape(c.title) << "</text>\n";
 if (empty) {
    out << "<text x='" << num(kLeft) << "' y='60'>no data in these results</text></svg>\n";
    return out.str();
  }
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
  for (double t : yt)
    out << "<line class='grid' x1='" << num(kLeft) << "' x2='" << num(kLeft + kW) << "' y1='"
        << num(py(t)) << "' y2='" << num(py(t)) << "'/><text class='ytick' x='" << num(kLeft - 6)
        << "' y='" << num(py(t) + 4) << "'>" << html_escape(short_number(t)) << "</text>\n";
  // x ticks: the distinct x values (batch sizes), at most 12
  std::vector<double> xs;
  for (const auto& s : c.series)
    for (auto [x, y] : s.points) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const size_t stride = std::max<size_t>(1, (xs.size() + 11) / 12);
  for (size_t i = 0; i < xs.size(); i += stride)
    out << "<text class='xtick' x='" << num(px(xs[i])) << "' y='" << num(kTop + kH + 16) << "'>"
        << html_escape(short_number(xs[i])) << "</text>\n";
  out << "<line class='axis' x1='" << num(kLeft) << "' x2='" << num(kLeft + kW) << "' y1='"
      << num(kTop + kH) << "' y2='" << num(kTop + kH) << "'/>\n<text class='xtick' x='"
      << num(kLeft + kW / 2) << "' y='" << num(kTop + kH + 36) << "'>" << html_escape(c.x_label)
      << "</text>\n<text class='ylabel' x='12' y='" << num(kTop + kH / 2) << "' transform='rotate(-90 12 "
      << num(kTop + kH / 2) << ")'>" << html_escape(c.y_label) << "</text>\n";
  for (size_t i = 0; i < marks.markers.size(); ++i) {
    const Marker& m = marks.markers[i];
    const char* colour = m.alert ? "#d62728" : "#7f7f7f";
    out << "<line x1='" << num(px(m.x)) << "' x2='" << num(px(m.x)) << "' y1='" << num(kTop)
        << "' y2='" << num(kTop + kH) << "' stroke='" << colour << "' stroke-dasharray='4 3'/>"
        << "<text x='" << num(px(m.x) + (px(m.x) > kLeft + kW / 2 ? -3 : 3)) << "' y='"
        << num(kTop + 10 + 12.0 * static_cast<double>(i % 4)) << "' fill='" << colour << "' font-size='10'"
        << (px(m.x) > kLeft + kW / 2 ? " text-anchor='end'" : "") << ">" << html_escape(m.label) << "</text>\n";
  }
  for (const Whisker& w : marks.whiskers)
    out << "<line x1='" << num(px(w.x)) << "' x2='" << num(px(w.x)) << "' y1='" << num(py(w.lo))
        << "' y2='" << num(py(w.hi)) << "' stroke='" << palette(w.series) << "' stroke-width='5' opacity='0.35'/>\n";
  std::vector<std::string> names;
  for (size_t i = 0; i < c.series.size(); ++i) {
    auto pts = c.series[i].points;
    std::sort(pts.begin(), pts.end());
    names.push_back(c.series[i].name);
    out << "<polyline fill='none' stroke='" << palette(i) << "' stroke-width='2' points='";
    for (auto [x, y] : pts) out << num(px(x)) << "," << num(py(y)) << " ";
    out << "'/>\n";
    for (auto [x, y] : pts)
      out << "<circle cx='" << num(px(x)) << "' cy='" << num(py(y)) << "' r='3' fill='"
          << palette(i) << "'><title>" << html_escape(c.series[i].name) << ": x=" << short_number(x)
          << " y=" << short_number(y) << "</title></circle>\n";
  }
  out << legend(names, kLeft + kW + 20, kTop + 10) << "</svg>\n";
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
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << num(kLabelW + kPlotW + kNoteW)
      << "' height='" << num(c.bars.empty() ? 80 : kTop + plot_h + 40 + legend_h) << "'>\n<text class='title' x='10' y='18'>"
      << html_escape(c.title) << "</text>\n";
  if (c.bars.empty()) {
    out << "<text x='10' y='50'>no data in these results</text></svg>\n";
    return out.str();
  }
  auto fmt = [&](double v) {
    if (!c.percent) return short_number(v);
    char buf[32];
    std::snprintf(buf, sizeof buf, c.signed_axis ? "%+.1f%%" : "%.1f%%", v);
    return std::string(buf);
  };
  for (double t : ticks)
    out << "<line class='grid' x1='" << num(px(t)) << "' x2='" << num(px(t)) << "' y1='"
        << num(kTop) << "' y2='" << num(kTop + plot_h) << "'/><text class='xtick' x='" << num(px(t))
        << "' y='" << num(kTop + plot_h + 14) << "'>" << html_escape(fmt(t)) << "</text>\n";
  out << "<text class='xtick' x='" << num(kLabelW + kPlotW / 2) << "' y='" << num(kTop + plot_h + 30)
      << "'>" << html_escape(c.x_label) << "</text>\n";
  for (size_t r = 0; r < c.bars.size(); ++r) {
    const Bar& b = c.bars[r];
    const double y0 = kTop + row_h * static_cast<double>(r) + gap / 2;
    out << "<text class='label' x='" << num(kLabelW - 6) << "' y='" << num(y0 + row_h / 2)
        << "'>" << html_escape(b.label) << "</text>\n";
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
      out << "<rect x='" << num(x0) << "' y='" << num(y) << "' width='" << num(std::max(0.5, x1 - x0))
          << "' height='" << num(bar_h - 1) << "' fill='" << palette(i) << "'><title>"
          << html_escape(key.empty() ? b.label : key + ": ") << html_escape(fmt(v))
          << "</title></rect>\n";
      if (!c.stacked)
        out << "<text class='value' x='" << num(x1 + 3) << "' y='" << num(y + bar_h - 2) << "'>"
            << html_escape(fmt(v)) << "</text>\n";
    }
    if (c.stacked)
      out << "<text class='value' x='" << num(right + 3) << "' y='" << num(y0 + bar_h - 2) << "'>"
          << html_escape(fmt(acc)) << (b.note.empty() ? "" : "  ") << html_escape(b.note) << "</text>\n";
    else if (!b.note.empty())
      out << "<text class='value' x='" << num(kLabelW + kPlotW + 6) << "' y='"
          << num(y0 + row_h / 2) << "'>" << html_escape(b.note) << "</text>\n";
  }
  if (c.signed_axis)
    out << "<line class='axis' x1='" << num(px(0)) << "' x2='" << num(px(0)) << "' y1='" << num(kTop)
        << "' y2='" << num(kTop + plot_h) << "'/>\n";
  if (c.keys.size() > 1) out << legend(c.keys, kLabelW, kTop + plot_h + 50);
  out << "</svg>\n";
  return out.str();
}

}  // namespace gptbench::report
