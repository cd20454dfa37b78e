// A stand-in for `gptbench --gptbench_worker=true` in gptbench-premerge's tests: the worker
// protocol of docs/premerge.md in plain C++ (no LibTorch, no Google Benchmark, no timing).
// Benchmarks (time per call drawn from a seeded normal distribution; nothing is timed, so a
// sample costs nothing):
//   fake/fast/a   100 us ± 0.2%      fake/mid/c   20 us ± 1%      fake/noisy/b   1 ms ± 15%
// Flags (anything else starting with --gptbench_ is accepted and ignored):
//   --gptbench_worker=true        required
//   --fake_seed=N                 seed of the samples (default 1)
//   --fake_extra=NAME             one more benchmark, 50 us ± 0.5% (for added/removed names)
//   --fake_slowdown=REGEX:PCT     benchmarks matching REGEX are PCT percent slower
//   --fake_process_offset=REGEX:PCT  benchmarks matching REGEX are slower or faster by an offset
//                                 drawn once per process, uniformly in +-PCT percent, from the pid
//                                 and the time (a process-level effect such as CPU placement or
//                                 allocator layout: each process of one binary differs)
//   --fake_process_offsets=REGEX:P0,P1,...:PATH  benchmarks matching REGEX are P_k percent slower
//                                 in the k-th process started with this PATH (the count kept
//                                 in PATH, k modulo the list's length): deterministic process
//                                 effects
//   --fake_skip=REGEX             prepare/sample of matching benchmarks answer "skipped"
//   --fake_crash_on_sample=N      abort() on the N-th sample request of this process
//   --fake_hang_on_sample=N       stop answering on the N-th sample request of this process
//   --fake_fault_filter=REGEX     only sample requests of matching benchmarks count for the two above
//   --fake_fault_once=PATH        fault only while PATH does not exist (created when faulting),
//                                 so that the restarted worker runs on
//   --fake_fail_start             print a reason on stderr and exit 3 before the ready line
//   --fake_fail_start_if=PATH     the same, when PATH exists (with --fake_fault_once=PATH: the
//                                 worker cannot be restarted after its fault)
//   --fake_hang_start             never write the ready line
//   --fake_delay_ms=N             sleep N ms in every sample request
//   --fake_stray_stdout           write a line that is not JSON to stdout before each reply
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

struct FakeBenchmark {
  std::string name;
  double mean_s;
  double relative_sd;
};

struct Options {
  uint64_t seed = 1;
  std::vector<FakeBenchmark> benchmarks = {
      {"fake/fast/a", 100e-6, 0.002}, {"fake/mid/c", 20e-6, 0.01}, {"fake/noisy/b", 1e-3, 0.15}};
  std::optional<std::regex> slowdown;
  double slowdown_pct = 0;
  std::optional<std::regex> process_offset;
  double process_offset_pct = 0;
  std::vector<double> process_offsets_pct;  // --fake_process_offsets: one per start
  std::string process_counter;              // ... counted in this file
  std::optional<std::regex> skip;
  long crash_on_sample = 0, hang_on_sample = 0;
  std::optional<std::regex> fault_filter;
  std::string fault_once;
  std::string fail_start_if;
  bool fail_start = false, hang_start = false, stray_stdout = false;
  long delay_ms = 0;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fake_worker: %s\n", what.c_str());
  std::exit(2);
}

bool value_of(const std::string& arg, const std::string& flag, std::string& value) {
  if (arg.rfind(flag + "=", 0) != 0) return false;
  value = arg.substr(flag.size() + 1);
  return true;
}

