// gptbench-run: see runner/suite.h for what it does and docs/robustness.md for its promises.
//   gptbench-run -o results.json [--gptbench_* ...] [--benchmark_* ...]
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "suite.h"

namespace {

// gptbench next to this executable (the build directory), else from PATH.
std::string default_binary() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.erase(dir.rfind('/') + 1);
    for (const char* rel : {"gptbench", "../gptbench"})
      if (::access((dir + rel).c_str(), X_OK) == 0) return dir + rel;
  }
  return "gptbench";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gptbench::runner;
  const std::vector<std::string> args(argv, argv + argc);
  CliResult cli = parse_cli(args, default_binary());
  if (const std::optional<int> code = cli.exit_without_running("gptbench-run")) return *code;
  if (cli.list_only) {  // nothing to isolate: let the binary list
    std::vector<std::string> child = {cli.config.binary};
    child.insert(child.end(), cli.config.pass_flags.begin(), cli.config.pass_flags.end());
    if (!cli.config.filter.empty()) child.push_back("--benchmark_filter=" + cli.config.filter);
    child.push_back("--benchmark_list_tests=true");
    std::vector<char*> cargv;
    for (auto& a : child) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    std::perror("gptbench-run: exec");
    return 2;
  }
  return run_suite(cli.config);
}
