// scripts/premerge.sh end to end, CPU only: the build cache of git revisions (a temporary
// repository whose ./gptbench.sh is tests/runner/data/fake_checkout_gptbench.sh), the choice
// between resident workers and process rounds, and option checks.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gptbench::runner {
namespace {

namespace fs = std::filesystem;

const std::string kRoot = GPTBENCH_SOURCE_ROOT;
const std::string kScript = kRoot + "/scripts/premerge.sh";
const std::string kCompare = GPTBENCH_COMPARE_EXE;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> result;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) result.push_back(line);
  return result;
}

// Single-quoted for sh.
std::string quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The exit code of sh -c COMMAND, 128 + signal when it was killed.
int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "gptbench-premerge-sh-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

struct ScriptRun {
  int code = -1;
  std::string out;
  std::string err;
};

// A temporary git repository of two commits whose ./gptbench.sh is the fake build, plus a
// cache, an output directory and the fake's build log, all outside the repository.
class PremergeScript : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = dir_.file("repo");
    const std::string git = "git -C " + quote(repo_) + " -c user.name=t -c user.email=t@example.com ";
    ASSERT_EQ(shell("git init -q " + quote(repo_) + " && cp " +
                    quote(kRoot + "/tests/runner/data/fake_checkout_gptbench.sh") + " " +
                    quote(repo_ + "/gptbench.sh") + " && cp " + quote(kRoot + "/tests/compare/data/fake_gptbench.sh") +
                    " " + quote(repo_ + "/fake_suite.sh") + " && " + git + "add -A && " + git +
                    "commit -qm one && echo two >" + quote(repo_ + "/NOTES") + " && " + git + "add -A && " + git +
                    "commit -qm two && " + git + "rev-parse HEAD~1 HEAD >" + quote(dir_.file("shas"))),
              0);
    const std::vector<std::string> shas = lines(read_file(dir_.file("shas")));
    ASSERT_EQ(shas.size(), 2u);
    sha1_ = shas[0];
    sha2_ = shas[1];
  }

  // premerge.sh ARGS run from inside the repository, with ENV before it; OWN_GROUP: in a process
  // group of its own (setsid), which the fake build may SIGTERM as a whole.
  ScriptRun premerge(const std::string& args, const std::string& env = "", bool own_group = false) {
    const std::string command = "cd " + quote(repo_) + " && FAKE_BUILD_LOG=" + quote(dir_.file("builds.log")) +
                                " " + env + (own_group ? " setsid -w" : "") + " bash " + quote(kScript) + " " +
                                args + " >" + quote(dir_.file("stdout")) + " 2>" + quote(dir_.file("stderr"));
    ScriptRun run;
    run.code = shell(command);
    run.out = read_file(dir_.file("stdout"));
    run.err = read_file(dir_.file("stderr"));
    return run;
  }

  // The process-rounds options that make a revision check quick with the fake suite.
  std::string quick(const std::string& base, const std::string& next) const {
    return quote(base) + " " + quote(next) + " --cache " + quote(cache()) + " --out " + quote(dir_.file("out")) +
           " --device cpu --rounds 2 --compare " + quote(kCompare);
  }

  std::string cache() const { return dir_.file("cache"); }
  std::vector<std::string> builds() const { return lines(read_file(dir_.file("builds.log"))); }
  bool stamped(const std::string& sha) const { return fs::exists(cache() + "/" + sha + "/.built"); }

  TempDir dir_;
  std::string repo_, sha1_, sha2_;
};

