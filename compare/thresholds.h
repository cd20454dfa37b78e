// Minimum relative change that counts, per benchmark family or name prefix.
// Config file (--config), one rule a line, '#' or ';' starts a comment:
//   *        = 5%      # default for every benchmark
//   model/   = 10%     # longest matching name prefix wins
//   attention/sdpa_flash = 0.08
// Values are percentages ("10%") or fractions ("0.10").
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gptbench::compare {

constexpr double kDefaultThreshold = 0.05;

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Thresholds {
 public:
  explicit Thresholds(double default_threshold = kDefaultThreshold) : default_(default_threshold) {}

  void set_default(double threshold) { default_ = threshold; }
  double default_threshold() const { return default_; }
  void set_prefix(const std::string& prefix, double threshold);
  const std::vector<std::pair<std::string, double>>& prefixes() const { return prefixes_; }

  // Threshold of the longest prefix of `name`, else the default.
  double for_name(const std::string& name) const;

 private:
  double default_;
  std::vector<std::pair<std::string, double>> prefixes_;
};

// Parses "10%", "0.1" -> 0.1; throws ConfigError on anything else (or < 0).
double parse_threshold(std::string_view text);

// Applies the rules of a config text; `source` names it in errors
// ("FILE:LINE: what"). A `*` rule replaces the default.
void apply_threshold_config(std::string_view text, const std::string& source, Thresholds& thresholds);

}  // namespace gptbench::compare
