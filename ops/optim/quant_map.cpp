#include "ops/optim/quant_map.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
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

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

int count_below(const QuantMap& map, float x) {
  return static_cast<int>(std::lower_bound(map.mid.begin(), map.mid.end(), x) - map.mid.begin());
}

QuantBuckets build_buckets(const QuantMap& map) {
  QuantBuckets lo{};
  for (int sign = 0; sign < 2; ++sign) {
    for (int i = 0; i < kBucketsPerSign; ++i) {
      const uint32_t key = kBucketMinKey + static_cast<uint32_t>(i);
      // Magnitudes of the bucket: [mag_lo, mag_hi] (the end buckets absorb the clamped keys).
      const float mag_lo = i == 0 ? 0.f : from_bits(key << 16);
      const float mag_hi = key == kBucketMaxKey ? std::numeric_limits<float>::infinity()
                                                : from_bits((key << 16) | 0xffffu);
      const float vmin = sign ? -mag_hi : mag_lo, vmax = sign ? -mag_lo : mag_hi;
      const int b = static_cast<int>(quant_bucket(to_bits(vmin)));
      if (b != static_cast<int>(quant_bucket(to_bits(vmax))) || b != sign * kBucketsPerSign + i)
        throw std::logic_error("quant buckets: bucket bounds inconsistent");
      const int l = count_below(map, vmin), h = count_below(map, vmax);
      if (h - l > 1) throw std::logic_error("quant buckets: a bucket holds two midpoints");
      lo[static_cast<size_t>(b)] = static_cast<uint8_t>(l);
    }
  }
  return lo;
}

}  // namespace

const QuantBuckets& signed_buckets() {
  static const QuantBuckets b = build_buckets(signed_dynamic_map());
  return b;
}
const QuantBuckets& unsigned_buckets() {
  static const QuantBuckets b = build_buckets(unsigned_dynamic_map());
  return b;
}

const QuantKernelTable& quant_kernel_table() {
  static const QuantKernelTable table = [] {
    QuantKernelTable t{};
    const QuantMap& sm = signed_dynamic_map();
    const QuantMap& um = unsigned_dynamic_map();
    for (int k = 0; k < 256; ++k) {
      t[k] = to_bits(sm.code[k]);
      t[256 + k] = to_bits(um.code[k]);
    }
    uint32_t* ent = t.data() + 512;
    for (int b = 0; b < kBuckets; ++b)
      ent[b] = bucket_entry(sm.mid.data(), signed_buckets()[b], static_cast<uint32_t>(b));
    ent += kQuantSignedEntries;
    for (int b = 0; b < kBucketsPerSign; ++b)
      ent[b] = bucket_entry(um.mid.data(), unsigned_buckets()[b], static_cast<uint32_t>(b));
    return t;
  }();
  return table;
}

uint8_t quantize_bucketed(const QuantMap& map, const QuantBuckets& lo, float x) {
  x = x >= -4.f ? x : -4.f;  // NaN → −4: code 0, as the search gives NaN (the kernel's select)
  const int l = lo[quant_bucket(to_bits(x))];
  return static_cast<uint8_t>(l + (map.mid[static_cast<size_t>(l)] < x ? 1 : 0));
}

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
