#include "ops/optim/multi_tensor.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace gptbench {
namespace optim {

std::vector<ChunkRef> make_chunks(const std::vector<int64_t>& numels, int64_t chunk_elems) {
  if (chunk_elems <= 0) throw std::invalid_argument("make_chunks: chunk_elems must be positive");
  std::vector<ChunkRef> whole, partial;
  for (size_t t = 0; t < numels.size(); ++t) {
    const int64_t n_chunks = (numels[t] + chunk_elems - 1) / chunk_elems;
    if (n_chunks > std::numeric_limits<int32_t>::max())
      throw std::invalid_argument("make_chunks: tensor too large for the chunk table");
    for (int64_t c = 0; c < n_chunks; ++c)
      (numels[t] - c * chunk_elems >= chunk_elems ? whole : partial)
          .push_back({static_cast<int32_t>(t), static_cast<int32_t>(c)});
  }
  whole.insert(whole.end(), partial.begin(), partial.end());
  return whole;
}

AdamScalars adam_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                         int64_t t) {
  const double steps = static_cast<double>(t);
  AdamScalars s{};
  s.beta1 = static_cast<float>(beta1);
  s.one_minus_beta1 = static_cast<float>(1 - beta1);
  s.beta2 = static_cast<float>(beta2);
  s.one_minus_beta2 = static_cast<float>(1 - beta2);
  s.decay = static_cast<float>(1 - lr * weight_decay);
  s.step_size = static_cast<float>(lr / (1 - std::pow(beta1, steps)));
  s.inv_sqrt_bc2 = static_cast<float>(1 / std::sqrt(1 - std::pow(beta2, steps)));
  s.eps = static_cast<float>(eps);
  return s;
}

bool all_aligned(std::initializer_list<const void*> ptrs, uintptr_t bytes) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % bytes != 0) return false;
  return true;
}

bool vec_aligned(ElemType grad, const void* g, std::initializer_list<const void*> fp32) {
  return all_aligned(fp32, 16) && all_aligned({g}, 4 * elem_bytes(grad));
}

}  // namespace optim
}  // namespace gptbench
