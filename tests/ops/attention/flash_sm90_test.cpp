// The Hopper kernels of ops/attention/flash.* (flash_sm90; skipped without a GPU of compute
// capability 9.0 or a CUDA build), in the conditions the shape grid of flash_gpu_test.cpp does
// not reach: blocks taking several tiles, heads in several groups, more batch·heads than a grid
// dimension, and replays of a captured CUDA graph on new inputs.
#include "ops/attention/flash.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <string>
#include <vector>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "tests/ops/attention/flash_test_util.h"

namespace gptbench {
namespace {

using namespace testing_flash;

// Random bf16 inputs of shape (B, H, L, d) from `seed` through the Hopper forward and backward,
// against the reference.
void expect_sm90_matches_reference(int64_t B, int64_t H, int64_t L, int64_t d, bool causal,
                                   uint64_t seed, const std::string& what) {
  at::manual_seed(seed);
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  auto q = at::randn({B, H, L, d}, opts), k = at::randn({B, H, L, d}, opts);
  auto v = at::randn({B, H, L, d}, opts), dout = at::randn({B, H, L, d}, opts);
  const auto out = flash_attention_forward(q, k, v, causal, FlashKernel::kSm90);
  const auto g = flash_attention_backward(q, k, v, out.o, out.lse, dout, causal,
                                          FlashKernel::kSm90);
  expect_matches(out.o, out.lse, g.dq, g.dk, g.dv, reference(q, k, v, dout, causal),
                 at::kBFloat16, what);
}

// More work tiles than multiprocessors: the Hopper kernels' blocks each take several tiles (the
// forward's persistent blocks from its work counter, its rings and barriers carried from tile to
// tile), forward and backward against the reference.
TEST(FlashAttentionSm90, BlocksTakeSeveralTiles) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  for (int d : {64, 128}) {
    why = sm90_skip_reason(d);
    if (!why.empty()) GTEST_SKIP() << why;
    for (bool causal : {true, false})  // 2 · 9 · 16 = 288 query tiles
      expect_sm90_matches_reference(2, 9, 2000, d, causal, d + (causal ? 1 : 0),
                                    "d = " + std::to_string(d) + (causal ? " causal" : " noncausal"));
  }
}

// Heads in several groups (their K and V exceed half the L2 of an H100 or H200): the forward's
// evened groups with its last ones merged, the backward's with a short last group (on an H200:
// 16 heads a group, the last two merged; the backward's 6 a group, the last 4), forward and
// backward against the reference.
TEST(FlashAttentionSm90, HeadsInSeveralGroups) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  why = sm90_skip_reason(64);
  if (!why.empty()) GTEST_SKIP() << why;
  expect_sm90_matches_reference(2, 32, 4096, 64, true, 11, "64 heads");  // K, V: 64 MB in all
}

// More batch·heads than a grid dimension's 65,535 (both Hopper kernels index one flat grid),
// forward and backward against the reference.
TEST(FlashAttentionSm90, MoreBatchHeadsThanAGridDimension) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  why = sm90_skip_reason(64);
  if (!why.empty()) GTEST_SKIP() << why;
  expect_sm90_matches_reference(2, 33001, 3, 64, true, 7, "66,002 heads");
}

#ifdef GPTBENCH_WITH_CUDA
// The training step replays attention in a CUDA graph: the Hopper forward and backward captured
// once and replayed on new inputs, twice, against the reference each time (a work counter or
// workspace captured by address and left over from the previous replay would show).
TEST(FlashAttentionSm90, GraphReplaysOnNewInputsMatchTheReference) {
  std::string why;
  if (!gpu_ready(&why)) GTEST_SKIP() << why;
  if (std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING"))  // as compute-sanitizer runs set it
    GTEST_SKIP() << "graph capture allocates from the caching allocator, which is off";
  why = sm90_skip_reason(64);
  if (!why.empty()) GTEST_SKIP() << why;
  const int64_t B = 2, H = 3, L = 1000, d = 64;
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  auto q = at::randn({B, H, L, d}, opts), k = at::randn({B, H, L, d}, opts);
  auto v = at::randn({B, H, L, d}, opts), dout = at::randn({B, H, L, d}, opts);
  auto step = [&] {
    const auto out = flash_attention_forward(q, k, v, true, FlashKernel::kSm90);
    const auto g = flash_attention_backward(q, k, v, out.o, out.lse, dout, true,
                                            FlashKernel::kSm90);
    return std::vector<at::Tensor>{out.o, out.lse, g.dq, g.dk, g.dv};
  };
  auto side = c10::cuda::getStreamFromPool(false, 0);
  at::cuda::CUDAGraph graph;
  std::vector<at::Tensor> res;
  {
    c10::cuda::CUDAStreamGuard guard(side);
    step();  // warm-up outside the capture (the kernels' one-time attribute calls)
    side.synchronize();
    graph.capture_begin();
    res = step();
    graph.capture_end();
  }
  for (int replay = 0; replay < 2; ++replay) {
    at::manual_seed(100 + replay);
    for (at::Tensor* x : {&q, &k, &v, &dout}) x->copy_(at::randn_like(*x));
    graph.replay();
    torch::cuda::synchronize();
    expect_matches(res[0], res[1], res[2], res[3], res[4], reference(q, k, v, dout, true),
                   at::kBFloat16, "replay " + std::to_string(replay));
  }
}
#endif

}  // namespace
}  // namespace gptbench
