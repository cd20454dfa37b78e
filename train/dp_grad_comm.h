#pragma once
// Gradients averaged over the ranks in bf16 (DpConfig::grad_comm other than kFp32): each bucket
// of the fp32 flat gradient is divided by the rank count as it is cast to a bf16 copy, summed by
// the collective on that copy (half the bytes of fp32 over NVLink and through memory; a sum,
// which NCCL's symmetric kernels take, where ncclAvg is not), and the mean is written back to its
// fp32 destination (unless kNoCopyBack, below): the bucket itself (all-reduce, ddp) or this
// rank's shard of it (reduce-scatter, zero1). PyTorch DDP's bf16_compress_hook and Megatron's
// bf16 gradient reduction do the same.
// The price is bf16 rounding of each rank's gradient and of the sums the collective forms
// (NCCL's ring rounds after each of its R − 1 additions).
//
// Where the casts and copies back run (Bf16Placement):
//   kSideStream  on a GPU, the cast, the collective's launch and the copy back run on a stream
//                of their own, which waits for the backward's stream where the bucket is
//                complete: none of it sits on the backward's stream, and finish() makes that
//                stream wait for every copy back (finish_one for one bucket's); those full-grid
//                elementwise kernels then run beside the backward's. On the CPU (Gloo): as
//                kInline.
//   kInline      the cast runs on the caller's stream when the bucket is started, and each copy
//                back on the caller's stream in finish_one or finish(), after the collective.
//   kNoCopyBack  the cast as kInline; the means stay in bf16 (means(), shard_means()), for an
//                optimizer that reads bf16 gradients: no copy back, and the optimizer reads
//                2 bytes per gradient rather than 4. The fp32 destinations are left as they were.
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

enum class Bf16Placement { kSideStream, kInline, kNoCopyBack };

class Bf16GradComm {
 public:
  // `numel`: the flat gradient's elements; `shard_numel`: this rank's shard of it (zero1; 0
  // when the buckets are all-reduced).
  Bf16GradComm(c10::Device device, int64_t numel, int64_t shard_numel, Bf16Placement placement);
  ~Bf16GradComm();
  Bf16GradComm(const Bf16GradComm&) = delete;
  Bf16GradComm& operator=(const Bf16GradComm&) = delete;

  // Starts the mean of bucket `grad` (fp32, at `offset` in the flat gradient) over the ranks:
  // all-reduced into `grad` itself, or, with `shard` defined (fp32, at `shard_offset` in this
  // rank's shard), reduce-scattered into it. Waiting for the returned work (wait_work) is not
  // enough: the mean is in place after finish_one or finish().
  c10::intrusive_ptr<c10d::Work> start(c10d::Backend& pg, const at::Tensor& grad, int64_t offset,
                                       const at::Tensor& shard, int64_t shard_offset);

  // The k-th bucket started since the last finish(): its mean is in its fp32 destination for
  // what the caller's stream runs after this call (the CPU: waits for its collective and copies).
  void finish_one(size_t k);

  // Every started bucket's mean in its fp32 destination for the caller's stream (the CPU: after
  // the caller has waited for every started collective); the next start() is bucket 0 again.
  void finish();

  // The bf16 means in the flat gradient's layout (all-reduce) and of this rank's shard
  // (reduce-scatter; undefined without one): with kNoCopyBack, where they stay.
  const at::Tensor& means() const;
  const at::Tensor& shard_means() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gptbench
