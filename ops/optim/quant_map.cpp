#include "ops/optim/quant_map.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace gptbench {
namespace optim {
namespace {

QuantMap build(bool is_signed) {
  constexpr int kMaxExponentBits = 7;
  std::vector<double> data;
  for (int i = 0; i < kMaxExponentBits; ++i) {
    const int pieces = is_signed ? (1 << i) : (1 << (i + 1));
    const double scale = std::pow(10.0, -(kMaxExponentBits - 1) + i);
    for (int k = 0; k < pieces; ++k) {
      const double lo = 0.1 + 0.9 * k / pieces, hi = 0.1 + 0.9 * (k + 1) / pieces;
      const double mean = 0.5 * (lo + hi);
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  }
  data.push_back(0.0);
  data.push_back(1.0);
  std::sort(data.begin(), data.end());
  QuantMap m{};
  for (int k = 0; k < 256; ++k) m.code[k] = static_cast<float>(data[k]);
  for (int k = 0; k < 255; ++k) m.mid[k] = 0.5f * (m.code[k] + m.code[k + 1]);
  m.mid[255] = std::numeric_limits<float>::infinity();
  return m;
}

}  // namespace

const QuantMap& signed_dynamic_map() {
  static const QuantMap m = build(true);
  return m;
}
const QuantMap& unsigned_dynamic_map() {
  static const QuantMap m = build(false);
  return m;
}

uint8_t quantize_nearest(const QuantMap& map, float x) {
  int idx = 0;
  for (int step = 128; step > 0; step >>= 1)
    if (map.mid[idx + step - 1] < x) idx += step;
  return static_cast<uint8_t>(idx);
}

}  // namespace optim
}  // namespace gptbench
