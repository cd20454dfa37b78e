// The launch axis: a case timed two ways has the labelled axis launch:graph (CUDA-graph replays,
// the device's time) or launch:eager (launched from the host each call, what a user's loop sees:
// host-bound and noisy). An eager row whose graph sibling was compared in the same comparison is
// informational: reported with its verdict and MDE, never gating (docs/compare.md, "Device rows
// and host-launched rows").
#pragma once

#include <string>
#include <vector>

namespace gptbench::compare {

constexpr const char* kEagerLaunch = "launch:eager";
constexpr const char* kGraphLaunch = "launch:graph";

// The name of `name`'s launch:graph sibling: the same path with its launch:eager segment (the
// last one) reading launch:graph; "" when no segment is launch:eager.
std::string graph_sibling(const std::string& name);

// Which of `names` are informational: element i is true when names[i] has a launch:eager segment,
// timed[i] is true (its time was compared) and its graph sibling is among the names with a
// compared time. `timed` has the length of `names`.
std::vector<bool> informational_rows(const std::vector<std::string>& names, const std::vector<bool>& timed);

}  // namespace gptbench::compare
