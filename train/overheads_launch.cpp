// The launch study (train/overheads.h): many tiny kernels launched one by one, or replayed from
// a CUDA graph.
#include <chrono>

#include "fixtures/timer.h"
#include "train/overheads.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace gptbench {
namespace {

using Clock = std::chrono::steady_clock;

struct LaunchState {
  at::Tensor x;  // (numel) fp32
  int kernels = 0;
  std::unique_ptr<LiveCounters> live;
  double host_s = 0;
  int64_t calls = 0;
#ifdef GPTBENCH_WITH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
  void launch_all() {
    for (int i = 0; i < kernels; ++i) x.add_(1.0);
  }
  void call() {
#ifdef GPTBENCH_WITH_CUDA
    if (graph) {
      graph->replay();
      return;
    }
#endif
    launch_all();
  }
};

}  // namespace

Case make_launch_case(bool graph, int kernels, int64_t numel, c10::Device device) {
  auto st = std::make_shared<LaunchState>();
  st->kernels = kernels;
  st->x = at::zeros({numel}, at::TensorOptions().device(device).dtype(at::kFloat));
  if (graph) {
#ifdef GPTBENCH_WITH_CUDA
    if (!device.is_cuda()) throw SkipCase("skipped: CUDA graphs need a CUDA GPU");
    auto side = c10::cuda::getStreamFromPool(false, device.index());
    sync_device(device);
    {
      c10::cuda::CUDAStreamGuard guard(side);
      st->launch_all();  // warm-up outside the capture
      st->graph = std::make_unique<at::cuda::CUDAGraph>();
      st->graph->capture_begin();
      st->launch_all();
      st->graph->capture_end();
    }
    sync_device(device);
#else
    throw SkipCase("skipped: CUDA graphs need a build with CUDA");
#endif
  }
  Case c;
  st->live = std::make_unique<LiveCounters>(c.counters, std::vector<std::string>{"us_per_kernel", "kernels"});
  st->live->set("kernels", kernels);
  c.run = [st, device] {
    const auto t0 = Clock::now();
    st->call();
    sync_device(device);  // host-observed: launch cost and execution, as a training loop sees
    st->host_s += seconds_since(t0);
    st->calls += 1;
    st->live->set("us_per_kernel", 1e6 * st->host_s / static_cast<double>(st->calls * st->kernels));
  };
  c.verify = [st, device]() -> std::string {
    st->x.zero_();
    st->call();
    sync_device(device);
    const double lo = st->x.min().item<double>(), hi = st->x.max().item<double>();
    if (lo != st->kernels || hi != st->kernels)
      return "after " + std::to_string(st->kernels) + " additions of 1 the values are in [" +
             std::to_string(lo) + ", " + std::to_string(hi) + "]";
    return "";
  };
  return c;
}

}  // namespace gptbench
