#pragma once
// Gradients averaged over the ranks in bf16 (DpConfig::grad_comm = kBf16): each bucket of the
// fp32 flat gradient is cast to a bf16 copy, averaged by the collective on that copy (half the
// bytes of fp32 over NVLink and through memory), and the mean is written back to its fp32
// destination: the bucket itself (all-reduce, ddp) or this rank's shard of it (reduce-scatter,
// zero1). PyTorch DDP's bf16_compress_hook and Megatron's bf16 gradient reduction do the same.
// The price is bf16 rounding of each rank's gradient and of the sums the collective forms
// (NCCL's ring rounds after each of its R − 1 additions).
//
// On a GPU the cast, the collective's launch and the copy back run on a stream of their own,
// which waits for the backward's stream where the bucket is complete: none of it sits on the
// backward's stream, and finish() makes that stream wait for every copy back. On the CPU
// (Gloo, synchronous copies) the copies back are made in finish().
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <memory>
#include <vector>

namespace c10d {
class Backend;
class Work;
}  // namespace c10d

namespace gptbench {

class Bf16GradComm {
 public:
  // `numel`: the flat gradient's elements; `shard_numel`: this rank's shard of it (zero1; 0
  // when the buckets are all-reduced).
  Bf16GradComm(c10::Device device, int64_t numel, int64_t shard_numel);
  ~Bf16GradComm();
  Bf16GradComm(const Bf16GradComm&) = delete;
  Bf16GradComm& operator=(const Bf16GradComm&) = delete;

  // Starts the mean of bucket `grad` (fp32, at `offset` in the flat gradient) over the ranks:
  // all-reduced into `grad` itself, or, with `shard` defined (fp32, at `shard_offset` in this
  // rank's shard), reduce-scattered into it. Waiting for the returned work (wait_work) is not
  // enough: the mean is in place after finish().
  c10::intrusive_ptr<c10d::Work> start(c10d::Backend& pg, const at::Tensor& grad, int64_t offset,
                                       const at::Tensor& shard, int64_t shard_offset);

  // After every started collective has been waited for: the means are in their fp32
  // destinations for the caller's stream.
  void finish();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gptbench
