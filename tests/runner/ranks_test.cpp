// gptbench-run's data-parallel runs (runner/ranks.h): which benchmarks run on every rank, each
// rank's environment, and, with the real gptbench on the CPU (Gloo, 2 processes), the
// rendezvous, the merge of rank 0's results, a rank that crashes and a rank that hangs.
#include "ranks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "cli.h"
#include "runjson/load.h"
#include "suite.h"

namespace gptbench::runner {
namespace {

namespace fs = std::filesystem;
using runjson::RunStatus;

TEST(Ranks, CommAndDataParallelStepRunOnEveryRank) {
  EXPECT_TRUE(runs_on_ranks("comm/all_reduce/bf16/bytes:1024/ranks:2"));
  EXPECT_TRUE(runs_on_ranks("model/train_step_dp/tiny/fp32/B:2/T:64/ranks:2/mode:ddp"));
  EXPECT_FALSE(runs_on_ranks("model/train_step/tiny/fp32/B:2/T:64/mode:eager"));
  EXPECT_FALSE(runs_on_ranks("gemm/torch/fp32/M:64"));
  EXPECT_FALSE(runs_on_ranks("communication/x"));
}

TEST(Ranks, EachRankGetsItsVariables) {
  const auto v = rank_variables(1, 4, 29511, 30);
  for (const char* want : {"RANK=1", "LOCAL_RANK=1", "WORLD_SIZE=4", "MASTER_ADDR=127.0.0.1",
                           "MASTER_PORT=29511", "GPTBENCH_COMM_TIMEOUT_S=30"})
    EXPECT_NE(std::find(v.begin(), v.end(), want), v.end()) << want;
  const auto no_timeout = rank_variables(0, 2, 1, 0);
  for (const auto& e : no_timeout) EXPECT_EQ(e.rfind("GPTBENCH_COMM_TIMEOUT_S", 0), std::string::npos);
}

TEST(Ranks, FreePortIsAUsablePort) {
  const int p = free_port();
  EXPECT_GT(p, 0);
  EXPECT_LT(p, 65536);
}

TEST(Ranks, MulticastStaysOff) {
  ::setenv("NCCL_NVLS_ENABLE", "1", 1);
  keep_multicast_off_env();
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  EXPECT_STREQ(std::getenv("TORCH_SYMM_MEM_DISABLE_MULTICAST"), "1");
  EXPECT_STREQ(std::getenv("NVSHMEM_DISABLE_NVLS"), "1");
}

TEST(Ranks, GpusAndRanksFlagsSetTheRankCount) {
  EXPECT_EQ(parse_cli({"gptbench-run", "-o", "x.json"}, "gptbench").config.ranks, 1);
  EXPECT_EQ(parse_cli({"gptbench-run", "--gpus", "3", "-o", "x.json"}, "gptbench").config.ranks, 3);
  EXPECT_EQ(parse_cli({"gptbench-run", "--ranks=2", "-o", "x.json"}, "gptbench").config.ranks, 2);
  EXPECT_FALSE(parse_cli({"gptbench-run", "--gpus", "0", "-o", "x.json"}, "gptbench").error.empty());
  EXPECT_FALSE(parse_cli({"gptbench-run", "--gpus", "two", "-o", "x.json"}, "gptbench").error.empty());
}

TEST(Ranks, FamiliesSplitIntoPlainAndRankedParts) {
  const std::vector<Family> fams = {
      {"model", {"model/train_step/a", "model/train_step_dp/b", "model/train_step/c"}},
      {"comm", {"comm/all_reduce/x"}},
      {"gemm", {"gemm/y"}}};
  const auto one = split_for_ranks(fams, 1);
  ASSERT_EQ(one.size(), 3u);
  for (const auto& f : one) EXPECT_FALSE(f.on_ranks || f.split);
  const auto two = split_for_ranks(fams, 2);
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(two[0].family.benchmarks, (std::vector<std::string>{"model/train_step/a", "model/train_step/c"}));
  EXPECT_FALSE(two[0].on_ranks);
  EXPECT_TRUE(two[0].split);
  EXPECT_EQ(two[1].family.benchmarks, (std::vector<std::string>{"model/train_step_dp/b"}));
  EXPECT_TRUE(two[1].on_ranks);
  EXPECT_TRUE(two[1].split);
  EXPECT_TRUE(two[2].on_ranks);
  EXPECT_FALSE(two[2].split);
  EXPECT_FALSE(two[3].on_ranks);
}

// With the real binary, where it has a CPU process group: Gloo's headers (libgloo-dev) are
// what gptbench's build needs for one (fixtures/dist.cpp), looked up the same way here.
#if defined(GPTBENCH_REAL_EXE) && __has_include(<gloo/algorithm.h>)
class RealRanks : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gptbench_ranks_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::unsetenv("GPTBENCH_FAULT_RANK");
  }
  void TearDown() override {
    ::unsetenv("GPTBENCH_FAULT_RANK");
    if (!HasFailure()) fs::remove_all(dir_);
  }
  RunConfig config(const std::string& filter, int ranks) const {
    RunConfig c;
    c.binary = GPTBENCH_REAL_EXE;
    c.pass_flags = {"--gptbench_device=cpu"};
    c.filter = filter;
    c.out = (dir_ / "merged.json").string();
    c.progress = ProgressMode::kNever;
    c.forward_output = false;
    c.ranks = ranks;
    return c;
  }
  runjson::Run load() const { return runjson::load_run_file((dir_ / "merged.json").string()); }
  fs::path dir_;
};

