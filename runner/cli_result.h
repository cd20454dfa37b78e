// What parsing one of the runner's command lines (gptbench-run, gptbench-premerge) gives: the
// configuration to run, or the text to print instead, and the exit code that goes with it.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

namespace gptbench::runner {

template <typename Config>
struct CliOutcome {
  Config config;
  std::string error;  // non-empty: print it, exit 2
  std::string help;   // non-empty: print it, exit 0

  // For a command line that asked for --help or was refused: prints the help (stdout) or
  // "PROGRAM: ERROR" (stderr) and gives the exit code, 0 or 2. nullopt for one to run.
  std::optional<int> exit_without_running(const char* program) const {
    if (!help.empty()) {
      std::fputs(help.c_str(), stdout);
      return 0;
    }
    if (!error.empty()) {
      std::fprintf(stderr, "%s: %s\n", program, error.c_str());
      return 2;
    }
    return std::nullopt;
  }
};

}  // namespace gptbench::runner
