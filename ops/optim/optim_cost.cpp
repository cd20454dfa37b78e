#include "ops/optim/optim_cost.h"

#include "ops/optim/quant_map.h"

namespace gptbench {
namespace optim {

double adamw_step_bytes(int64_t numel, int64_t grad_bytes) {
  return static_cast<double>(numel) * static_cast<double>(24 + grad_bytes);
}

double lion_step_bytes(int64_t numel, int64_t grad_bytes) {
  return static_cast<double>(numel) * static_cast<double>(16 + grad_bytes);
}

double adam8bit_step_bytes(const std::vector<int64_t>& numels, int64_t grad_bytes) {
  double b = 0;
  for (int64_t n : numels) {
    if (n >= kMinQuantNumel)
      b += static_cast<double>(n) * (12 + grad_bytes) +
           16.0 * static_cast<double>((n + kQuantBlock - 1) / kQuantBlock);
    else
      b += static_cast<double>(n) * (24 + grad_bytes);
  }
  return b;
}

double adafactor_step_bytes(const std::vector<std::vector<int64_t>>& shapes, int64_t grad_bytes) {
  double b = 0;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    if (s.size() >= 2) {
      const int64_t cols = s.back(), rows = n / (cols > 0 ? cols : 1);
      b += static_cast<double>(n) * (12 + 3 * grad_bytes) + 24.0 * static_cast<double>(rows + cols);
    } else {
      b += static_cast<double>(n) * 2 * (12 + grad_bytes);
    }
  }
  return b;
}

}  // namespace optim
}  // namespace gptbench
