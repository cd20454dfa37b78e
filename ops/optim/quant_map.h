#pragma once
// The 8-bit dynamic quantisation maps of Dettmers et al. 2022 ("8-bit Optimizers via Block-wise
// Quantization", §2; bitsandbytes' create_dynamic_map with max_exponent_bits = 7): 256 sorted
// fp32 code values in [-1, 1] (signed, first moment) or [0, 1] (unsigned, second moment).
// Decade i = 0..6 covers magnitudes 10^(i−6)·[0.1, 1] with the midpoints of a uniform
// partition of [0.1, 1] into 2^i (signed, each with both signs) or 2^(i+1) (unsigned) pieces;
// 0 and 1 complete the 256 codes. Torch-free: used by the CPU reference and uploaded for the
// kernels, so both quantise with the same table.
#include <array>
#include <cstdint>

namespace gptbench {
namespace optim {

constexpr int64_t kQuantBlock = 256;        // elements per absmax block
constexpr int64_t kMinQuantNumel = 4096;    // smaller tensors keep fp32 states (as in the paper)

struct QuantMap {
  std::array<float, 256> code;  // sorted ascending
  std::array<float, 256> mid;   // mid[k] = (code[k] + code[k+1]) / 2 for k < 255; mid[255] = +inf
};

const QuantMap& signed_dynamic_map();
const QuantMap& unsigned_dynamic_map();

// Nearest code of x (already divided by the block's absmax): the number of midpoints < x,
// so a tie goes to the lower code. The kernels use the same comparison.
uint8_t quantize_nearest(const QuantMap& map, float x);

}  // namespace optim
}  // namespace gptbench
