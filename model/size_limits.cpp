#include "model/size_limits.h"

#include <sstream>
#include <utility>
#include <vector>

namespace gptbench {
namespace {

// Three significant digits: "8.44e+14", "1e+15".
std::string approx(double n) {
  std::ostringstream os;
  os.precision(3);
  os << n;
  return os.str();
}

}  // namespace

std::string model_size_error(const GPT2Config& cfg) {
  const double params = param_count_approx(cfg);
  if (params <= kMaxElements) return "";
  return "model '" + cfg.name + "' would have " + approx(params) + " parameters; the limit is " +
         approx(kMaxElements) + " (four orders of magnitude beyond any GPU's memory)";
}

std::string step_size_error(const GPT2Config& cfg, int64_t batch, int64_t seq) {
  const std::string flags =
      "--gptbench_batch=" + std::to_string(batch) + " --gptbench_seq=" + std::to_string(seq);
  const double b = static_cast<double>(batch), t = static_cast<double>(seq);
  if (b * t > static_cast<double>(kMaxTokens))
    return flags + ": B·T = " + approx(b * t) + " tokens per step; the limit is " +
           std::to_string(kMaxTokens) + " (B·T is the row count of every model GEMM, a 32-bit int in cuBLAS)";
  const std::vector<std::pair<const char*, double>> tensors = {
      {"the logits (B·T·V)", b * t * static_cast<double>(cfg.padded_vocab())},
      {"the MLP activations (B·T·ff)", b * t * static_cast<double>(cfg.d_ff)},
      {"the attention scores (B·h·T²)", b * static_cast<double>(cfg.n_head) * t * t},
  };
  for (const auto& [what, elements] : tensors)
    if (elements > kMaxElements)
      return flags + " with model '" + cfg.name + "': " + what + " would hold " + approx(elements) +
             " elements; the limit is " + approx(kMaxElements) +
             " (four orders of magnitude beyond any GPU's memory)";
  return "";
}

}  // namespace gptbench
