#include "thresholds.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace gptbench::compare {
namespace {

std::string_view trim(std::string_view text) {
  const char* kSpace = " \t\r\n";
  const size_t first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(kSpace);
  return text.substr(first, last - first + 1);
}

}  // namespace

void Thresholds::set_prefix(const std::string& prefix, double threshold) {
  for (auto& [existing, value] : prefixes_) {
    if (existing == prefix) {
      value = threshold;
      return;
    }
  }
  prefixes_.emplace_back(prefix, threshold);
}

double Thresholds::for_name(const std::string& name) const {
  double best = default_;
  size_t best_length = 0;
  for (const auto& [prefix, value] : prefixes_) {
    if (prefix.size() > best_length && name.compare(0, prefix.size(), prefix) == 0) {
      best = value;
      best_length = prefix.size();
    }
  }
  return best;
}

double parse_threshold(std::string_view text) {
  text = trim(text);
  bool percent = false;
  if (!text.empty() && text.back() == '%') {
    percent = true;
    text = trim(text.substr(0, text.size() - 1));
  }
  const std::string number(text);
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(value) || value < 0) {
    throw ConfigError("invalid threshold '" + std::string(text) + "' (expected e.g. 5% or 0.05)");
  }
  return percent ? value / 100.0 : value;
}

void apply_threshold_config(std::string_view text, const std::string& source, Thresholds& thresholds) {
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    const size_t comment = line.find_first_of("#;");
    line = trim(line.substr(0, comment));
    if (line.empty() || (line.front() == '[' && line.back() == ']')) continue;  // blank or [section]
    const std::string where = source + ":" + std::to_string(line_number) + ": ";
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) throw ConfigError(where + "expected 'PREFIX = THRESHOLD'");
    const std::string prefix(trim(line.substr(0, equals)));
    if (prefix.empty()) throw ConfigError(where + "empty prefix (use * for the default)");
    double value = 0;
    try {
      value = parse_threshold(line.substr(equals + 1));
    } catch (const ConfigError& error) {
      throw ConfigError(where + error.what());
    }
    if (prefix == "*") {
      thresholds.set_default(value);
    } else {
      thresholds.set_prefix(prefix, value);
    }
  }
}

}  // namespace gptbench::compare