TEST_F(PremergeScript, BuildsEachCommitOnceAcrossChecks) {
  const ScriptRun first = premerge(quick("HEAD~1", "HEAD"));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.err.find("base " + sha1_.substr(0, 7) + ": building in " + cache() + "/" + sha1_ + "/src/build"),
            std::string::npos)
      << first.err;
  EXPECT_TRUE(stamped(sha1_));
  EXPECT_TRUE(stamped(sha2_));
  // The checkouts are worktrees of the repository at their commits.
  EXPECT_EQ(shell("test \"$(git -C " + quote(cache() + "/" + sha2_ + "/src") + " rev-parse HEAD)\" = " + sha2_), 0);

  // The same commits spelled differently.
  const ScriptRun again = premerge(quick(sha1_, sha2_));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("base " + sha1_.substr(0, 7) + ": cached build"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("new " + sha2_.substr(0, 7) + ": cached build"), std::string::npos) << again.err;

  // One build per commit in all, each with ccache's base at its checkout and the needed targets
  // (the fake checkout defines none, so everything).
  const std::vector<std::string> expected = {sha1_ + " BASEDIR_OK all", sha2_ + " BASEDIR_OK all"};
  EXPECT_EQ(builds(), expected);
}

TEST_F(PremergeScript, FailedOrInterruptedBuildLeavesNoStampAndIsBuiltAgain) {
  const ScriptRun failed = premerge(quick("HEAD", "HEAD"), "FAKE_BUILD_FAIL=1");
  EXPECT_EQ(failed.code, 2) << failed.err;
  EXPECT_NE(failed.err.find("build of base " + sha2_.substr(0, 7) + " failed"), std::string::npos) << failed.err;
  EXPECT_FALSE(stamped(sha2_));

  // SIGTERM to the whole check in the middle of the build.
  const ScriptRun interrupted = premerge(quick("HEAD", "HEAD"), "FAKE_BUILD_INTERRUPT=1", /*own_group=*/true);
  EXPECT_NE(interrupted.code, 0) << interrupted.err;
  EXPECT_FALSE(stamped(sha2_));

  const ScriptRun retried = premerge(quick("HEAD", "HEAD"));
  ASSERT_EQ(retried.code, 0) << retried.err;
  EXPECT_TRUE(stamped(sha2_));
  EXPECT_EQ(builds().size(), 3u);
  const ScriptRun cached = premerge(quick("HEAD", "HEAD"));
  ASSERT_EQ(cached.code, 0) << cached.err;
  EXPECT_EQ(builds().size(), 3u);
}

TEST_F(PremergeScript, SameCommitOnBothSidesIsBuiltOnce) {
  const ScriptRun run = premerge(quick("HEAD", sha2_));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("new " + sha2_.substr(0, 7) + ": same commit as base"), std::string::npos) << run.err;
  EXPECT_EQ(builds(), std::vector<std::string>{sha2_ + " BASEDIR_OK all"});
}

TEST_F(PremergeScript, UncommittedChangesAreNotPartOfHead) {
  write_file(repo_ + "/NOTES", "changed\n");
  const ScriptRun run = premerge(quick("HEAD~1", "HEAD"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("uncommitted changes"), std::string::npos) << run.err;
  // The checkout has the committed file.
  EXPECT_EQ(read_file(cache() + "/" + sha2_ + "/src/NOTES"), "two\n");
}

TEST_F(PremergeScript, BadFilterExitsTwoWithOneLineBeforeBuilding) {
  const ScriptRun run = premerge(quick("HEAD~1", "HEAD") + " --filter '^(gemm'");
  EXPECT_EQ(run.code, 2);
  ASSERT_EQ(lines(run.err).size(), 1u) << run.err;
  EXPECT_NE(run.err.find("--filter"), std::string::npos) << run.err;
  EXPECT_TRUE(builds().empty());
  // Google Benchmark's negative filters are valid.
  EXPECT_EQ(premerge(quick("HEAD~1", "HEAD") + " --filter '-^gemm/'").code, 0);
}

TEST_F(PremergeScript, UsageErrorsExitTwo) {
  EXPECT_EQ(premerge("--threshold").code, 2);
  EXPECT_EQ(premerge("--threshold=lots HEAD HEAD").code, 2);
  EXPECT_EQ(premerge("--alpha 2 HEAD HEAD").code, 2);
  EXPECT_EQ(premerge("--seed=x HEAD HEAD").code, 2);
  EXPECT_EQ(premerge("--no-such-option HEAD HEAD").code, 2);
  EXPECT_EQ(premerge("no-such-revision HEAD").code, 2);
  EXPECT_TRUE(builds().empty());
  const ScriptRun help = premerge("-h");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--new-arg ARG"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--cache DIR"), std::string::npos) << help.out;
}

