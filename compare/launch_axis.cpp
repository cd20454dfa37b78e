#include "launch_axis.h"

#include <unordered_set>

#include "pair.h"

namespace gptbench::compare {

std::string graph_sibling(const std::string& name) {
  std::vector<std::string> segments = split_path(name);
  for (size_t i = segments.size(); i-- > 0;) {
    if (segments[i] != kEagerLaunch) continue;
    segments[i] = kGraphLaunch;
    return join_path(segments);
  }
  return "";
}

std::vector<bool> informational_rows(const std::vector<std::string>& names, const std::vector<bool>& timed) {
  std::unordered_set<std::string> compared;
  for (size_t i = 0; i < names.size(); ++i) {
    if (timed[i]) compared.insert(names[i]);
  }
  std::vector<bool> out(names.size(), false);
  for (size_t i = 0; i < names.size(); ++i) {
    if (!timed[i]) continue;
    const std::string sibling = graph_sibling(names[i]);
    out[i] = !sibling.empty() && compared.count(sibling) > 0;
  }
  return out;
}

}  // namespace gptbench::compare
