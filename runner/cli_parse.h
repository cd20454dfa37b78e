// One way to run a CLI11 parse for the runner's command lines (gptbench-run, gptbench-premerge):
// --help and parse errors become the result's `help` / `error` text instead of exceptions.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace gptbench::runner {

// Parses `args` (in command-line order) with `app`. On --help fills result.help, on a parse
// error result.error, and returns false; returns true when the arguments were accepted.
template <typename Result>
bool parse_with(CLI::App& app, const std::vector<std::string>& args, Result& result) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    result.help = app.help();
    return false;
  } catch (const CLI::ParseError& e) {
    result.error = e.what();
    return false;
  }
  return true;
}

}  // namespace gptbench::runner
