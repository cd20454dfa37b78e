// The h2d study (train/overheads.h): one host-to-device copy from page-locked or pageable memory.
#include <ATen/CPUGeneratorImpl.h>

#include "fixtures/timer.h"
#include "train/overheads.h"

namespace gptbench {

Case make_h2d_case(bool pinned, int64_t bytes, c10::Device device) {
  if (!device.is_cuda()) throw SkipCase("skipped: host-to-device copies need a CUDA GPU");
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  auto src = at::randint(256, {bytes}, gen, at::TensorOptions().dtype(at::kByte));  // (bytes)
  if (pinned) src = src.pin_memory();  // (to() with pinned_memory would alias, not copy)
  auto dst = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  Case c;
  c.run = [src, dst, pinned]() mutable { dst.copy_(src, /*non_blocking=*/pinned); };
  c.verify = [src, dst, pinned, device]() mutable -> std::string {
    dst.fill_(0);
    dst.copy_(src, pinned);
    sync_device(device);
    return at::equal(dst.cpu(), src) ? "" : "device copy differs from the host buffer";
  };
  c.cost = {0, static_cast<double>(bytes), PeakKind::kNone};
  c.counters["pinned"] = src.is_pinned();
  return c;
}

}  // namespace gptbench