Options parse(int argc, char** argv) {
  Options o;
  bool worker = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    std::string v;
    if (a == "--gptbench_worker=true") {
      worker = true;
    } else if (value_of(a, "--fake_seed", v)) {
      o.seed = std::stoull(v);
    } else if (value_of(a, "--fake_extra", v)) {
      o.benchmarks.push_back({v, 50e-6, 0.005});
    } else if (value_of(a, "--fake_slowdown", v)) {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) die("--fake_slowdown=REGEX:PCT");
      o.slowdown = std::regex(v.substr(0, colon), std::regex::extended);
      o.slowdown_pct = std::stod(v.substr(colon + 1));
    } else if (value_of(a, "--fake_process_offset", v)) {
      const size_t colon = v.rfind(':');
      if (colon == std::string::npos) die("--fake_process_offset=REGEX:PCT");
      o.process_offset = std::regex(v.substr(0, colon), std::regex::extended);
      o.process_offset_pct = std::stod(v.substr(colon + 1));
    } else if (value_of(a, "--fake_process_offsets", v)) {
      const size_t first = v.find(':');
      const size_t last = v.rfind(':');
      if (first == std::string::npos || last == first) die("--fake_process_offsets=REGEX:P0,P1,...:PATH");
      o.process_offset = std::regex(v.substr(0, first), std::regex::extended);
      std::stringstream list(v.substr(first + 1, last - first - 1));
      for (std::string item; std::getline(list, item, ',');) o.process_offsets_pct.push_back(std::stod(item));
      if (o.process_offsets_pct.empty()) die("--fake_process_offsets needs at least one percentage");
      o.process_counter = v.substr(last + 1);
    } else if (value_of(a, "--fake_skip", v)) {
      o.skip = std::regex(v, std::regex::extended);
    } else if (value_of(a, "--fake_crash_on_sample", v)) {
      o.crash_on_sample = std::stol(v);
    } else if (value_of(a, "--fake_hang_on_sample", v)) {
      o.hang_on_sample = std::stol(v);
    } else if (value_of(a, "--fake_fault_filter", v)) {
      o.fault_filter = std::regex(v, std::regex::extended);
    } else if (value_of(a, "--fake_fault_once", v)) {
      o.fault_once = v;
    } else if (value_of(a, "--fake_fail_start_if", v)) {
      o.fail_start_if = v;
    } else if (value_of(a, "--fake_delay_ms", v)) {
      o.delay_ms = std::stol(v);
    } else if (a == "--fake_fail_start") {
      o.fail_start = true;
    } else if (a == "--fake_hang_start") {
      o.hang_start = true;
    } else if (a == "--fake_stray_stdout") {
      o.stray_stdout = true;
    } else if (a.rfind("--gptbench_", 0) != 0) {
      die("unknown flag " + a);
    }
  }
  if (!worker) die("only the worker protocol is faked: pass --gptbench_worker=true");
  return o;
}

// The CPUs this process may run on, "0,1,2" (the context's fake_cpus: tests check pinning).
std::string allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return "?";
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out += (out.empty() ? "" : ",") + std::to_string(cpu);
  return out;
}

[[noreturn]] void hang() {
  for (;;) ::pause();
}

// This process's offset for --fake_process_offset, a fraction in +-PCT/100 (0 without it).
double draw_process_offset(const Options& o) {
  if (!o.process_counter.empty()) {  // --fake_process_offsets: the next in the list
    size_t started = 0;
    if (std::ifstream in(o.process_counter); in) in >> started;
    std::ofstream(o.process_counter, std::ios::trunc) << started + 1;
    return o.process_offsets_pct[started % o.process_offsets_pct.size()] / 100;
  }
  if (!o.process_offset || o.process_offset_pct == 0) return 0;
  const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::seed_seq seq{static_cast<uint64_t>(::getpid()), now, static_cast<uint64_t>(std::random_device{}())};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> offset(-o.process_offset_pct / 100, o.process_offset_pct / 100);
  return offset(rng);
}

class FakeWorker {
 public:
  FakeWorker(Options o, double process_offset) : o_(std::move(o)), rng_(o_.seed), process_offset_(process_offset) {}

  json answer(const json& req, bool& quit) {
    const std::string cmd = req.value("cmd", "");
    if (cmd == "list") return list(req.value("filter", ""));
    if (cmd == "prepare") return prepare(req.value("name", ""));
    if (cmd == "sample") return sample(req);
    if (cmd == "quit") {
      quit = true;
      return {{"ok", true}};
    }
    return error("unknown cmd '" + cmd + "'");
  }

  bool stray_stdout() const { return o_.stray_stdout; }

 private:
  static json error(const std::string& what) { return {{"ok", false}, {"error", what}}; }

  json list(const std::string& filter) {
    std::regex re;
    try {
      re = std::regex(filter.empty() ? "." : filter, std::regex::extended);
    } catch (const std::regex_error& e) {
      return error("invalid filter '" + filter + "': " + e.what());
    }
    json names = json::array();
    for (const FakeBenchmark& b : o_.benchmarks)
      if (std::regex_search(b.name, re)) names.push_back(b.name);
    return {{"ok", true}, {"names", names}};
  }

  const FakeBenchmark* find(const std::string& name) const {
    for (const FakeBenchmark& b : o_.benchmarks)
      if (b.name == name) return &b;
    return nullptr;
  }

  double slowdown_pct(const std::string& name) const {
    return o_.slowdown && std::regex_search(name, *o_.slowdown) ? o_.slowdown_pct : 0;
  }

  double process_offset(const std::string& name) const {
    return o_.process_offset && std::regex_search(name, *o_.process_offset) ? process_offset_ : 0;
  }

  json skipped(const std::string& name) const {
    return {{"ok", true}, {"name", name}, {"skipped", "fake: skipped by --fake_skip"}};
  }

