#include "cli.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "child.h"

namespace gptbench::runner {
namespace {

CliResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gptbench-run");
  return parse_cli(args, "/bin/gptbench");
}

TEST(RunnerCli, PassesSuiteFlagsAndTakesFilterAndOut) {
  const CliResult r = parse({"--gptbench_device=cpu", "--benchmark_filter=gemm/", "-o", "x.json",
                             "--benchmark_min_time=0.01", "--max-restarts", "2",
                             "--benchmark-timeout", "60", "--progress=never"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.config.binary, "/bin/gptbench");
  EXPECT_EQ(r.config.out, "x.json");
  EXPECT_EQ(r.config.filter, "gemm/");
  EXPECT_EQ(r.config.pass_flags,
            (std::vector<std::string>{"--gptbench_device=cpu", "--benchmark_min_time=0.01"}));
  EXPECT_EQ(r.config.max_restarts, 2);
  EXPECT_EQ(r.config.benchmark_timeout_s, 60);
  EXPECT_EQ(r.config.progress, ProgressMode::kNever);
}

TEST(RunnerCli, BenchmarkOutIsTheMergedFile) {
  const CliResult r = parse({"--benchmark_out=y.json", "--benchmark_out_format=json"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.config.out, "y.json");
  EXPECT_TRUE(r.config.pass_flags.empty());
}

TEST(RunnerCli, Errors) {
  EXPECT_NE(parse({}).error.find("no output file"), std::string::npos);
  EXPECT_NE(parse({"-o", "a", "--benchmark_out=b"}).error, "");
  EXPECT_NE(parse({"-o", "a", "--benchmark_out_format=csv"}).error.find("JSON only"), std::string::npos);
  EXPECT_NE(parse({"-o", "a", "--benchmark_enable_random_interleaving=true"}).error, "");
  EXPECT_NE(parse({"-o", "a", "stray"}).error, "");
  EXPECT_NE(parse({"-o", "a", "--progress=sometimes"}).error, "");
  EXPECT_NE(parse({"-o", "a", "--max-restarts", "0"}).error, "");
  EXPECT_FALSE(parse({"--help"}).help.empty());
  EXPECT_TRUE(parse({"--benchmark_list_tests=true"}).list_only);
}

TEST(RunnerChild, DescribesHowAProcessEnded) {
  ExitStatus s;
  s.code = 3;
  EXPECT_EQ(describe(s), "exit code 3");
  s.signaled = true;
  s.signal = SIGABRT;
  EXPECT_EQ(describe(s).rfind("SIGABRT (", 0), 0u) << describe(s);
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(77), "signal 77");
}

TEST(RunnerChild, CapturesOutputAndStatus) {
  const Captured c = run_captured({"sh", "-c", "echo out; echo err >&2; exit 4"});
  EXPECT_EQ(c.out, "out\n");
  EXPECT_EQ(c.err, "err\n");
  EXPECT_EQ(c.status.code, 4);
  const Captured k = run_captured({"sh", "-c", "kill -SEGV $$"});
  EXPECT_TRUE(k.status.signaled);
  EXPECT_EQ(k.status.signal, SIGSEGV);
  EXPECT_THROW(run_captured({"/no/such/binary"}), std::runtime_error);
}

}  // namespace
}  // namespace gptbench::runner