// The name gptbench gives a case with a fixed number of calls.
std::string listed(const std::string& name, int iterations) {
  return name + "/iterations:" + std::to_string(iterations) + "/manual_time";
}

const runjson::Benchmark& must_find(const runjson::Run& run, const std::string& name) {
  const runjson::Benchmark* b = run.find(name);
  if (b == nullptr) {
    std::string names;
    for (const auto& x : run.benchmarks) names += x.name + "\n";
    throw std::runtime_error(name + " missing; the run has:\n" + names);
  }
  return *b;
}

double counter(const runjson::Benchmark& b, const std::string& name) {
  const runjson::CounterSeries* c = b.counter(name);
  return c && !c->values.empty() ? c->values.front() : -1;
}

// Every collective meets on two ranks, passes its check (a wrong sum would skip it with
// "wrong result") and reports bandwidths from rank 0; the other families run once, unranked.
TEST_F(RealRanks, EveryCollectiveChecksAndReportsOnTwoRanks) {
  RunSummary s;
  ASSERT_EQ(run_suite(config("^comm/.*/bytes:4096/|^gemm/torch/fp32/square/M:64/", 2), &s), 0);
  const runjson::Run run = load();
  EXPECT_EQ(run.context.at("gptbench_ranks"), "2");
  for (const char* op : {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"}) {
    const auto& b = must_find(run, listed(std::string("comm/") + op + "/fp32/bytes:4096/ranks:2", 5));
    ASSERT_EQ(b.status, RunStatus::kOk) << b.name << ": " << b.message;
    EXPECT_GT(counter(b, "busbw_GBps"), 0) << b.name;
    EXPECT_GT(counter(b, "time_us"), 0) << b.name;
    EXPECT_EQ(counter(b, "ranks"), 2) << b.name;
  }
  // all-reduce's bus bandwidth is 2(R-1)/R = 1 × its algorithm bandwidth on two ranks
  const auto& ar = must_find(run, listed("comm/all_reduce/fp32/bytes:4096/ranks:2", 5));
  EXPECT_DOUBLE_EQ(counter(ar, "busbw_GBps"), counter(ar, "algbw_GBps"));
  bool gemm = false;
  for (const auto& b : run.benchmarks) gemm = gemm || b.name.rfind("gemm/", 0) == 0;
  EXPECT_TRUE(gemm);
}

// The data-parallel step on two ranks: every mode runs and the ranks' parameters agree (the
// case's check); zero1 holds half the optimizer state of the one-process step, fsdp less than
// the whole of the state and of the parameters (the blocks' halves; the embeddings stay whole).
TEST_F(RealRanks, DataParallelStepOnTwoRanks) {
  RunSummary s;
  ASSERT_EQ(run_suite(config("^model/train_step_dp/", 2), &s), 0);
  const runjson::Run run = load();
  ASSERT_EQ(run.benchmarks.size(), 3u);
  for (const auto& b : run.benchmarks) {
    ASSERT_EQ(b.status, RunStatus::kOk) << b.name << ": " << b.message;
    EXPECT_NE(b.name.find("/ranks:2/"), std::string::npos) << b.name;
    EXPECT_GT(counter(b, "scaling_efficiency"), 0) << b.name;
    EXPECT_GE(counter(b, "exposed_comm_ms"), 0) << b.name;
    // The group's step is its slowest rank's mean; the mean of each step's slowest is no less.
    EXPECT_DOUBLE_EQ(counter(b, "step_ms"), counter(b, "step_max_rank_ms")) << b.name;
    EXPECT_GT(counter(b, "step_min_rank_ms"), 0) << b.name;
    EXPECT_LE(counter(b, "step_min_rank_ms"), counter(b, "step_max_rank_ms")) << b.name;
    EXPECT_GE(counter(b, "slowest_rank_step_ms"), counter(b, "step_ms") * (1 - 1e-12)) << b.name;
    EXPECT_GE(counter(b, "between_steps_ms"), 0) << b.name;
    // The one-GPU reference is the mean of the two ranks' own: halfway between the two.
    const double lo = counter(b, "ref_step_min_rank_ms"), hi = counter(b, "ref_step_max_rank_ms");
    EXPECT_GT(lo, 0) << b.name;
    EXPECT_LE(lo, hi) << b.name;
    EXPECT_NEAR(counter(b, "ref_step_ms"), (lo + hi) / 2, 1e-9 * hi) << b.name;
    EXPECT_NEAR(counter(b, "scaling_efficiency"), counter(b, "ref_step_ms") / counter(b, "step_ms"),
                1e-9 * counter(b, "scaling_efficiency"))
        << b.name;
    if (b.name.find("mode:zero1") != std::string::npos) {
      EXPECT_NEAR(counter(b, "state_ratio"), 0.5, 0.05) << b.name;
    } else if (b.name.find("mode:fsdp") != std::string::npos) {
      EXPECT_NE(b.name.find("/ckpt:all/"), std::string::npos) << b.name;
      EXPECT_LT(counter(b, "state_ratio"), 0.95) << b.name;
      EXPECT_GT(counter(b, "state_ratio"), 0.45) << b.name;
      EXPECT_LT(counter(b, "param_ratio"), 0.95) << b.name;
    } else {
      EXPECT_NEAR(counter(b, "state_ratio"), 1.0, 1e-9) << b.name;
      EXPECT_NEAR(counter(b, "param_ratio"), 1.0, 1e-9) << b.name;
    }
  }
}

// The all-reduce of 4 KiB on two ranks with rank 1 made to fail as `fault` says
// (GPTBENCH_FAULT_RANK): the run's exit code is 1 and the benchmark is recorded as errored.
runjson::Benchmark faulted_all_reduce(RealRanks& t, const char* fault, double timeout_s) {
  ::setenv("GPTBENCH_FAULT_RANK", fault, 1);
  RunConfig c = t.config("^comm/all_reduce/fp32/bytes:4096/", 2);
  c.max_restarts = 1;
  c.benchmark_timeout_s = timeout_s;
  RunSummary s;
  EXPECT_EQ(run_suite(c, &s), 1);
  runjson::Benchmark b = must_find(t.load(), listed("comm/all_reduce/fp32/bytes:4096/ranks:2", 5));
  EXPECT_EQ(b.status, RunStatus::kErrored);
  return b;
}

// A rank other than 0 crashes: every rank is stopped and the benchmark is recorded as crashed
// by that rank.
TEST_F(RealRanks, ACrashedRankIsRecordedAgainstTheBenchmark) {
  const runjson::Benchmark b = faulted_all_reduce(*this, "1:abort", 0);
  EXPECT_NE(b.message.find("rank 1 of 2"), std::string::npos) << b.message;
  EXPECT_NE(b.message.find("SIGABRT"), std::string::npos) << b.message;
}

// A rank that never joins the collective: the wait ends by Gloo's timeout (rank 0 reports the
// benchmark as errored) or by the runner's (it kills the ranks), whichever comes first; both
// are set to 8 s here.
TEST_F(RealRanks, AHungCollectiveTimesOut) {
  const runjson::Benchmark b = faulted_all_reduce(*this, "1:hang", 8);
  std::string lower = b.message;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  EXPECT_NE(lower.find("timed out"), std::string::npos) << b.message;
}
#endif

}  // namespace
}  // namespace gptbench::runner
