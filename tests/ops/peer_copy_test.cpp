// The SM-driven copy that the comm family's p2p peak is measured with: every byte lands, on the
// same GPU and, where there are two, into the next GPU's memory; misaligned input is refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <stdexcept>

#include "tests/ops/have_gpu.h"

#ifdef GPTBENCH_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "ops/peer_copy.h"
#endif

namespace gptbench {
namespace {

#ifdef GPTBENCH_WITH_CUDA
// Copies fresh random bytes (an odd number of 16-byte words, so the grid-stride tail is used)
// from device 0 into `to` and compares them exactly: a copy has no tolerance.
void expect_exact_copy(int to) {
  const c10::cuda::CUDAGuard guard(0);
  const int64_t bytes = 16 * ((int64_t{3} << 20) + 7);
  const at::Tensor src = at::randint(0, 256, {bytes}, at::TensorOptions().device(at::kCUDA, 0).dtype(at::kByte));
  at::Tensor dst = at::full({bytes}, 0xAB, at::TensorOptions().device(at::kCUDA, to).dtype(at::kByte));  // poison
  if (to != 0) enable_peer_access(to);
  launch_peer_copy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(bytes),
                   c10::cuda::getCurrentCUDAStream(0).stream());
  EXPECT_TRUE(at::equal(dst.cpu(), src.cpu()));
}
#endif

TEST(PeerCopyGpu, CopiesEveryByteOnOneGpu) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a CUDA build";
#ifdef GPTBENCH_WITH_CUDA
  expect_exact_copy(0);
#endif
}

TEST(PeerCopyGpu, CopiesEveryByteIntoThePeer) {
  if (!have_gpu() || torch::cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA GPUs";
#ifdef GPTBENCH_WITH_CUDA
  expect_exact_copy(1);
#endif
}

TEST(PeerCopyGpu, RefusesMisalignedInput) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a CUDA build";
#ifdef GPTBENCH_WITH_CUDA
  const at::Tensor buf = at::empty({64}, at::TensorOptions().device(at::kCUDA, 0).dtype(at::kByte));
  EXPECT_THROW(launch_peer_copy(buf.data_ptr(), static_cast<char*>(buf.data_ptr()) + 1, 16,
                                c10::cuda::getCurrentCUDAStream(0).stream()),
               std::invalid_argument);
  EXPECT_THROW(launch_peer_copy(buf.data_ptr(), buf.data_ptr(), 24, c10::cuda::getCurrentCUDAStream(0).stream()),
               std::invalid_argument);
#endif
}

}  // namespace
}  // namespace gptbench
