#include "cpu_list.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace gptbench::runner {
namespace {

int parse_cpu(std::string_view text, std::string_view list) {
  int cpu = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), cpu);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    throw std::invalid_argument("CPU list '" + std::string(list) + "': '" + std::string(text) +
                                "' is not a CPU number");
  if (cpu >= CPU_SETSIZE)
    throw std::invalid_argument("CPU list '" + std::string(list) + "': CPU " + std::to_string(cpu) +
                                " is beyond the limit of " + std::to_string(CPU_SETSIZE - 1));
  return cpu;
}

}  // namespace

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  if (text.empty()) throw std::invalid_argument("empty CPU list");
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_cpu(item, text));
    } else {
      const int first = parse_cpu(item.substr(0, dash), text);
      const int last = parse_cpu(item.substr(dash + 1), text);
      if (last < first)
        throw std::invalid_argument("CPU list '" + std::string(text) + "': range '" + std::string(item) +
                                    "' runs backwards");
      for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    }
    start = end + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace gptbench::runner
