// gptbench-premerge's command line (CLI11), parsed apart from main() so it can be tested.
#pragma once

#include <string>
#include <vector>

#include "cli_result.h"
#include "premerge_run.h"

namespace gptbench::runner {

using PremergeCliResult = CliOutcome<PremergeConfig>;

// args[0] is the program. --worker-arg, --base-arg and --new-arg take values that start with
// "--": "--new-arg=--gptbench_slowdown=^gemm/:3" and "--new-arg --gptbench_slowdown=^gemm/:3"
// both work.
PremergeCliResult parse_premerge_cli(const std::vector<std::string>& args);

}  // namespace gptbench::runner
