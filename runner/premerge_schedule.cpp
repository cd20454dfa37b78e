#include "premerge_schedule.h"

namespace gptbench::runner {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

SideOrder order_with_first(Side first) { return {first, other_side(first)}; }

// Keeps the prepare draws apart from the round draws of the same benchmark.
constexpr uint64_t kPrepareStream = ~0ULL;

}  // namespace

const char* side_name(Side side) { return side == Side::kBase ? "base" : "new"; }

Side other_side(Side side) { return side == Side::kBase ? Side::kNew : Side::kBase; }

uint64_t schedule_hash(uint64_t seed, uint64_t a, uint64_t b) {
  return splitmix64(splitmix64(splitmix64(seed) ^ a) ^ b);
}

SideOrder round_order(uint64_t seed, size_t benchmark, size_t round) {
  // One coin per pair of rounds: heads is "base first, then new first", tails the reverse.
  const bool heads = (schedule_hash(seed, benchmark, round / 2) >> 63) != 0;
  const bool base_first = heads == (round % 2 == 0);
  return order_with_first(base_first ? Side::kBase : Side::kNew);
}

std::vector<SideOrder> round_orders(uint64_t seed, size_t benchmark, size_t rounds) {
  std::vector<SideOrder> orders;
  orders.reserve(rounds);
  for (size_t r = 0; r < rounds; ++r) orders.push_back(round_order(seed, benchmark, r));
  return orders;
}

SideOrder prepare_order(uint64_t seed, size_t benchmark) {
  const bool base_first = (schedule_hash(seed, benchmark, kPrepareStream) >> 63) != 0;
  return order_with_first(base_first ? Side::kBase : Side::kNew);
}

}  // namespace gptbench::runner