// Binaries that know --gptbench_worker and a gptbench-premerge next to NEW: the script hands the
// sampling to the coordinator (here a stand-in that records its arguments and writes two runs)
// and gates its base.json and new.json.
TEST_F(PremergeScript, WorkersGoThroughTheCoordinator) {
  const std::string bin = dir_.file("bin");
  fs::create_directories(bin);
  write_file(bin + "/gptbench",
             "#!/bin/sh\ncase \"$*\" in *--gptbench_help*) echo '  --gptbench_worker=true  (stand-in)'; exit 0;; esac\n"
             "exit 3\n");
  write_file(bin + "/gptbench-premerge",
             "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" >" + quote(dir_.file("premerge.args")) +
                 "\nwhile [[ $# -gt 0 ]]; do [[ $1 == --out ]] && out=$2; shift; done\n"
                 "cp " + quote(kRoot + "/tests/compare/data/gb171_aa_base.json") + " \"$out/base.json\"\n"
                 "cp " + quote(kRoot + "/tests/compare/data/") + "gb171_${FAKE_NEW:-aa_new}.json \"$out/new.json\"\n");
  const std::string out = dir_.file("out");
  const std::string common = "--base-bin " + quote(bin + "/gptbench") + " --new-bin " + quote(bin + "/gptbench") +
                             " --out " + quote(out) + " --device cpu --compare " + quote(kCompare) + " --filter '^softmax/'";
  const ScriptRun pass = premerge(common + " --seed 7 --new-arg=--gptbench_slowdown=^gemm/:3 --base-arg --gptbench_models=small");
  EXPECT_EQ(pass.code, 0) << pass.err;
  const std::vector<std::string> expected = {
      "--base-bin", bin + "/gptbench", "--new-bin", bin + "/gptbench", "--filter=^softmax/", "--out", out,
      "--worker-arg=--gptbench_device=cpu", "--threshold=10%", "--alpha=0.05", "--base-arg=--gptbench_models=small",
      "--new-arg=--gptbench_slowdown=^gemm/:3", "--seed=7"};
  EXPECT_EQ(lines(read_file(dir_.file("premerge.args"))), expected);
  EXPECT_NE(read_file(out + "/report.md").find("PASS"), std::string::npos);
  EXPECT_NE(read_file(out + "/report.json").find("\"benchmarks\""), std::string::npos);
  EXPECT_NE(read_file(out + "/report.html").find("<svg"), std::string::npos);
  EXPECT_NE(pass.err.find("reports: " + out + "/report.md " + out + "/report.json " + out + "/report.html"),
            std::string::npos)
      << pass.err;
  EXPECT_NE(pass.err.find("check took"), std::string::npos) << pass.err;

  // A '*' rule in --config takes the place of the default (10% on the CPU).
  write_file(dir_.file("rules.ini"), "* = 10%\n");
  const ScriptRun slow =
      premerge(common + " --config " + quote(dir_.file("rules.ini")) + " --max-seconds 30", "FAKE_NEW=slow_new");
  EXPECT_EQ(slow.code, 1) << slow.err;
  EXPECT_NE(slow.out.find("FAIL"), std::string::npos) << slow.out;
  std::vector<std::string> args = lines(read_file(dir_.file("premerge.args")));
  EXPECT_NE(std::find(args.begin(), args.end(), "--config=" + dir_.file("rules.ini")), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--max-seconds=30"), args.end());
  EXPECT_EQ(std::find_if(args.begin(), args.end(), [](const std::string& arg) { return arg.rfind("--threshold", 0) == 0; }),
            args.end());

  // --threshold reaches the gate too: the +29% of slow_new is within 50%.
  const ScriptRun lenient = premerge(common + " --threshold 50%", "FAKE_NEW=slow_new");
  EXPECT_EQ(lenient.code, 0) << lenient.out;
  args = lines(read_file(dir_.file("premerge.args")));
  EXPECT_NE(std::find(args.begin(), args.end(), "--threshold=50%"), args.end());

  // A failing coordinator is an error, not a verdict.
  write_file(bin + "/gptbench-premerge", "#!/bin/sh\nexit 1\n");
  EXPECT_EQ(premerge(common).code, 2);
}

// The same binaries without --gptbench_worker keep the process rounds, coordinator or not.
TEST_F(PremergeScript, OlderBinariesKeepProcessRounds) {
  const ScriptRun run = premerge(quick("HEAD~1", "HEAD") + " --premerge /bin/true --new-arg=--gptbench_extra");
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.err.find("2 interleaved rounds on cpu"), std::string::npos) << run.err;
  EXPECT_TRUE(fs::exists(dir_.file("out/round-001-new.json")));
  EXPECT_TRUE(fs::exists(dir_.file("out/report.json")));
}

