// The order in which gptbench-premerge asks its two workers (base and new) for samples.
// Sampling is interleaved at benchmark granularity: in each round each side gives one sample,
// and which side goes first is drawn from a seed, so that a drift of the machine (clocks,
// thermals, neighbours) and any effect of going first or second hit both sides alike. Rounds
// come in pairs holding one "base, new" and one "new, base" round, in an order drawn per pair:
// whatever the number of rounds, each side has gone first within one round of half the time.
// Pure functions of (seed, benchmark index, round): reproducible, and testable.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gptbench::runner {

enum class Side { kBase = 0, kNew = 1 };
constexpr std::array<Side, 2> kSides = {Side::kBase, Side::kNew};

// "base" / "new".
const char* side_name(Side side);
Side other_side(Side side);
inline size_t index_of(Side side) { return static_cast<size_t>(side); }

using SideOrder = std::array<Side, 2>;

// SplitMix64 of (seed, a, b): a well-mixed 64-bit value for each triple.
uint64_t schedule_hash(uint64_t seed, uint64_t a, uint64_t b);

// The two sides in the order they are asked in round `round` of benchmark number `benchmark`.
SideOrder round_order(uint64_t seed, size_t benchmark, size_t round);

// round_order for rounds 0 .. rounds-1.
std::vector<SideOrder> round_orders(uint64_t seed, size_t benchmark, size_t rounds);

// The order of the two prepare requests of benchmark number `benchmark` (drawn apart from the
// rounds' order).
SideOrder prepare_order(uint64_t seed, size_t benchmark);

}  // namespace gptbench::runner
