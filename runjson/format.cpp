#include "runjson/format.h"

#include <cmath>
#include <cstdio>

namespace gptbench::runjson {
namespace {

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Three significant digits without exponent for values in [1, 1000).
std::string three_digits(double value) {
  const double magnitude = std::fabs(value);
  if (magnitude >= 100) return printf_string("%.0f", value);
  if (magnitude >= 10) return printf_string("%.1f", value);
  return printf_string("%.2f", value);
}

}  // namespace

std::string format_time(double ns) {
  if (!std::isfinite(ns)) return "n/a";
  if (ns < 1e3) return three_digits(ns) + " ns";
  if (ns < 1e6) return three_digits(ns / 1e3) + " us";
  if (ns < 1e9) return three_digits(ns / 1e6) + " ms";
  return three_digits(ns / 1e9) + " s";
}

std::string format_si(double value) {
  if (!std::isfinite(value)) return "n/a";
  struct Prefix {
    double scale;
    const char* suffix;
  };
  static constexpr Prefix kPrefixes[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  const double magnitude = std::fabs(value);
  for (const Prefix& prefix : kPrefixes) {
    if (magnitude >= prefix.scale) return three_digits(value / prefix.scale) + prefix.suffix;
  }
  if (magnitude != 0 && magnitude < 1) return printf_string("%.3g", value);
  return three_digits(value);
}

std::string format_change(double change) {
  if (!std::isfinite(change)) return "n/a";
  return printf_string("%+.1f%%", change * 100);
}

std::string format_percent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  return printf_string("%.1f%%", fraction * 100);
}

std::string format_ratio(double ratio) {
  if (!std::isfinite(ratio)) return "n/a";
  return printf_string("%.3f", ratio);
}

std::string format_p_value(double p) {
  if (!std::isfinite(p)) return "n/a";
  if (p < 1e-6) return "<1e-06";
  return printf_string("%.4f", p);
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string markdown_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '|' || c == '*' || c == '_' || c == '`' || c == '<' || c == '>' || c == '[' || c == ']') out.push_back('\\');
    if (c == '\n' || c == '\r') {
      out.push_back(' ');
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace gptbench::runjson
