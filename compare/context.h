// Compares the `context` objects of two runs: the suite's environment keys
// (GPU, driver, CUDA runtime, LibTorch) must match for a fair comparison; the
// host keys Google Benchmark writes for every project are informational.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gptbench::compare {

struct ContextDifference {
  std::string key;
  std::string base;      // "(absent)" when missing
  std::string contender;
  bool environment = false;  // one of kEnvironmentKeys: said prominently, fails --strict-context
};

// gptbench's custom context keys: the GPU, its driver (`gpu_driver` as the suite writes it;
// `driver` in files of other tools), CUDA runtime, LibTorch, and the timing method
// (`timer_hold_ns`: runs from before the hold was added lack it, and time launch latency too).
inline const std::vector<std::string> kEnvironmentKeys = {
    "gpu_name", "gpu_driver", "driver", "cuda_runtime", "libtorch", "timer_hold_ns"};

// Differences in the environment keys (when either run has them) and, informational, in
// host_name, num_cpus, mhz_per_cpu (only beyond 10%) and gptbench_min_time.
std::vector<ContextDifference> diff_context(const std::map<std::string, std::string>& base,
                                            const std::map<std::string, std::string>& contender);

bool has_environment_difference(const std::vector<ContextDifference>& differences);

}  // namespace gptbench::compare
