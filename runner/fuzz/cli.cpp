// libFuzzer target: gptbench-run's command line. The input is split at NUL bytes into
// arguments; parse_cli must return a config, help or an error, never throw or crash, and an
// accepted config must name an output file and pass on only --gptbench_/--benchmark_ flags.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gptbench::runner;
  std::vector<std::string> args = {"gptbench-run"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  const CliResult r = parse_cli(args, "gptbench");
  if (r.error.empty() && r.help.empty() && !r.list_only) {
    if (r.config.out.empty() || r.config.binary.empty()) std::abort();
    for (const std::string& f : r.config.pass_flags)
      if (f.rfind("--gptbench_", 0) != 0 && f.rfind("--benchmark_", 0) != 0) std::abort();
  }
  return 0;
}
