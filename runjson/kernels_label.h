// The label of a row whose kernels were recorded (gptbench --gptbench_kernels=true,
// fixtures/kernel_names.h): "kernels: <name>; <name>; ...", the distinct kernels one call of the
// case launched, in the profiler's order. Written by the suite and the pre-merge check, read by
// gptbench-compare to name kernels that differ between two runs.
#pragma once

#include <string>
#include <vector>

namespace gptbench::runjson {

inline constexpr const char* kKernelsLabelPrefix = "kernels: ";
inline constexpr const char* kKernelsSeparator = "; ";  // C++ kernel names hold commas, not ';'

inline std::string kernels_label(const std::vector<std::string>& kernels) {
  std::string label = kKernelsLabelPrefix;
  for (size_t i = 0; i < kernels.size(); ++i) label += (i ? kKernelsSeparator : "") + kernels[i];
  return label;
}

// The kernels of such a label; {} for a label of another kind.
inline std::vector<std::string> parse_kernels_label(const std::string& label) {
  const std::string prefix = kKernelsLabelPrefix, sep = kKernelsSeparator;
  if (label.rfind(prefix, 0) != 0) return {};
  std::vector<std::string> out;
  size_t at = prefix.size();
  while (at < label.size()) {
    const size_t end = label.find(sep, at);
    out.push_back(label.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + sep.size();
  }
  return out;
}

}  // namespace gptbench::runjson