#if defined(GPTBENCH_PREMERGE_EXE) && defined(GPTBENCH_FAKE_WORKER_EXE)
// The real coordinator with fake workers: A/A passes, a planted 10% slowdown fails the gate.
TEST_F(PremergeScript, CoordinatorWithFakeWorkers) {
  const std::string common = "--base-bin " + quote(GPTBENCH_FAKE_WORKER_EXE) + " --new-bin " +
                             quote(GPTBENCH_FAKE_WORKER_EXE) + " --premerge " + quote(GPTBENCH_PREMERGE_EXE) +
                             " --device cpu --compare " + quote(kCompare) + " --filter ^fake/ --seed 1 --out " +
                             quote(dir_.file("out"));
  const ScriptRun same = premerge(common);
  EXPECT_EQ(same.code, 0) << same.out << same.err;
  EXPECT_TRUE(fs::exists(dir_.file("out/report.md")));
  EXPECT_NE(same.err.find("resident workers"), std::string::npos) << same.err;

  const ScriptRun slow = premerge(common + " --new-arg=--fake_slowdown=fast:10");
  EXPECT_EQ(slow.code, 1) << slow.out << slow.err;
}

// A case timed both ways, its host-launched row 10% slower: informational beside its graph row
// (reported, exit 0), a regression when the graph row is not in the check (exit 1).
TEST_F(PremergeScript, EagerRowsBesideTheirGraphRowsDoNotGate) {
  std::string both_forms;
  for (const char* side : {"--base-arg", "--new-arg"})
    for (const char* form : {"graph", "eager"})
      both_forms += std::string(" ") + side + "=--fake_extra=fake/op/launch:" + form;
  const std::string common = "--base-bin " + quote(GPTBENCH_FAKE_WORKER_EXE) + " --new-bin " +
                             quote(GPTBENCH_FAKE_WORKER_EXE) + " --premerge " + quote(GPTBENCH_PREMERGE_EXE) +
                             " --device cpu --compare " + quote(kCompare) + " --seed 1 --out " +
                             quote(dir_.file("out")) + both_forms + " --new-arg=--fake_slowdown=launch:eager:10";
  const ScriptRun beside = premerge(common + " --filter ^fake/op/");
  EXPECT_EQ(beside.code, 0) << beside.out << beside.err;
  const std::string report = read_file(dir_.file("out/report.md"));
  EXPECT_NE(report.find("| `fake/op/launch:eager` |"), std::string::npos) << report;
  EXPECT_NE(report.find("| regression (informational) |"), std::string::npos) << report;
  EXPECT_NE(report.find("| MDE |"), std::string::npos) << report;

  const ScriptRun alone = premerge(common + " --filter ^fake/op/launch:eager");
  EXPECT_EQ(alone.code, 1) << alone.out << alone.err;
  EXPECT_NE(alone.out.find("FAIL: 1 regression(s)"), std::string::npos) << alone.out;
}
#else
TEST_F(PremergeScript, CoordinatorWithFakeWorkers) {
  GTEST_SKIP() << "gptbench-premerge and fake_worker are not part of this build";
}

TEST_F(PremergeScript, EagerRowsBesideTheirGraphRowsDoNotGate) {
  GTEST_SKIP() << "gptbench-premerge and fake_worker are not part of this build";
}
#endif

}  // namespace
}  // namespace gptbench::runner
