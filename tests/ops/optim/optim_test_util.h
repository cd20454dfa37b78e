#pragma once
// Shared helpers of the optimizer tests: parameter sets with the awkward sizes (1, 4,095,
// 4,097, a matrix whose rows are not a multiple of the vector width, a misaligned tensor),
// deep copies, and seeded random gradients.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <vector>

namespace gptbench {
namespace testing_optim {

// A contiguous fp32 tensor whose data pointer is 4 bytes past an aligned address: the kernels
// must take their scalar path for it.
inline at::Tensor misaligned(int64_t n, const at::TensorOptions& o) {
  return at::randn({n + 1}, o).narrow(0, 1, n);
}

// Parameters of every awkward kind, seeded, on `device`.
inline std::vector<at::Tensor> awkward_params(c10::Device device, uint64_t seed = 1) {
  at::manual_seed(seed);
  const auto o = at::TensorOptions().dtype(at::kFloat).device(device);
  std::vector<at::Tensor> ps = {
      at::randn({1}, o),           at::randn({4095}, o),       at::randn({4097}, o),
      at::randn({64, 96}, o) * 0.1, at::randn({33, 17}, o),     at::randn({3, 1030}, o),
      misaligned(5000, o),         at::randn({768}, o),        at::randn({300, 1300}, o) * 0.02,
  };
  return ps;
}

inline std::vector<at::Tensor> clone_all(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.clone());
  return out;
}

inline std::vector<at::Tensor> to_device(const std::vector<at::Tensor>& ts, c10::Device d) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.to(d).clone());
  return out;
}

// Random gradients of the parameters' shapes (scale varies per tensor, as real ones do).
inline std::vector<at::Tensor> random_grads(const std::vector<at::Tensor>& ps, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> gs;
  for (size_t i = 0; i < ps.size(); ++i)
    gs.push_back(at::randn(ps[i].sizes(), ps[i].options()) * (0.01 * static_cast<double>(i + 1)));
  return gs;
}

// Runs LibTorch's CPU ops on one thread for the scope: the loops of these tests are many small
// ops, where OpenMP's spinning threads on a busy 2-core machine cost 100× (measured: 120 s
// instead of 1 s for the regression test).
struct SingleThread {
  int previous = at::get_num_threads();
  SingleThread() { at::set_num_threads(1); }
  ~SingleThread() { at::set_num_threads(previous); }
};

// ‖a − b‖ / ‖b‖ in float64.
inline double rel_err(const at::Tensor& a, const at::Tensor& b) {
  const auto da = a.to(at::kCPU, at::kDouble), db = b.to(at::kCPU, at::kDouble);
  const double nb = db.norm().item<double>();
  return (da - db).norm().item<double>() / (nb > 0 ? nb : 1.0);
}

}  // namespace testing_optim
}  // namespace gptbench
