// Tests of fastest_option (ops/cublaslt_device.h), the timing that picks cuBLASLt algorithms and
// the MLP backward's path: on a GPU (skipped without one), of three holds of known length it
// names the shortest whatever its place, calls each option its warm-up plus reps × rounds times,
// and refuses an empty list.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <vector>

#include "tests/ops/have_gpu.h"

#ifdef GPTBENCH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "ops/cublaslt_device.h"
#include "ops/gpu_hold.h"
#endif

namespace gptbench {
namespace {

TEST(FastestOptionGpu, NamesTheShortestHold) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
#ifdef GPTBENCH_WITH_CUDA
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  for (size_t shortest = 0; shortest < 3; ++shortest) {
    std::vector<int> calls(3, 0);
    std::vector<std::function<void()>> options;
    for (size_t i = 0; i < 3; ++i)  // 20 µs for the shortest, 200 µs for the others
      options.push_back([&, i] {
        ++calls[i];
        launch_gpu_hold(stream, i == shortest ? 20'000 : 200'000);
      });
    EXPECT_EQ(fastest_option(options, stream, /*reps=*/2, /*rounds=*/3), shortest);
    EXPECT_EQ(calls, std::vector<int>(3, 1 + 2 * 3));
  }
  EXPECT_THROW(fastest_option({}, stream, 1, 1), std::invalid_argument);
#endif
}

}  // namespace
}  // namespace gptbench
