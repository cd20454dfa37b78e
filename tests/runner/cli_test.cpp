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

TEST(RunnerCli, PeersRunTheConfiguredPeerRunnerOrTheGivenCommand) {
  EXPECT_TRUE(parse({"-o", "x.json"}).config.peer_command.empty());
  const CliResult r = parse({"-o", "x.json", "--peers=inductor"});
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.config.peer_command.size(), 2u);  // the Python, peers/gptbench-peers
  EXPECT_NE(r.config.peer_command[1].find("peers/gptbench-peers"), std::string::npos);
  const CliResult own = parse({"-o", "x.json", "--peers=inductor", "--peer-command=/bin/peer"});
  ASSERT_EQ(own.error, "");
  EXPECT_EQ(own.config.peer_command, std::vector<std::string>{"/bin/peer"});
  EXPECT_NE(parse({"-o", "x.json", "--peers=tvm"}).error.find("--peers"), std::string::npos);
  EXPECT_NE(parse({"-o", "x.json", "--peer-command=/bin/peer"}).error.find("needs --peers"),
            std::string::npos);
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

// Google Benchmark 1.7.1 would print "Could not compile benchmark re" and run nothing with
// exit 0; the runner refuses the filter before starting anything (main exits 2).
TEST(RunnerCli, InvalidFilterIsAnErrorNamingIt) {
  for (const char* bad : {"(", "-(", "gemm/\\d", "a{1", "*a"}) {
    const std::string flag = std::string("--benchmark_filter=") + bad;
    const CliResult r = parse({"-o", "a", flag.c_str()});
    EXPECT_NE(r.error.find("--benchmark_filter='" + std::string(bad) + "'"), std::string::npos) << r.error;
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
    EXPECT_NE(parse({flag.c_str(), "--benchmark_list_tests=true"}).error, "") << bad;
  }
  for (const char* good : {"", "all", "-gemm/", "^(gemm|softmax)/", "a**"}) {
    const std::string flag = std::string("--benchmark_filter=") + good;
    EXPECT_EQ(parse({"-o", "a", flag.c_str()}).error, "") << good;
  }
}

// Numeric options say which option, the value given and the range, in plain numbers (CLI11's
// own check printed "Value 0 not in range 0.000000 to 1797693134862315...").
TEST(RunnerCli, NumericOptionsNameTheOptionTheValueAndTheRange) {
  EXPECT_EQ(parse({"-o", "a", "--max-restarts", "0"}).error,
            "--max-restarts: got '0'; allowed: a whole number from 1 to 2147483647");
  EXPECT_EQ(parse({"-o", "a", "--max-restarts", "x"}).error,
            "--max-restarts: got 'x'; allowed: a whole number from 1 to 2147483647");
  EXPECT_EQ(parse({"-o", "a", "--benchmark-timeout", "-1"}).error,
            "--benchmark-timeout: got '-1'; allowed: a number of at least 0");
  EXPECT_EQ(parse({"-o", "a", "--benchmark-timeout", "inf"}).error,
            "--benchmark-timeout: got 'inf'; allowed: a number of at least 0");
  EXPECT_EQ(parse({"-o", "a", "--max-restarts", "010"}).config.max_restarts, 10) << "decimal, not octal";
  EXPECT_DOUBLE_EQ(parse({"-o", "a", "--benchmark-timeout", "2.5"}).config.benchmark_timeout_s, 2.5);
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
