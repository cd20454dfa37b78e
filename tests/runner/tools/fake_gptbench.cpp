// A stand-in for gptbench in the runner's tests: Google Benchmark with the suite's flag style,
// no LibTorch. Families alpha (3), fault (3, only with --gptbench_fault) and zeta (2, one with
// regex metacharacters in its name). Every benchmark runs one iteration of --gptbench_sleep_ms
// (default 1) with manual time.
//   --gptbench_fault=none|abort|segv|exit3|hang|startup
//     abort/segv/exit3/hang: fault/<kind>/crash faults that way (hang: sleeps for an hour)
//     startup: the process dies with SIGSEGV before running any benchmark (listing works)
//   --gptbench_sleep_ms=N   time per benchmark
//   --gptbench_startup_ms=N time before listing or running, as gptbench loading LibTorch
//   --gptbench_peer_impl=X  a peer runner instead (gptbench-run --peers): only alpha/X/one,
//                           alpha/X/two and zeta/X/plain
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string g_fault = "none";
int g_sleep_ms = 1;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void ok_bench(benchmark::State& state) {
  for (auto _ : state) {
    sleep_ms(g_sleep_ms);
    state.SetIterationTime(g_sleep_ms / 1000.0);
  }
  state.counters["answer"] = 42;
}

void crash_bench(benchmark::State& state) {
  for (auto _ : state) {
    if (g_fault == "abort") std::abort();
    if (g_fault == "segv") std::raise(SIGSEGV);
    if (g_fault == "exit3") {
      std::fprintf(stderr, "fake_gptbench: giving up with exit code 3\n");
      std::fflush(stderr);
      std::_Exit(3);
    }
    if (g_fault == "hang") sleep_ms(3600 * 1000);
    state.SetIterationTime(0.001);
  }
}

void add(const std::string& name, void (*fn)(benchmark::State&)) {
  benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Iterations(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest;
  bool listing = false;
  int startup_ms = 0;
  std::string peer_impl;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--gptbench_fault=", 0) == 0) {
      g_fault = a.substr(17);
    } else if (a.rfind("--gptbench_sleep_ms=", 0) == 0) {
      g_sleep_ms = std::atoi(a.c_str() + 20);
    } else if (a.rfind("--gptbench_startup_ms=", 0) == 0) {
      startup_ms = std::atoi(a.c_str() + 22);
    } else if (a.rfind("--gptbench_peer_impl=", 0) == 0) {
      peer_impl = a.substr(21);
    } else if (a.rfind("--gptbench_", 0) == 0) {
      std::fprintf(stderr, "fake_gptbench: unknown flag %s\n", a.c_str());
      return 2;
    } else {
      if (a.rfind("--benchmark_list_tests", 0) == 0) listing = true;
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  if (g_fault == "startup" && !listing) std::raise(SIGSEGV);
  sleep_ms(startup_ms);
  if (!peer_impl.empty()) {
    for (const char* n : {"alpha/one", "alpha/two", "zeta/plain"}) {
      std::string name = n;
      add(name.insert(name.find('/') + 1, peer_impl + "/"), ok_bench);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  add("alpha/one", ok_bench);
  add("alpha/two", ok_bench);
  add("alpha/three", ok_bench);
  if (g_fault != "none") {
    add("fault/ok/before", ok_bench);
    add("fault/" + g_fault + "/crash", crash_bench);
    add("fault/ok/after", ok_bench);
  }
  add("zeta/odd(name)[x]+1.5", ok_bench);
  add("zeta/plain", ok_bench);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
