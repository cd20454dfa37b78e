// Tests of fastest_option (ops/cublaslt_device.h), the timing that picks cuBLASLt algorithms and
// the MLP backward's path: on a GPU (skipped without one), of three holds of known length it
// names the shortest whatever its place (each round starting with another option), calls each option its warm-up plus reps × rounds times,
// and refuses an empty list; with a margin the first option (the incumbent) keeps its place
// against one barely faster and loses it to one clearly faster; and lt_choose_algo takes the
// heuristic's first without timing when asked to, and while its stream captures a CUDA graph.
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

TEST(FastestOptionGpu, TheIncumbentKeepsItsPlaceWithinTheMargin) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
#ifdef GPTBENCH_WITH_CUDA
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  auto hold = [stream](int64_t ns) { return std::function<void()>([=] { launch_gpu_hold(stream, ns); }); };
  // 0.5% faster than the incumbent: inside a 5% margin, so the incumbent stays.
  EXPECT_EQ(fastest_option({hold(200'000), hold(199'000)}, stream, 2, 3, /*margin=*/0.05), 0u);
  // 50% faster: outside it.
  EXPECT_EQ(fastest_option({hold(200'000), hold(100'000)}, stream, 2, 3, /*margin=*/0.05), 1u);
#endif
}

// Settling runs the option for at least the GPU time asked for, in batches of 10 calls, and
// stops within a batch of it.
TEST(FastestOptionGpu, SettleOnRunsTheOptionForItsTime) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
#ifdef GPTBENCH_WITH_CUDA
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  int calls = 0;
  settle_on([&] { ++calls, launch_gpu_hold(stream, 100'000); }, stream, 0.01);  // 100 µs each, 10 ms
  EXPECT_GE(calls, 100);
  EXPECT_LE(calls, 110);
  EXPECT_EQ(calls % 10, 0);
#endif
}

TEST(LtChooseAlgoGpu, TakesTheFirstUnlessItMayTime) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
#ifdef GPTBENCH_WITH_CUDA
  const LtContext lt = lt_context(0);
  // Stand-ins for algorithms: distinct opaque bytes; "launching" one holds the GPU for a time
  // that depends on which it is, so the search's pick is known.
  std::vector<cublasLtMatmulAlgo_t> algos(3);
  for (size_t i = 0; i < algos.size(); ++i) algos[i].data[0] = i;
  int launches = 0;
  auto launch = [&](const cublasLtMatmulAlgo_t& a) {
    ++launches;
    launch_gpu_hold(lt.stream, a.data[0] == 2 ? 20'000 : 200'000);
  };
  EXPECT_EQ(lt_choose_algo(lt, algos, LtAlgoChoice::kHeuristic, launch).data[0], 0u);
  EXPECT_EQ(launches, 0);
  EXPECT_EQ(lt_choose_algo(lt, algos, LtAlgoChoice::kSearch, launch).data[0], 2u);
  EXPECT_GT(launches, 0);
  EXPECT_THROW(lt_choose_algo(lt, {}, LtAlgoChoice::kSearch, launch), std::invalid_argument);

  // While the stream captures, nothing may synchronise it: the first, untimed.
  launches = 0;
  cudaStream_t side = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  const LtContext capturing{lt.handle, lt.workspace, side};
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const uint64_t picked = lt_choose_algo(capturing, algos, LtAlgoChoice::kSearch, launch).data[0];
  ASSERT_EQ(cudaStreamEndCapture(side, &graph), cudaSuccess);
  EXPECT_EQ(picked, 0u);
  EXPECT_EQ(launches, 0);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaStreamDestroy(side);
#endif
}

}  // namespace
}  // namespace gptbench
