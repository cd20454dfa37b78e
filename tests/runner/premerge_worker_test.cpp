// The resident-worker client (runner/worker_client.h) and the stdin pipe and CPU pinning of
// runner/child.h, against tools/fake_worker.
#include "worker_client.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>

#include <chrono>

#include "premerge_test_dir.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;
using testing::kFakeWorker;

class WorkerClientTest : public testing::ScratchDir {
 protected:
  WorkerSpec spec(std::vector<std::string> flags, double timeout_s = 10) const {
    WorkerSpec s;
    s.label = "new";
    s.argv = {kFakeWorker, "--gptbench_worker=true"};
    s.argv.insert(s.argv.end(), flags.begin(), flags.end());
    s.log_path = path("new-worker.log");
    s.timeout_s = timeout_s;
    return s;
  }
};

TEST_F(WorkerClientTest, StartsListsSamplesAndQuits) {
  WorkerClient client(spec({"--fake_seed=3"}));
  const WorkerReady ready = client.start();
  EXPECT_TRUE(client.running());
  EXPECT_EQ(ready.context.value("gpu_name", ""), "fake");
  EXPECT_EQ(ready.context.value("fake_seed", ""), "3");
  EXPECT_GE(ready.startup_s, 0);
  EXPECT_GE(ready.wall_s, 0);
  WorkerReply list = client.request(json{{"cmd", "list"}, {"filter", "fast|noisy"}});
  ASSERT_TRUE(list.answered());
  EXPECT_EQ(list.body["names"], (json{"fake/fast/a", "fake/noisy/b"}));
  WorkerReply sample = client.request(json{{"cmd", "sample"}, {"name", "fake/fast/a"}, {"count", 2}, {"min_time", 0.01}});
  ASSERT_TRUE(sample.answered());
  EXPECT_EQ(sample.body["samples"].size(), 2u);
  EXPECT_NEAR(sample.body["samples"][0].get<double>(), 100e-6, 5e-6);
  WorkerReply bad = client.request(json{{"cmd", "list"}, {"filter", "("}});
  ASSERT_TRUE(bad.answered());  // an error reply, and the worker goes on
  EXPECT_FALSE(bad.body.value("ok", true));
  EXPECT_TRUE(client.request(json{{"cmd", "prepare"}, {"name", "fake/mid/c"}}).answered());
  client.stop();
  EXPECT_FALSE(client.running());
  EXPECT_EQ(client.starts(), 1u);
  const std::string log = slurp(path("new-worker.log"));
  EXPECT_NE(log.find("start 1 of the new worker"), std::string::npos) << log;
  EXPECT_NE(log.find("fake_worker: starting (seed 3)"), std::string::npos) << log;
}

TEST_F(WorkerClientTest, ACrashIsReportedWithTheSignalAndLastStderrLineAndTheWorkerRestarts) {
  WorkerClient client(spec({"--fake_crash_on_sample=2"}));
  client.start();
  const json sample{{"cmd", "sample"}, {"name", "fake/fast/a"}, {"count", 1}, {"min_time", 0.001}};
  EXPECT_TRUE(client.request(sample).answered());
  const WorkerReply lost = client.request(sample);
  EXPECT_EQ(lost.status, ReplyStatus::kExited);
  EXPECT_FALSE(client.running());
  EXPECT_NE(lost.failure.find("SIGABRT"), std::string::npos) << lost.failure;
  EXPECT_NE(lost.failure.find("last stderr line: fake_worker: aborting on sample request 2"), std::string::npos)
      << lost.failure;
  client.start();  // a fresh process counts from 1 again
  EXPECT_TRUE(client.request(sample).answered());
  EXPECT_EQ(client.starts(), 2u);
}

TEST_F(WorkerClientTest, AHangTimesOutAndTheProcessGroupIsKilled) {
  WorkerClient client(spec({"--fake_hang_on_sample=1"}, 0.5));
  client.start();
  const auto t0 = std::chrono::steady_clock::now();
  const WorkerReply lost = client.request(json{{"cmd", "sample"}, {"name", "fake/mid/c"}, {"count", 1}, {"min_time", 0.001}});
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(lost.status, ReplyStatus::kTimedOut);
  EXPECT_NE(lost.failure.find("no reply within 0.5 s"), std::string::npos) << lost.failure;
  EXPECT_NE(lost.failure.find("hanging on sample request 1"), std::string::npos) << lost.failure;
  EXPECT_GE(waited, 0.45);
  EXPECT_LT(waited, 5);
  EXPECT_FALSE(client.running());
}

TEST_F(WorkerClientTest, StartFailuresSayWhy) {
  {
    WorkerClient client(spec({"--fake_fail_start"}));
    try {
      client.start();
      FAIL() << "started";
    } catch (const WorkerStartError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("ended with exit code 3 before its ready line"), std::string::npos) << what;
      EXPECT_NE(what.find("cannot initialise the fake device"), std::string::npos) << what;
    }
    EXPECT_FALSE(client.running());
  }
  {
    WorkerClient client(spec({"--fake_hang_start"}, 0.3));
    try {
      client.start();
      FAIL() << "started";
    } catch (const WorkerStartError& e) {
      EXPECT_NE(std::string(e.what()).find("no ready line within 0.3 s"), std::string::npos) << e.what();
    }
  }
  {
    WorkerSpec s = spec({});
    s.argv[0] = path("no-such-binary");
    WorkerClient client(s);
    try {
      client.start();
      FAIL() << "started";
    } catch (const WorkerStartError& e) {
      EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
    }
  }
}

TEST_F(WorkerClientTest, StrayStdoutLinesAreSkippedAndLogged) {
  WorkerClient client(spec({"--fake_stray_stdout"}));
  client.start();
  const WorkerReply list = client.request(json{{"cmd", "list"}, {"filter", ""}});
  ASSERT_TRUE(list.answered());
  EXPECT_EQ(list.body["names"].size(), 3u);
  client.stop();
  EXPECT_NE(slurp(path("new-worker.log")).find("ignored a stdout line that is not a JSON object: fake_worker: stray output"),
            std::string::npos);
}

TEST_F(WorkerClientTest, PinsTheWorkerToTheCpusGiven) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(::sched_getaffinity(0, sizeof mine, &mine), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &mine)) ++cpu;
  ASSERT_LT(cpu, CPU_SETSIZE);
  WorkerSpec s = spec({});
  s.cpus = {cpu};
  WorkerClient client(s);
  EXPECT_EQ(client.start().context.value("fake_cpus", ""), std::to_string(cpu));
}

TEST(ChildStdin, WritingToAnExitedChildIsFalseNotSigpipe) {
  ChildOptions options;
  options.stdin_pipe = true;
  Child child({"/bin/true"}, options);
  child.wait();
  // The pipe buffer may take a first small write; a large one meets the closed end.
  const std::string big(1 << 20, 'x');
  EXPECT_FALSE(child.write_stdin(big));
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

TEST(ChildStdin, ACatEchoesWhatIsWritten) {
  ChildOptions options;
  options.stdin_pipe = true;
  Child child({"cat"}, options);
  ASSERT_TRUE(child.write_stdin("hello\n"));
  child.close_stdin();
  std::string out;
  while (child.pump(5000, -1, [&](const std::string& s) { out += s; }, nullptr)) {
  }
  EXPECT_EQ(out, "hello\n");
  EXPECT_TRUE(child.wait().ok());
}

}  // namespace
}  // namespace gptbench::runner
