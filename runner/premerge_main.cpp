// gptbench-premerge: see runner/premerge_run.h for what it does and docs/premerge.md for the
// worker protocol it speaks.
//   gptbench-premerge --base-bin A --new-bin B --out DIR [--filter REGEX] [--worker-arg ARG]...
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "premerge_cli.h"
#include "premerge_run.h"

int main(int argc, char** argv) {
  using namespace gptbench::runner;
  const std::vector<std::string> args(argv, argv + argc);
  PremergeCliResult cli = parse_premerge_cli(args);
  if (const std::optional<int> code = cli.exit_without_running("gptbench-premerge")) return *code;
  cli.config.live_progress = ::isatty(STDERR_FILENO) != 0;
  return run_premerge(cli.config);
}
