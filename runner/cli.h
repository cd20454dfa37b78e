// gptbench-run's command line: its own options (CLI11) plus the --gptbench_* and --benchmark_*
// flags it passes to every child. Parsing is separate from main() so it can be tested.
#pragma once

#include <string>
#include <vector>

#include "cli_result.h"
#include "suite.h"

namespace gptbench::runner {

struct CliResult : CliOutcome<RunConfig> {
  bool list_only = false;  // --benchmark_list_tests: run the binary directly
};

// argv[0] is the runner itself; `default_binary` is used when --binary is not given.
CliResult parse_cli(const std::vector<std::string>& args, const std::string& default_binary);

}  // namespace gptbench::runner
