// The gptbench-history command line, as a function so tests can run it:
//   gptbench-history [--db PATH] add RUN.json... [--commit SHA] [--branch NAME] [--date ISO]
//   gptbench-history [--db PATH] list | show REGEX | trend REGEX --html FILE
//   gptbench-history [--db PATH] baseline --device NAME [--last N] -o FILE.json
//   gptbench-history [--db PATH] check RUN.json [--last N] [--threshold T] [--filter REGEX]
// Exit codes as gptbench-compare's: 0 fine, 1 regression (check), 2 usage or input error.
#pragma once

#include <ostream>

namespace gptbench::history {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace gptbench::history
