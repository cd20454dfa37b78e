#include "train/dp_grad_comm.h"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <optional>
#include <utility>
#include <vector>

#include "fixtures/dist.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace gptbench {

struct Bf16GradComm::Impl {
  c10::Device device;
  bool copy_back;
  at::Tensor flat16;   // the bf16 copies of the buckets, in the flat gradient's layout
  at::Tensor shard16;  // zero1: the bf16 means of this rank's shard
  struct Copy {  // CPU: a started bucket's mean and where it goes
    c10::intrusive_ptr<c10d::Work> work;
    at::Tensor mean, dest;
    bool done = false;
  };
  std::vector<Copy> copies;
#ifdef GPTBENCH_WITH_CUDA
  std::optional<c10::cuda::CUDAStream> side;
  std::vector<at::cuda::CUDAEvent> copied;  // per started bucket: its copy back, on `side`
#endif

  Impl(c10::Device d, int64_t numel, int64_t shard_numel, Bf16Placement placement)
      : device(d), copy_back(placement != Bf16Placement::kNoCopyBack) {
    const auto bf16 = at::TensorOptions().device(d).dtype(at::kBFloat16);
    flat16 = at::empty({numel}, bf16);
    if (shard_numel > 0) shard16 = at::empty({shard_numel}, bf16);
#ifdef GPTBENCH_WITH_CUDA
    if (d.is_cuda() && placement == Bf16Placement::kSideStream)
      side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, d.index());
#endif
  }
};

Bf16GradComm::Bf16GradComm(c10::Device device, int64_t numel, int64_t shard_numel, Bf16Placement placement)
    : impl_(std::make_unique<Impl>(device, numel, shard_numel, placement)) {}

Bf16GradComm::~Bf16GradComm() = default;

c10::intrusive_ptr<c10d::Work> Bf16GradComm::start(c10d::Backend& pg, const at::Tensor& grad, int64_t offset,
                                                   const at::Tensor& shard, int64_t shard_offset) {
  Impl& m = *impl_;
  auto launch = [&] {
    at::Tensor in = m.flat16.narrow(0, offset, grad.numel());
    // The cast divides too, so the collective sums (one kernel: a wrapped scalar keeps the
    // product fp32 until it is written as bf16).
    at::mul_out(in, grad, at::native::wrapped_scalar_tensor(1.0 / pg.getSize()));
    at::Tensor mean = shard.defined() ? m.shard16.narrow(0, shard_offset, shard.numel()) : in;
    c10::intrusive_ptr<c10d::Work> work = shard.defined() ? start_mean_reduce_scatter(pg, mean, in, /*prescaled=*/true)
                                                          : start_mean_allreduce(pg, in, /*prescaled=*/true);
    return std::make_pair(work, mean);
  };
  const at::Tensor& dest = shard.defined() ? shard : grad;
#ifdef GPTBENCH_WITH_CUDA
  if (m.side) {
    at::cuda::CUDAEvent complete;  // the bucket's gradients, on the backward's stream
    complete.record(at::cuda::getCurrentCUDAStream(m.device.index()));
    complete.block(*m.side);
    c10::cuda::CUDAStreamGuard guard(*m.side);
    auto [work, mean] = launch();  // the collective waits for the cast on this stream
    wait_work(work);               // this stream waits for the collective
    dest.copy_(mean);
    m.copied.emplace_back().record(*m.side);
    return work;
  }
#endif
  auto [work, mean] = launch();
  m.copies.push_back({work, mean, m.copy_back ? dest : at::Tensor()});
  return work;
}

void Bf16GradComm::finish_one(size_t k) {
  Impl& m = *impl_;
#ifdef GPTBENCH_WITH_CUDA
  if (m.side) {
    TORCH_CHECK(k < m.copied.size(), "Bf16GradComm::finish_one: bucket ", k, " was not started");
    m.copied[k].block(at::cuda::getCurrentCUDAStream(m.device.index()));
    return;
  }
#endif
  TORCH_CHECK(k < m.copies.size(), "Bf16GradComm::finish_one: bucket ", k, " was not started");
  Impl::Copy& c = m.copies[k];
  if (c.done) return;
  wait_work(c.work);
  if (c.dest.defined()) c.dest.copy_(c.mean);
  c.done = true;
}

void Bf16GradComm::finish() {
  Impl& m = *impl_;
#ifdef GPTBENCH_WITH_CUDA
  if (m.side) {
    at::cuda::CUDAEvent all_copied;
    all_copied.record(*m.side);
    all_copied.block(at::cuda::getCurrentCUDAStream(m.device.index()));
    m.copied.clear();
    return;
  }
#endif
  for (Impl::Copy& c : m.copies)
    if (!c.done && c.dest.defined()) c.dest.copy_(c.mean);
  m.copies.clear();
}

const at::Tensor& Bf16GradComm::means() const { return impl_->flat16; }
const at::Tensor& Bf16GradComm::shard_means() const { return impl_->shard16; }

}  // namespace gptbench
