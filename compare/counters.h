// Which way is better for a user counter, judged from its name (docs/design.md §5
// vocabulary plus Google Benchmark's own names).
#pragma once

#include <string>

namespace gptbench::compare {

enum class Direction { kHigherIsBetter, kLowerIsBetter, kInformational };

const char* to_string(Direction direction);

// Rates (".../s", "*per_second*", "%peak", "FLOP/s", "tokens/s") are higher-is-better;
// memory and sizes ("*mem*", "*bytes*", "*alloc*") and times ("*time*", "*latency*")
// lower-is-better; anything else is informational.
Direction counter_direction(const std::string& name);

}  // namespace gptbench::compare
