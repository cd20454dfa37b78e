// The parse step shared by the compare and history command lines: --help prints and exits 0,
// a parse error is one line "PROGRAM: error: WHAT (see --help)" and exit 2.
#pragma once

#include <optional>
#include <ostream>

#include <CLI/CLI.hpp>

namespace gptbench::compare {

// nullopt when the arguments were accepted, else the exit code to return.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, const char* const* argv, std::ostream& out,
                                             std::ostream& err, const char* program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) {
      app.exit(error, out, err);
      return 0;
    }
    err << program << ": error: " << error.what() << " (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace gptbench::compare
