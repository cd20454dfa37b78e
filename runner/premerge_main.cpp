// gptbench-premerge: see runner/premerge_run.h for what it does and docs/premerge.md for the
// worker protocol it speaks.
//   gptbench-premerge --base-bin A --new-bin B --out DIR [--filter REGEX] [--worker-arg ARG]...
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "premerge_cli.h"
#include "premerge_run.h"

int main(int argc, char** argv) {
  using namespace gptbench::runner;
  const std::vector<std::string> args(argv, argv + argc);
  PremergeCliResult cli = parse_premerge_cli(args);
  if (!cli.help.empty()) {
    std::fputs(cli.help.c_str(), stdout);
    return 0;
  }
  if (!cli.error.empty()) {
    std::fprintf(stderr, "gptbench-premerge: %s\n", cli.error.c_str());
    return 2;
  }
  cli.config.live_progress = ::isatty(STDERR_FILENO) != 0;
  return run_premerge(cli.config);
}
