#include "suite.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <unordered_set>

#include "atomic_file.h"
#include "child.h"
#include "gb_json.h"
#include "merge.h"
#include "names.h"
#include "progress.h"
#include "ranks.h"
#include "stderr_tail.h"

namespace gptbench::runner {
namespace {

namespace fs = std::filesystem;

// --- signals ---------------------------------------------------------------------------------
// The handler only counts and wakes the poll loop through a pipe.
volatile sig_atomic_t g_interrupts = 0;  // SIGINT count
volatile sig_atomic_t g_terminate = 0;   // SIGTERM / SIGHUP seen
int g_wake[2] = {-1, -1};

void on_signal(int sig) {
  const int saved = errno;
  if (sig == SIGINT)
    g_interrupts = g_interrupts + 1;
  else
    g_terminate = 1;
  if (g_wake[1] >= 0) (void)!::write(g_wake[1], "x", 1);
  errno = saved;
}

class SignalScope {
 public:
  SignalScope() {
    g_interrupts = 0;
    g_terminate = 0;
    if (::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) g_wake[0] = g_wake[1] = -1;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalScope() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
    for (int& fd : g_wake) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  static void drain() {
    char buf[64];
    while (g_wake[0] >= 0 && ::read(g_wake[0], buf, sizeof buf) > 0) {
    }
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

bool stop_now() { return g_terminate != 0 || g_interrupts >= 2; }
bool stop_requested() { return g_terminate != 0 || g_interrupts >= 1; }

// --- output -----------------------------------------------------------------------------------
class Console {
 public:
  Console(Progress& progress, bool forward) : progress_(progress), forward_(forward) {}
  void child_stdout(const std::string& s) {
    if (!forward_) return;
    progress_.clear();
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }
  void child_stderr(const std::string& s) {
    if (!forward_) return;
    progress_.clear();
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
  }
  // A message of the runner's own (always shown).
  void note(const std::string& s) {
    progress_.clear();
    std::fprintf(stderr, "gptbench-run: %s\n", s.c_str());
    std::fflush(stderr);
  }

 private:
  Progress& progress_;
  bool forward_;
};

// --- one child run ----------------------------------------------------------------------------
// A rank other than 0: its output is kept only as the tail of its stderr (a failure's reason).
struct RankPeer {
  RankPeer(int r, const std::vector<std::string>& argv, const ChildOptions& o) : rank(r), child(argv, o) {}
  // Reads what the rank wrote; true once it has ended with a failure (status set).
  bool poll() {
    if (ended) return false;
    if (child.pump(0, -1, [](const std::string&) {}, [&](const std::string& s) { keep(s); })) return false;
    ended = true;
    status = child.wait();
    return !status.ok();
  }
  // After rank 0 ended: waits up to 10 s for a clean exit when rank 0 finished, else kills.
  void finish(bool rank0_ok) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(rank0_ok ? 10 : 0);
    while (!ended && std::chrono::steady_clock::now() < until)
      if (!child.pump(100, -1, [](const std::string&) {}, [&](const std::string& s) { keep(s); })) ended = true;
    if (!ended) child.kill_group(SIGKILL);
    status = child.wait();
    ended = true;
  }
  void keep(const std::string& s) {
    stderr_tail += s;
    if (stderr_tail.size() > 8192) stderr_tail.erase(0, stderr_tail.size() - 8192);
  }
  int rank;
  Child child;
  bool ended = false;
  ExitStatus status;
  std::string stderr_tail;
};

struct ChildOutcome {
  std::vector<nlohmann::json> rows;
  std::optional<nlohmann::json> context;
  std::unordered_set<std::string> reported;  // benchmark names with rows
  ExitStatus status;
  std::string stderr_tail;
  bool stopped_by_us = false;  // interrupted on request
  bool timed_out = false;
  std::string read_problem;
  std::string failed_rank;  // "rank k of R" when a rank other than 0 failed first
};

class ChildRun {
 public:
  ChildRun(const RunConfig& cfg, Progress& progress, Console& console)
      : cfg_(cfg), progress_(progress), console_(console) {}

  // Runs `command` (gptbench, or the peer runner) with the pass-through flags on `names`, as
  // `ranks` processes for a data-parallel family.
  ChildOutcome run(const std::vector<std::string>& command, const std::vector<std::string>& names,
                   const std::string& filter, const std::string& part_path, int ranks = 1) {
    auto argv_for = [&](const std::string& out) {
      std::vector<std::string> argv = command;
      argv.insert(argv.end(), cfg_.pass_flags.begin(), cfg_.pass_flags.end());
      argv.push_back("--benchmark_filter=" + filter);
      argv.push_back("--benchmark_out=" + out);
      argv.push_back("--benchmark_out_format=json");
      return argv;
    };
    const std::vector<std::string> argv = argv_for(part_path);
    names_ = &names;
    next_ = 0;
    part_path_ = part_path;
    read_offset_ = 0;
    reader_ = GbJsonReader();
    outcome_ = ChildOutcome();
    progress_.set_current(names.empty() ? "" : names[0]);
    progress_.draw(true);

    // Ranks 1…R-1 of a data-parallel run: started first, so rank 0's store finds them waiting.
    ChildOptions rank0;
    std::vector<std::unique_ptr<RankPeer>> peers;
    if (ranks > 1) {
      const int port = free_port();
      rank0.env = rank_variables(0, ranks, port, cfg_.benchmark_timeout_s);
      for (int r = 1; r < ranks; ++r) {
        ChildOptions o;
        o.env = rank_variables(r, ranks, port, cfg_.benchmark_timeout_s);
        peers.push_back(std::make_unique<RankPeer>(
            r, argv_for(part_path + ".rank" + std::to_string(r)), o));
      }
    }
    Child child(argv, rank0);
    auto kill_all = [&] {
      child.kill_group(SIGKILL);
      for (auto& p : peers) p->child.kill_group(SIGKILL);
    };
    auto last_result = std::chrono::steady_clock::now();
    bool interrupt_seen = false;
    size_t reported_at_interrupt = 0;
    bool killed = false;
    // The crash reason quotes the child's stderr after Google Benchmark's banner (date, CPU,
    // the suite's custom context as "key: value" lines, then "***WARNING***" lines): the
    // banner ends at its last warning line, or at the latest when the first result reaches
    // stdout.
    bool banner_done = false;
    auto on_err = [&](const std::string& s) {
      if (!outcome_.failed_rank.empty()) {  // the reason is the failed rank's
        console_.child_stderr(s);
        return;
      }
      std::string& tail = outcome_.stderr_tail;
      tail += s;
      if (!banner_done) {
        if (size_t w = tail.rfind("***WARNING***"); w != std::string::npos) {
          if (size_t nl = tail.find('\n', w); nl != std::string::npos) tail.erase(0, nl + 1);
        }
      }
      if (tail.size() > 8192) tail.erase(0, tail.size() - 8192);
      console_.child_stderr(s);
    };
    auto on_out = [&](const std::string& s) {
      if (!banner_done) outcome_.stderr_tail.clear();
      banner_done = true;
      console_.child_stdout(s);
    };
    while (child.pump(100, g_wake[0], on_out, on_err)) {
      SignalScope::drain();
      const size_t before = outcome_.reported.size();
      poll_file();
      if (outcome_.reported.size() > before) last_result = std::chrono::steady_clock::now();
      if (!killed && stop_requested()) {
        if (!interrupt_seen) {
          interrupt_seen = true;
          reported_at_interrupt = outcome_.reported.size();
          if (!stop_now())
            console_.note("interrupted: stopping after the current benchmark (Ctrl-C again to stop now)");
        }
        if (stop_now() || outcome_.reported.size() > reported_at_interrupt) {
          child.kill_group(SIGKILL);
          killed = true;
          outcome_.stopped_by_us = true;
        }
      }
      for (auto& p : peers) {
        if (killed || !p->poll()) continue;
        outcome_.failed_rank = "rank " + std::to_string(p->rank) + " of " + std::to_string(ranks);
        outcome_.status = p->status;
        outcome_.stderr_tail = p->stderr_tail;
        kill_all();
        killed = true;
      }
      if (!killed && cfg_.benchmark_timeout_s > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - last_result).count() >
              cfg_.benchmark_timeout_s) {
        kill_all();
        killed = true;
        outcome_.timed_out = true;
      }
      progress_.draw();
    }
    const ExitStatus status0 = child.wait();
    if (outcome_.failed_rank.empty()) outcome_.status = status0;
    // Rank 0 is done: the others end with it, or are stopped (a rank left waiting in a
    // collective rank 0 never made).
    for (auto& p : peers) p->finish(status0.ok() && !killed);
    poll_file();
    outcome_.context = reader_.context();
    outcome_.read_problem = reader_.problem();
    return std::move(outcome_);
  }

 private:
  void poll_file() {
    std::ifstream in(part_path_, std::ios::binary);
    if (!in) return;
    in.seekg(static_cast<std::streamoff>(read_offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (chunk.empty()) return;
    read_offset_ += chunk.size();
    reader_.feed(chunk);
    for (nlohmann::json& row : reader_.take_rows()) {
      const std::string name = row_benchmark(row);
      if (outcome_.reported.insert(name).second) {
        progress_.finished();
        // The child runs its names in order: the next unreported one is running now.
        while (next_ < names_->size() && outcome_.reported.count((*names_)[next_])) ++next_;
        progress_.set_current(next_ < names_->size() ? (*names_)[next_] : "");
      }
      outcome_.rows.push_back(std::move(row));
    }
  }

  const RunConfig& cfg_;
  Progress& progress_;
  Console& console_;
  const std::vector<std::string>* names_ = nullptr;
  size_t next_ = 0;
  std::string part_path_;
  size_t read_offset_ = 0;
  GbJsonReader reader_;
  ChildOutcome outcome_;
};

bool filter_selects_all(const std::string& filter) {
  return filter.empty() || filter == "." || filter == "all" || filter == ".*";
}

std::string make_parts_dir(const std::string& out) {
  std::string pattern = out + ".parts-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    throw std::runtime_error("cannot create a directory next to " + out + ": " + std::strerror(errno));
  return buf.data();
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// The benchmarks `command` lists for the filter, in the order it runs them. Returns false (and
// says why) when listing failed; a filter matching nothing gives an empty list.
bool list_benchmarks(const std::vector<std::string>& command, const RunConfig& cfg, Console& console,
                     std::vector<std::string>& names) {
  std::vector<std::string> argv = command;
  argv.insert(argv.end(), cfg.pass_flags.begin(), cfg.pass_flags.end());
  if (!cfg.filter.empty()) argv.push_back("--benchmark_filter=" + cfg.filter);
  argv.push_back("--benchmark_list_tests=true");
  Captured listed;
  try {
    ChildOptions list_options;  // names carry ranks:R
    if (cfg.ranks > 1 && command.front() == cfg.binary)
      list_options.env = rank_variables(0, cfg.ranks, free_port(), 0);
    listed = run_captured(argv, list_options);
  } catch (const std::exception& e) {
    console.note(e.what());
    return false;
  }
  names = parse_benchmark_list(listed.out);
  // gptbench exits 1 when the filter matches nothing (Google Benchmark's "Failed to match any
  // benchmarks"); a binary that exits 0 with an empty list means the same.
  const bool matched_nothing = names.empty() && !listed.status.signaled && listed.status.code <= 1;
  if (!listed.status.ok() && !matched_nothing) {
    std::fputs(listed.err.c_str(), stderr);
    console.note("listing the benchmarks of " + command.back() + " failed (" + describe(listed.status) + ")");
    return false;
  }
  return true;
}

// What one program runs: gptbench's families, then the peer runner's.
struct Source {
  std::vector<std::string> command;
  std::vector<RunFamily> families;  // gptbench's split for --ranks (runner/ranks.h)
};

}  // namespace

int run_suite(const RunConfig& cfg, RunSummary* summary_out) {
  RunSummary summary;
  SignalScope signals;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  Progress progress(cfg.progress == ProgressMode::kAlways ||
                    (cfg.progress == ProgressMode::kAuto && tty));
  Console console(progress, cfg.forward_output);

  // 1. The benchmarks the filter selects, in the order the binary (then the peer runner) runs them.
  keep_multicast_off_env();
  std::vector<Source> sources = {{{cfg.binary}, {}}};
  if (!cfg.peer_command.empty()) sources.push_back({cfg.peer_command, {}});
  for (Source& source : sources) {
    std::vector<std::string> names;
    if (!list_benchmarks(source.command, cfg, console, names)) return 2;
    const bool binary = source.command.front() == cfg.binary;
    source.families = split_for_ranks(group_families(names), binary ? cfg.ranks : 1);
    summary.total += names.size();
  }
  if (summary.total == 0) {
    console.note("no benchmark matches the filter '" + cfg.filter + "'");
    return 2;
  }
  progress.set_total(summary.total);

  std::string parts_dir;
  try {
    parts_dir = make_parts_dir(cfg.out);
  } catch (const std::exception& e) {
    console.note(e.what());
    return 3;
  }

  // 2. Family by family.
  MergedRun merged;
  ChildRun child_run(cfg, progress, console);
  int child_count = 0;
  std::vector<std::pair<const Source*, const RunFamily*>> work;  // every family, in running order
  std::vector<std::string> family_names;
  for (const Source& source : sources)
    for (const RunFamily& run_family : source.families) {
      work.emplace_back(&source, &run_family);
      family_names.push_back(run_family.family.name);
    }
  for (const auto& [source, run_family_ptr] : work) {
    const RunFamily& run_family = *run_family_ptr;
    const Family& family = run_family.family;
    const int ranks = run_family.on_ranks ? cfg.ranks : 1;
    std::vector<std::string> remaining = family.benchmarks;
    int crashes_in_a_row = 0;
    while (!remaining.empty() && !stop_requested()) {
      std::vector<std::string> batch;
      std::string filter;
      if (!run_family.split && remaining.size() == family.benchmarks.size() && filter_selects_all(cfg.filter) &&
          remaining.size() > cfg.max_names_per_child) {
        batch = remaining;  // the whole family: a short filter instead of every name
        filter = "^" + escape_regex(family.name) + "/";
      } else {
        batch = chunk_for_filter(remaining, cfg.max_names_per_child, cfg.max_filter_chars).front();
        filter = exact_filter(batch);
      }
      const std::string part = parts_dir + "/" + family.name + "." + std::to_string(++child_count) + ".json";
      ChildOutcome outcome;
      try {
        outcome = child_run.run(source->command, batch, filter, part, ranks);
      } catch (const std::exception& e) {
        console.note(e.what());
        return 2;
      }
      if (outcome.context) merged.offer_context(*outcome.context);
      if (!outcome.read_problem.empty())
        console.note(part + ": " + outcome.read_problem + " (rows after it are lost)");
      const size_t reported_here = outcome.reported.size();
      summary.reported += reported_here;
      merged.add_child_rows(std::move(outcome.rows));
      std::vector<std::string> unreported;
      for (const std::string& n : batch)
        if (!outcome.reported.count(n)) unreported.push_back(n);
      std::vector<std::string> rest;
      for (const std::string& n : remaining)
        if (!outcome.reported.count(n)) rest.push_back(n);
      remaining = std::move(rest);
      if (outcome.stopped_by_us) break;
      if (unreported.empty() && outcome.status.ok()) continue;
      if (unreported.empty()) {
        console.note(family.name + ": the benchmark process ended with " + describe(outcome.status) +
                     " after reporting every benchmark; results kept");
        continue;
      }
      // The child died in the first benchmark it did not report.
      const std::string& victim = unreported.front();
      std::string reason;
      if (outcome.timed_out)
        reason = "timed out: no result within " + std::to_string(static_cast<long>(cfg.benchmark_timeout_s)) +
                 " s; the benchmark process was killed";
      else
        reason = "crashed: " +
                 (outcome.failed_rank.empty() ? std::string("the benchmark process")
                                              : "the benchmark process of " + outcome.failed_rank) +
                 " ended with " + describe(outcome.status) + " while running this benchmark";
      if (const std::string line = last_stderr_line(outcome.stderr_tail); !line.empty())
        reason += "; its last stderr line: " + line;
      merged.add_errored(victim, reason);
      ++summary.errored;
      progress.finished();
      summary.crashes.push_back(family.name + ": " + victim + ": " + reason);
      remaining.erase(std::find(remaining.begin(), remaining.end(), victim));
      crashes_in_a_row = reported_here == 0 ? crashes_in_a_row + 1 : 1;
      console.note(victim + ": " + reason + (remaining.empty() ? "" : "; running the rest of family " + family.name + " in a new process"));
      if (crashes_in_a_row >= cfg.max_restarts && !remaining.empty()) {
        const std::string why = "not run: family " + family.name + " abandoned after " +
                                std::to_string(crashes_in_a_row) +
                                " benchmark processes in a row failed without finishing a benchmark (last: " +
                                describe(outcome.status) + ")";
        for (const std::string& n : remaining) {
          merged.add_errored(n, why);
          ++summary.errored;
          progress.finished();
        }
        console.note(why);
        remaining.clear();
      }
    }
    summary.not_run += remaining.size();
    if (stop_requested()) {
      summary.interrupted = true;
    }
  }
  progress.set_current("");
  progress.draw(true);
  progress.clear();

  // 3. One merged document, written atomically.
  merged.offer_context(nlohmann::json{{"executable", cfg.binary}});
  merged.set_context_entry("gptbench_run_families", join(family_names, ","));
  merged.set_context_entry(
      "gptbench_run_status",
      summary.interrupted ? "interrupted: " + std::to_string(summary.not_run) + " of " +
                                std::to_string(summary.total) + " benchmarks not run"
                          : "complete");
  if (!cfg.peer_command.empty()) merged.set_context_entry("gptbench_run_peers", join(cfg.peer_command, " "));
  if (!summary.crashes.empty())
    merged.set_context_entry("gptbench_run_crashes", join(summary.crashes, " | "));
  int code = summary.interrupted ? 130 : (summary.errored > 0 ? 1 : 0);
  // A run stopped before its first result has nothing to say: an older result file at the
  // destination is worth more than an empty document (docs/robustness.md, "Ctrl-C").
  const bool nothing_measured = merged.row_count() == 0;
  if (!nothing_measured) {
    try {
      write_file_atomic(cfg.out, merged.text());
    } catch (const std::exception& e) {
      console.note(e.what());
      code = 3;
    }
  }
  if (!cfg.keep_parts && code != 3) {
    std::error_code ec;
    fs::remove_all(parts_dir, ec);
  }
  if (nothing_measured)
    console.note("nothing measured; " + cfg.out + " left as it was");
  else
    console.note(cfg.out + ": " + std::to_string(merged.row_count()) + " rows; " +
                 std::to_string(summary.reported) + " of " + std::to_string(summary.total) +
                 " benchmarks reported, " + std::to_string(summary.errored) + " errored by the runner" +
                 (summary.interrupted ? ", " + std::to_string(summary.not_run) + " not run (interrupted)" : "") +
                 " in " + format_duration(progress.elapsed_s()));
  if (summary_out) *summary_out = summary;
  return code;
}

}  // namespace gptbench::runner
