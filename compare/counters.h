// Which way is better for a user counter: the direction the suite declares for it
// (counter_table.h), else judged from its name (Google Benchmark's own names, other tools').
#pragma once

#include <string>

#include "counter_table.h"

namespace gptbench::compare {

const char* to_string(Direction direction);

// The declared direction of a counter of the suite (counter_table.h). Otherwise: rates
// (".../s", "*per_second*", "%peak", "FLOP/s", "tokens/s") are higher-is-better; memory and
// sizes ("*mem*", "*bytes*", "*alloc*") and times ("*time*", "*latency*") lower-is-better;
// anything else is informational.
Direction counter_direction(const std::string& name);

}  // namespace gptbench::compare
