// The gptbench-compare command line, as a function so tests can run it:
//   gptbench-compare benchmarks BASE.json NEW.json [options]
//   gptbench-compare filters RUN.json IMPL_A IMPL_B [options]
//   gptbench-compare merge OUT.json IN.json... 
// Returns the exit code: 0 no regression, 1 regression, 2 usage or input error.
#pragma once

#include <ostream>

namespace gptbench::compare {

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool color_terminal);

}  // namespace gptbench::compare
