// gptbench-compare: thin entry point over the compare library (cli.h).
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include "cli.h"

int main(int argc, char** argv) {
  const bool color_terminal = isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  return gptbench::compare::run_cli(argc, argv, std::cout, std::cerr, color_terminal);
}