  json prepare(const std::string& name) {
    const FakeBenchmark* b = find(name);
    if (!b) return error("no benchmark named '" + name + "'");
    if (o_.skip && std::regex_search(name, *o_.skip)) return skipped(name);
    current_ = name;
    return {{"ok", true},   {"name", name},     {"inner", 4},    {"call_s", b->mean_s},
            {"build_s", 0}, {"verify_s", 0},    {"warmup_s", 0}, {"slowdown_pct", slowdown_pct(name)}};
  }

  // Whether this request faults (a crash or hang is due and the once-marker allows it).
  bool fault_due(long on_request) {
    if (on_request <= 0 || fault_requests_ != on_request) return false;
    if (o_.fault_once.empty()) return true;
    const int fd = ::open(o_.fault_once.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return false;  // faulted once already
    ::close(fd);
    return true;
  }

  json sample(const json& req) {
    const std::string name = req.value("name", "");
    const FakeBenchmark* b = find(name);
    if (!b) return error("no benchmark named '" + name + "'");
    if (!o_.fault_filter || std::regex_search(name, *o_.fault_filter)) ++fault_requests_;
    if (fault_due(o_.crash_on_sample)) {
      std::fprintf(stderr, "fake_worker: aborting on sample request %ld (%s)\n", fault_requests_, name.c_str());
      std::fflush(stderr);
      std::abort();
    }
    if (fault_due(o_.hang_on_sample)) {
      std::fprintf(stderr, "fake_worker: hanging on sample request %ld (%s)\n", fault_requests_, name.c_str());
      std::fflush(stderr);
      hang();
    }
    if (o_.skip && std::regex_search(name, *o_.skip)) return skipped(name);
    if (current_ != name) prepare(name);
    if (o_.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o_.delay_ms));
    const int count = req.value("count", 1);
    const double min_time = req.value("min_time", 0.01);
    if (count < 1) return error("count must be positive");
    const double mean = b->mean_s * (1 + slowdown_pct(name) / 100) * (1 + process_offset(name));
    std::normal_distribution<double> noise(0.0, b->relative_sd);
    json samples = json::array(), calls = json::array();
    double sum = 0;
    for (int i = 0; i < count; ++i) {
      const double t = std::max(mean * (1 + noise(rng_)), mean * 0.01);
      samples.push_back(t);
      calls.push_back(std::max<long>(4, static_cast<long>(std::ceil(min_time / t / 4)) * 4));
      sum += t;
    }
    const double per_call = sum / count;
    return {{"ok", true},
            {"name", name},
            {"samples", samples},
            {"calls", calls},
            {"counters", {{"FLOP/s", 1e6 / per_call}, {"peak_mem_bytes", 1048576}}}};
  }

  Options o_;
  std::mt19937_64 rng_;
  double process_offset_;
  std::string current_;
  long fault_requests_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  Options options;
  try {
    options = parse(argc, argv);
  } catch (const std::exception& e) {
    die(std::string("bad flag value: ") + e.what());
  }
  std::fprintf(stderr, "fake_worker: starting (seed %llu)\n", static_cast<unsigned long long>(options.seed));
  if (options.fail_start || (!options.fail_start_if.empty() && ::access(options.fail_start_if.c_str(), F_OK) == 0)) {
    std::fprintf(stderr, "fake_worker: cannot initialise the fake device (--fake_fail_start)\n");
    return 3;
  }
  if (options.hang_start) hang();
  const double offset = draw_process_offset(options);
  if (options.process_offset)
    std::fprintf(stderr, "fake_worker: process offset %+.2f%% (--fake_process_offset)\n", 100 * offset);
  FakeWorker worker(options, offset);
  json context{{"gpu_name", "fake"}, {"gpu_driver", "none"}, {"cuda_runtime", "none"},
               {"libtorch", "none"}, {"timer_hold_ns", "0"},  {"fake_seed", std::to_string(options.seed)},
               {"fake_cpus", allowed_cpus()}};
  if (options.process_offset) context["fake_process_offset"] = std::to_string(offset);
  std::cout << json{{"ok", true},
                    {"event", "ready"},
                    {"protocol", 1},
                    {"context", context},
                    {"startup_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}}
                   .dump()
            << std::endl;
  std::string line;
  bool quit = false;
  while (!quit && std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json req = json::parse(line, nullptr, false);
    const json reply = req.is_object() ? worker.answer(req, quit) : json{{"ok", false}, {"error", "request is not JSON"}};
    if (worker.stray_stdout()) std::cout << "fake_worker: stray output\n";
    std::cout << reply.dump() << std::endl;
  }
  return 0;
}
