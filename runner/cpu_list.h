// CPU lists as taskset(1) and /sys/devices/system/cpu/online write them: "0-3", "0,2,4-7".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gptbench::runner {

// The CPUs of a list, ascending, each once. Throws std::invalid_argument naming the problem
// (empty list, not a number, a range that runs backwards, a CPU beyond the kernel's limit).
std::vector<int> parse_cpu_list(std::string_view text);

// The canonical form: "0-3,6".
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace gptbench::runner
