#pragma once
// Bytes one optimizer step must move through memory (docs/design.md §5), for fp32 parameters and
// gradients of `grad_bytes` bytes (4 fp32, 2 bf16). Each count is the traffic of our kernels'
// passes, written beside the formula; the %peak counter divides bytes/s by the copy peak.
#include <cstdint>
#include <vector>

namespace gptbench {
namespace optim {

// AdamW: read p, g, m, v; write p, m, v: (4+gb+4+4) + (4+4+4) = 24 + gb → 28 B/param (fp32 g).
double adamw_step_bytes(int64_t numel, int64_t grad_bytes);

// Lion: read p, g, m; write p, m: (4+gb+4) + (4+4) = 16 + gb → 20 B/param.
double lion_step_bytes(int64_t numel, int64_t grad_bytes);

// 8-bit Adam per tensor of n elements:
//   n ≥ 4096: read p, g, 2 codes, write p, 2 codes: (4+gb+2) + (4+2) = 12 + gb B/param,
//             plus 2 absmax read and written per 256-element block: 16·ceil(n/256)
//             → 16.0625 B/param (fp32 g);
//   n < 4096: fp32 moments as AdamW: 24 + gb.
double adam8bit_step_bytes(const std::vector<int64_t>& numels, int64_t grad_bytes);

// Adafactor, the passes of adafactor.cu per tensor:
//   2-D (r, c): stats p+g, norm g, apply p+g+p' = (4+gb) + gb + (4+gb+4) = 12 + 3·gb B/param
//               (24 fp32, 18 bf16) plus 24·(r+c) for the factors (row/col sums written by
//               atomics and read, R and C read and written, and read by norm and apply);
//   1-D (n):    stats p+g+v+v', apply p+g+v+p' = 2·(12 + gb) B/param (32 fp32).
double adafactor_step_bytes(const std::vector<std::vector<int64_t>>& shapes, int64_t grad_bytes);

}  // namespace optim
}  // namespace gptbench
