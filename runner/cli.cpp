#include "cli.h"
#include "cli_parse.h"

#include <CLI/CLI.hpp>

#include <climits>

#include "fixtures/benchmark_filter.h"
#include "fixtures/flag_range.h"

namespace gptbench::runner {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// "--benchmark_out=x" -> ("--benchmark_out", "x"); no '=' -> (flag, "")
std::pair<std::string, std::string> split_flag(const std::string& a) {
  const size_t eq = a.find('=');
  if (eq == std::string::npos) return {a, ""};
  return {a.substr(0, eq), a.substr(eq + 1)};
}

bool is_true(const std::string& v) { return v.empty() || v == "true" || v == "1" || v == "yes"; }

#ifndef GPTBENCH_PEER_PYTHON
#define GPTBENCH_PEER_PYTHON "python3"
#endif
#ifndef GPTBENCH_PEERS_SCRIPT
#define GPTBENCH_PEERS_SCRIPT "peers/gptbench-peers"
#endif
// The Python that LibTorch comes from (configured by CMake) running the peer runner.
std::vector<std::string> default_peer_command() { return {GPTBENCH_PEER_PYTHON, GPTBENCH_PEERS_SCRIPT}; }

}  // namespace

CliResult parse_cli(const std::vector<std::string>& args, const std::string& default_binary) {
  CliResult r;
  RunConfig& c = r.config;
  c.binary = default_binary;
  std::vector<std::string> own;     // for CLI11, in order, without argv[0]
  std::string bench_out, out_format;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!starts_with(a, "--gptbench_") && !starts_with(a, "--benchmark_")) {
      own.push_back(a);
      continue;
    }
    const auto [flag, value] = split_flag(a);
    if (flag == "--benchmark_filter") {
      c.filter = value;
    } else if (flag == "--benchmark_out") {
      bench_out = value;
    } else if (flag == "--benchmark_out_format") {
      out_format = value;
    } else if (flag == "--benchmark_list_tests") {
      r.list_only = is_true(value);
      if (!r.list_only) continue;
    } else if (flag == "--benchmark_enable_random_interleaving") {
      if (is_true(value)) {
        r.error = "--benchmark_enable_random_interleaving is not supported by gptbench-run "
                  "(a crash could not be attributed to one benchmark); run gptbench directly";
        return r;
      }
      c.pass_flags.push_back(a);
    } else {
      c.pass_flags.push_back(a);
    }
  }
  CLI::App app("gptbench-run: runs gptbench family by family in separate processes and merges "
               "their JSON into one file; a crash costs one family, not the run.\n"
               "Every --gptbench_* and --benchmark_* flag is passed to gptbench.",
               "gptbench-run");
  std::string progress = "auto";
  app.add_option("-o,--out", c.out, "merged Google Benchmark JSON (or --benchmark_out=PATH)");
  app.add_option("--binary", c.binary, "the benchmark binary")->capture_default_str();
  app.add_option("--progress", progress, "progress line on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--max-restarts", c.max_restarts,
                 "abandon a family after this many benchmark processes in a row die before "
                 "finishing a benchmark")
      ->transform(whole_number_in(1, INT_MAX))
      ->capture_default_str();
  app.add_option("--benchmark-timeout", c.benchmark_timeout_s,
                 "kill a benchmark process after this many seconds without a result (0: never)")
      ->check(number_at_least(0))
      ->capture_default_str();
  app.add_option("--ranks,--gpus", c.ranks,
                 "run the data-parallel families (comm/, model/train_step_dp/) in this many "
                 "processes, one per GPU, as ranks of one c10d process group")
      ->transform(whole_number_in(1, 4096))
      ->capture_default_str();
  app.add_flag("--keep-parts", c.keep_parts, "keep each benchmark process's own JSON (<out>.parts-*/)");
  std::string peers, peer_command;
  app.add_option("--peers", peers, "also run the compiler peers' rows (docs/peers.md) and merge them")
      ->check(CLI::IsMember({"inductor"}));
  app.add_option("--peer-command", peer_command,
                 "the program that writes the peers' rows (default: the configured Python with "
                 "peers/gptbench-peers)");
  bool quiet = false;
  app.add_flag("--quiet-children", quiet, "do not forward the benchmark processes' console output");
  if (!parse_with(app, own, r)) return r;
  // Checked before any child runs: one line and exit 2, whichever binary (Google Benchmark
  // itself prints "Could not compile benchmark re", runs nothing and exits 0).
  if (auto err = benchmark_filter_error(c.filter); !err.empty()) {
    r.error = err;
    return r;
  }
  c.forward_output = !quiet;
  if (!peers.empty())
    c.peer_command = peer_command.empty() ? default_peer_command() : std::vector<std::string>{peer_command};
  else if (!peer_command.empty()) {
    r.error = "--peer-command needs --peers=inductor";
    return r;
  }
  c.progress = progress == "always" ? ProgressMode::kAlways
               : progress == "never" ? ProgressMode::kNever
                                     : ProgressMode::kAuto;
  if (r.list_only) return r;
  if (!out_format.empty() && out_format != "json") {
    r.error = "--benchmark_out_format=" + out_format + ": gptbench-run writes JSON only";
    return r;
  }
  if (!bench_out.empty() && !c.out.empty() && bench_out != c.out) {
    r.error = "both --out and --benchmark_out given; use one";
    return r;
  }
  if (c.out.empty()) c.out = bench_out;
  if (c.out.empty()) {
    r.error = "no output file: give --out PATH (or --benchmark_out=PATH)";
    return r;
  }
  if (c.binary.empty()) {
    r.error = "--binary is empty";
    return r;
  }
  return r;
}

}  // namespace gptbench::runner
