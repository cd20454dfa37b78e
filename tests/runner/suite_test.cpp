// gptbench-run end to end against tools/fake_gptbench (and, in the full build, the real
// gptbench on the CPU): fault isolation, restarts, timeouts, interruption, progress.
#include "suite.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "child.h"
#include "gb_json.h"
#include "runjson/load.h"

namespace gptbench::runner {
namespace {

namespace fs = std::filesystem;
using runjson::RunStatus;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Under AddressSanitizer (scripts/ci-checks.sh) a child's SIGSEGV would be caught by ASan's
// handler and become exit code 1; these tests are about real signals, so the children keep
// the default handler.
void children_keep_default_segv_handler() {
  const char* old = std::getenv("ASAN_OPTIONS");
  std::string opts = old ? old : "";
  if (opts.find("handle_segv=0") == std::string::npos)
    ::setenv("ASAN_OPTIONS", (opts + (opts.empty() ? "" : ":") + "handle_segv=0").c_str(), 1);
}

class Suite : public ::testing::Test {
 protected:
  void SetUp() override {
    children_keep_default_segv_handler();
    dir_ = fs::temp_directory_path() /
           ("gptbench_suite_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    out_ = (dir_ / "merged.json").string();
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  RunConfig config(std::vector<std::string> flags) const {
    RunConfig c;
    c.binary = GPTBENCH_FAKE_EXE;
    c.pass_flags = std::move(flags);
    c.out = out_;
    c.progress = ProgressMode::kNever;
    c.forward_output = false;
    return c;
  }
  // With --peers: the fake binary as the peer runner too, its names holding `peer_arg`'s impl.
  RunConfig with_peer(const std::string& peer_arg = "--gptbench_peer_impl=inductor") const {
    RunConfig c = config({});
    c.peer_command = {GPTBENCH_FAKE_EXE, peer_arg};
    return c;
  }
  // The merged file as gptbench-compare loads it (fails the test if it does not load).
  runjson::Run load() const { return runjson::load_run_file(out_); }
  // Files of the kept parts directory.
  std::vector<fs::path> parts() const {
    std::vector<fs::path> files;
    for (const auto& d : fs::directory_iterator(dir_))
      if (d.is_directory())
        for (const auto& f : fs::directory_iterator(d.path())) files.push_back(f.path());
    return files;
  }

  // Waits (up to 120 s) until the kept parts hold a result; returns how many rows they hold.
  size_t wait_for_first_result() const {
    size_t rows = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (rows == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      for (const fs::path& p : parts()) rows += read_gb_json(slurp(p)).rows.size();
    }
    return rows;
  }

  fs::path dir_;
  std::string out_;
};

const char* kAlpha[] = {"alpha/one/iterations:1/manual_time", "alpha/two/iterations:1/manual_time",
                        "alpha/three/iterations:1/manual_time"};
const char* kZeta[] = {"zeta/odd(name)[x]+1.5/iterations:1/manual_time",
                       "zeta/plain/iterations:1/manual_time"};

void expect_ok(const runjson::Run& run, const std::string& name) {
  const runjson::Benchmark* b = run.find(name);
  ASSERT_NE(b, nullptr) << name << " missing";
  EXPECT_EQ(b->status, RunStatus::kOk) << name << ": " << b->message;
  EXPECT_EQ(b->repetitions.size(), 1u) << name;
}

TEST_F(Suite, EveryFamilyRunsAndMergesIntoOneDocument) {
  RunSummary s;
  ASSERT_EQ(run_suite(config({}), &s), 0);
  EXPECT_EQ(s.total, 5u);
  EXPECT_EQ(s.reported, 5u);
  const runjson::Run run = load();
  EXPECT_EQ(run.benchmarks.size(), 5u);
  for (const char* n : kAlpha) expect_ok(run, n);
  for (const char* n : kZeta) expect_ok(run, n);
  EXPECT_EQ(run.context.at("gptbench_run_families"), "alpha,zeta");
  EXPECT_EQ(run.context.at("gptbench_run_status"), "complete");
  EXPECT_EQ(run.context.count("gptbench_run_crashes"), 0u);
  EXPECT_EQ(run.context.count("executable"), 1u);  // one context, from the first child
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1)
      << "parts directory and temporaries removed";
}

TEST_F(Suite, FilterSelectsBenchmarksAcrossFamilies) {
  RunConfig c = config({});
  c.filter = "one|plain";
  ASSERT_EQ(run_suite(c), 0);
  const runjson::Run run = load();
  ASSERT_EQ(run.benchmarks.size(), 2u);
  expect_ok(run, kAlpha[0]);
  expect_ok(run, kZeta[1]);
}

// --peers: the peer runner's families run after the binary's, in the same document.
TEST_F(Suite, PeerFamiliesRunAfterTheBinarysAndMergeIntoTheSameDocument) {
  RunSummary s;
  ASSERT_EQ(run_suite(with_peer(), &s), 0);
  EXPECT_EQ(s.total, 8u);
  EXPECT_EQ(s.reported, 8u);
  const runjson::Run run = load();
  EXPECT_EQ(run.benchmarks.size(), 8u);
  for (const char* n : kAlpha) expect_ok(run, n);
  for (const char* n : kZeta) expect_ok(run, n);
  for (const char* n : {"alpha/inductor/one", "alpha/inductor/two", "zeta/inductor/plain"})
    expect_ok(run, std::string(n) + "/iterations:1/manual_time");
  EXPECT_EQ(run.context.at("gptbench_run_families"), "alpha,zeta,alpha,zeta");
  EXPECT_NE(run.context.at("gptbench_run_peers").find("--gptbench_peer_impl=inductor"), std::string::npos);
}

TEST_F(Suite, FilterMatchingOnlyPeerRowsRunsOnlyThePeer) {
  RunConfig c = with_peer();
  c.filter = "/inductor/";
  RunSummary s;
  ASSERT_EQ(run_suite(c, &s), 0);
  EXPECT_EQ(s.total, 3u);
  EXPECT_EQ(load().benchmarks.size(), 3u);
}

TEST_F(Suite, PeerThatCannotListIsAnErrorAndWritesNothing) {
  EXPECT_EQ(run_suite(with_peer("--gptbench_no_such_flag=1")), 2);
  EXPECT_FALSE(fs::exists(out_));
}

// The fault costs one benchmark: the families before and after it, the benchmark before it
// in its own family and the one after it (re-run in a fresh process) all have results.
void check_one_fault(const runjson::Run& run, const std::string& kind, const std::string& reason) {
  for (const char* n : kAlpha) expect_ok(run, n);
  for (const char* n : kZeta) expect_ok(run, n);
  expect_ok(run, "fault/ok/before/iterations:1/manual_time");
  expect_ok(run, "fault/ok/after/iterations:1/manual_time");
  const runjson::Benchmark* crash = run.find("fault/" + kind + "/crash/iterations:1/manual_time");
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash->status, RunStatus::kErrored);
  EXPECT_NE(crash->message.find(reason), std::string::npos) << crash->message;
  EXPECT_NE(run.context.at("gptbench_run_crashes").find(reason), std::string::npos);
  EXPECT_EQ(run.benchmarks.size(), 8u);
}

TEST_F(Suite, AbortCostsOnlyTheFaultingBenchmark) {
  RunSummary s;
  EXPECT_EQ(run_suite(config({"--gptbench_fault=abort"}), &s), 1);
  EXPECT_EQ(s.errored, 1u);
  EXPECT_EQ(s.reported, 7u);
  check_one_fault(load(), "abort", "crashed: the benchmark process ended with SIGABRT");
}

TEST_F(Suite, SegfaultCostsOnlyTheFaultingBenchmark) {
  EXPECT_EQ(run_suite(config({"--gptbench_fault=segv"})), 1);
  check_one_fault(load(), "segv", "SIGSEGV");
}

TEST_F(Suite, NonZeroExitIsRecordedWithCodeAndLastStderrLine) {
  EXPECT_EQ(run_suite(config({"--gptbench_fault=exit3"})), 1);
  check_one_fault(load(), "exit3",
                  "exit code 3 while running this benchmark; its last stderr line: "
                  "fake_gptbench: giving up with exit code 3");
}

TEST_F(Suite, HungBenchmarkIsKilledAfterTheTimeout) {
  RunConfig c = config({"--gptbench_fault=hang"});
  c.benchmark_timeout_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_suite(c), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  check_one_fault(load(), "hang", "timed out: no result within 1 s");
}

// Every process of a family dies before running anything: after max_restarts the family is
// abandoned (not retried once per benchmark forever) and the rest is errored with the reason.
TEST_F(Suite, FamilyDyingAtStartUpIsAbandonedAfterMaxRestarts) {
  RunConfig c = config({"--gptbench_fault=startup"});
  c.max_restarts = 2;
  RunSummary s;
  EXPECT_EQ(run_suite(c, &s), 1);
  EXPECT_EQ(s.reported, 0u);
  EXPECT_EQ(s.errored, 8u);
  const runjson::Run run = load();
  ASSERT_EQ(run.benchmarks.size(), 8u);
  EXPECT_NE(run.find(kAlpha[0])->message.find("crashed: the benchmark process ended with SIGSEGV"),
            std::string::npos);
  EXPECT_NE(run.find(kAlpha[1])->message.find("crashed"), std::string::npos);
  EXPECT_NE(run.find(kAlpha[2])->message.find("abandoned after 2 benchmark processes in a row"),
            std::string::npos)
      << run.find(kAlpha[2])->message;
  for (const auto& b : run.benchmarks) EXPECT_EQ(b.status, RunStatus::kErrored) << b.name;
}

TEST_F(Suite, BadFlagFailsAtListingAndWritesNothing) {
  EXPECT_EQ(run_suite(config({"--gptbench_nosuch=1"})), 2);
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(Suite, ChunkedFiltersRunEveryBenchmark) {
  RunConfig c = config({"--gptbench_fault=abort"});
  c.max_names_per_child = 1;  // one process per benchmark
  EXPECT_EQ(run_suite(c), 1);
  check_one_fault(load(), "abort", "SIGABRT");
}

// The runner as a separate process, with a Ctrl-C once the first result is in: it finishes
// the benchmark that was running, stops, and writes a valid file with every finished result.
TEST_F(Suite, SigintStopsAfterTheCurrentBenchmarkAndKeepsFinishedResults) {
  Child runner({GPTBENCH_RUNNER_EXE, "--binary", GPTBENCH_FAKE_EXE, "-o", out_, "--keep-parts",
                "--progress=never", "--quiet-children", "--gptbench_sleep_ms=400"});
  const size_t rows_at_signal = wait_for_first_result();
  ASSERT_GT(rows_at_signal, 0u) << "no result within 120 s";
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(runner.pid(), SIGINT);
  std::string err;
  while (runner.pump(-1, -1, nullptr, [&](const std::string& s) { err += s; })) {
  }
  const ExitStatus status = runner.wait();
  EXPECT_FALSE(status.signaled) << describe(status);
  EXPECT_EQ(status.code, 130) << err;
  EXPECT_NE(err.find("stopping after the current benchmark"), std::string::npos) << err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  const runjson::Run run = load();  // valid JSON that gptbench-compare loads
  EXPECT_GE(run.benchmarks.size(), rows_at_signal + 1) << "the running benchmark was finished";
  EXPECT_LT(run.benchmarks.size(), 5u) << "the run stopped";
  for (const auto& b : run.benchmarks) EXPECT_EQ(b.status, RunStatus::kOk) << b.name;
  EXPECT_EQ(run.context.at("gptbench_run_status").rfind("interrupted: ", 0), 0u);
}

// SIGTERM in the second benchmark: it is lost (not waited for), the first one is written.
TEST_F(Suite, SigtermStopsAtOnceAndStillWritesAValidFile) {
  Child runner({GPTBENCH_RUNNER_EXE, "--binary", GPTBENCH_FAKE_EXE, "-o", out_, "--keep-parts",
                "--progress=never", "--quiet-children", "--gptbench_sleep_ms=2000"});
  ASSERT_GT(wait_for_first_result(), 0u) << "no result within 120 s";
  ::kill(runner.pid(), SIGTERM);
  while (runner.pump(-1, -1, nullptr, nullptr)) {
  }
  EXPECT_EQ(runner.wait().code, 130);
  const runjson::Run run = load();
  EXPECT_EQ(run.benchmarks.size(), 1u);
  for (const auto& b : run.benchmarks) EXPECT_EQ(b.status, RunStatus::kOk) << b.name;
}

// Interrupted before any result (Ctrl-C while the benchmarks are listed, as gptbench spends
// seconds loading LibTorch; or Ctrl-C twice in the first benchmark): an older file at the
// destination is kept as it was, not replaced by a document of no rows.
TEST_F(Suite, InterruptBeforeAnyResultLeavesTheOldFileUntouched) {
  const std::string old_text = "{\"context\": {}, \"benchmarks\": [\"an older run\"]}\n";
  struct Case {
    const char* what;
    std::vector<std::string> flags;
    int sigints;
  };
  for (const Case& c : {Case{"Ctrl-C while listing", {"--gptbench_startup_ms=1500"}, 1},
                        Case{"Ctrl-C twice in the first benchmark", {"--gptbench_sleep_ms=5000"}, 2}}) {
    SCOPED_TRACE(c.what);
    { std::ofstream(out_) << old_text; }
    std::vector<std::string> argv = {GPTBENCH_RUNNER_EXE, "--binary", GPTBENCH_FAKE_EXE, "-o", out_,
                                     "--progress=never", "--quiet-children"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    Child runner(argv);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (int i = 0; i < c.sigints; ++i) {
      ::kill(runner.pid(), SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string err;
    while (runner.pump(-1, -1, nullptr, [&](const std::string& s) { err += s; })) {
    }
    const ExitStatus status = runner.wait();
    EXPECT_FALSE(status.signaled) << describe(status);
    EXPECT_EQ(status.code, 130) << err;
    EXPECT_NE(err.find("gptbench-run: nothing measured; " + out_ + " left as it was"), std::string::npos) << err;
    EXPECT_EQ(slurp(out_), old_text);
    EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1)
        << "no parts directory or temporary left";
  }
}

TEST_F(Suite, ProgressOnlyWhenAskedOrOnATerminal) {
  const std::vector<std::string> base = {GPTBENCH_RUNNER_EXE, "--binary", GPTBENCH_FAKE_EXE, "-o",
                                         out_, "--quiet-children"};
  std::vector<std::string> quiet = base;  // stderr is a pipe here: auto means quiet
  const Captured q = run_captured(quiet);
  EXPECT_EQ(q.status.code, 0) << q.err;
  EXPECT_EQ(q.err.find("elapsed"), std::string::npos) << q.err;
  EXPECT_EQ(q.err.find('\r'), std::string::npos);
  std::vector<std::string> loud = base;
  loud.push_back("--progress=always");
  const Captured l = run_captured(loud);
  EXPECT_EQ(l.status.code, 0) << l.err;
  EXPECT_NE(l.err.find("[5/5] 100% | elapsed"), std::string::npos) << l.err;
}

#ifdef GPTBENCH_REAL_EXE
// The real binary on the CPU with the test-only fault family: gemm keeps its results.
TEST_F(Suite, RealGptbenchAbortCostsOnlyTheFaultingBenchmark) {
  RunConfig c = config({"--gptbench_device=cpu", "--gptbench_fault=abort", "--gptbench_dtypes=fp32",
                        "--benchmark_min_time=0.001"});
  c.binary = GPTBENCH_REAL_EXE;
  c.filter = "^fault/|^gemm/torch/fp32/square/M:64/";
  RunSummary s;
  EXPECT_EQ(run_suite(c, &s), 1);
  const runjson::Run run = load();
  EXPECT_EQ(run.context.at("gptbench_run_families"), "fault,gemm");
  expect_ok(run, "fault/ok/before/manual_time");
  expect_ok(run, "fault/ok/after/manual_time");
  const runjson::Benchmark* crash = run.find("fault/abort/crash/manual_time");
  ASSERT_NE(crash, nullptr);
  EXPECT_EQ(crash->status, RunStatus::kErrored);
  EXPECT_NE(crash->message.find("SIGABRT"), std::string::npos) << crash->message;
  size_t gemm = 0;
  for (const auto& b : run.benchmarks)
    if (b.name.rfind("gemm/", 0) == 0) {
      EXPECT_EQ(b.status, RunStatus::kOk) << b.name << ": " << b.message;
      ++gemm;
    }
  EXPECT_GE(gemm, 1u);
}
#endif

}  // namespace
}  // namespace gptbench::runner
