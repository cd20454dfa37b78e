// gptbench-history end to end: add, list, show, trend, baseline and check on synthetic
// histories, with the exit codes of gptbench-compare (0 fine, 1 regression, 2 bad input).
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "git.h"
#include "runjson/load.h"
#include "synthetic.h"

namespace gptbench::history {
namespace {

using testing::CliResult;
using testing::make_run;
using testing::run_history;
using testing::RunSpec;
using testing::TempDir;

std::string read(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A history of `runs` runs of 3 benchmarks, one a day; bench/0001 is 20% slower from
// run `step_at` on (commit c<step_at>). The JSON of run i is run<i>.json.
class HistoryCli : public ::testing::Test {
 protected:
  void add_runs(size_t runs, size_t step_at, const std::string& gpu = "NVIDIA H100 80GB HBM3", int first_day = 0) {
    for (size_t i = 0; i < runs; ++i) {
      RunSpec spec;
      spec.gpu = gpu;
      spec.seed = static_cast<unsigned>(first_day + i + 1);
      spec.date = testing::date_of(first_day + static_cast<int>(i));
      spec.medians = {1000, i >= step_at ? 1200.0 : 1000.0, 5000};
      const std::string path = testing::write_run(make_run(spec), dir_.file("run" + std::to_string(first_day + i) + ".json"));
      const CliResult added = history({"add", path, "--commit", "c" + std::to_string(first_day + i), "--branch", "main"});
      ASSERT_EQ(added.code, 0) << added.err;
    }
  }
  CliResult history(std::vector<std::string> args) {
    args.insert(args.begin(), {"--db", db_});
    return run_history(args);
  }

  TempDir dir_;
  std::string db_ = dir_.file("history.sqlite");
};

TEST_F(HistoryCli, AddListAndDeduplicate) {
  add_runs(3, 99);
  const CliResult list = history({"list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("c2"), std::string::npos);
  EXPECT_NE(list.out.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  const CliResult again = history({"add", dir_.file("run1.json")});
  EXPECT_EQ(again.code, 0);
  EXPECT_NE(again.out.find("already in"), std::string::npos) << again.out;
  const std::string listed = history({"list"}).out;
  EXPECT_EQ(std::count(listed.begin(), listed.end(), '\n'), 4);  // header + 3
}

TEST_F(HistoryCli, AddSeveralRunsOrNoneWhenOneIsBad) {
  RunSpec a, b;
  b.seed = 2;
  const std::string first = testing::write_run(make_run(a), dir_.file("a.json"));
  const std::string second = testing::write_run(make_run(b), dir_.file("b.json"));
  std::ofstream(dir_.file("bad.json")) << "{}";
  EXPECT_EQ(history({"add", first, dir_.file("bad.json"), second}).code, 2);
  EXPECT_EQ(history({"list"}).code, 2);  // nothing was added, not even the database
  const CliResult added = history({"add", first, second, "--commit", "c"});
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_NE(added.out.find("as run 2"), std::string::npos) << added.out;
  EXPECT_EQ(history({"add", first, second, "--source", "x.json"}).code, 2);
}

TEST_F(HistoryCli, AddTakesCommitAndBranchFromGit) {
  RunSpec spec;
  const std::string path = testing::write_run(make_run(spec), dir_.file("r.json"));
  ASSERT_EQ(history({"add", path}).code, 0);
  const std::string commit = git_output("rev-parse HEAD");
  EXPECT_NE(history({"list"}).out.find(commit.empty() ? "unknown" : commit.substr(0, 10)), std::string::npos);
}

TEST_F(HistoryCli, ShowReportsTheStepWithItsCommitRange) {
  add_runs(30, 17);
  const CliResult show = history({"show", "bench/000[01]"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("bench/0000"), std::string::npos);
  EXPECT_NE(show.out.find("step +20."), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("between c16..c17"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("step", show.out.find("bench/0000")), show.out.find("step +20."));  // only one step
}

TEST_F(HistoryCli, TrendPageHasAChartPerBenchmarkAndMarksTheStep) {
  add_runs(30, 17);
  const CliResult trend = history({"trend", "bench/", "--html", dir_.file("t.html")});
  ASSERT_EQ(trend.code, 0) << trend.err;
  const std::string html = read(dir_.file("t.html"));
  size_t charts = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++charts;
  EXPECT_EQ(charts, 3u);
  EXPECT_NE(html.find("c16..c17"), std::string::npos);
  EXPECT_NE(html.find("stroke='#d62728' stroke-dasharray"), std::string::npos);  // the step marker
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no external resource
}

TEST_F(HistoryCli, DevicesAreSeparateSeriesAndTheChangeIsMarked) {
  add_runs(10, 99, "NVIDIA H200");
  add_runs(10, 99, "NVIDIA H100 80GB HBM3", 10);
  const CliResult show = history({"show", "bench/0002"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("  NVIDIA H200 ·"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("  NVIDIA H100 80GB HBM3 ·"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("step"), std::string::npos) << show.out;
  ASSERT_EQ(history({"trend", "bench/0002", "--html", dir_.file("t.html")}).code, 0);
  EXPECT_NE(read(dir_.file("t.html")).find(">now H100 80GB HBM3<"), std::string::npos);  // what changed
}

TEST_F(HistoryCli, BaselineIsReadByCompare) {
  add_runs(6, 99);
  const CliResult baseline = history({"baseline", "--device", "h100", "--last", "4", "-o", dir_.file("base.json")});
  ASSERT_EQ(baseline.code, 0) << baseline.err;
  const runjson::Run base = runjson::load_run_file(dir_.file("base.json"));
  ASSERT_EQ(base.benchmarks.size(), 3u);
  EXPECT_EQ(base.benchmarks[0].repetitions.size(), 20u);  // 4 runs x 5 repetitions
  EXPECT_EQ(base.benchmarks[0].repetitions.back().process, 3);
  EXPECT_EQ(base.benchmarks[0].counters[0].values.size(), 20u);
  const std::string command = std::string(GPTBENCH_COMPARE_EXE) + " benchmarks " + dir_.file("base.json") + " " +
                              dir_.file("run5.json") + " > /dev/null";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(history({"baseline", "--device", "A100", "-o", dir_.file("x.json")}).code, 2);
}

TEST_F(HistoryCli, CheckFindsARegressionAgainstTheHistory) {
  add_runs(6, 99);
  RunSpec same, slower;
  same.seed = slower.seed = 100;
  same.date = slower.date = testing::date_of(40);
  slower.medians = {1000, 1000, 6000};
  const std::string same_path = testing::write_run(make_run(same), dir_.file("same.json"));
  const std::string slower_path = testing::write_run(make_run(slower), dir_.file("slower.json"));
  const CliResult fine = history({"check", same_path});
  EXPECT_EQ(fine.code, 0) << fine.out << fine.err;
  const CliResult regressed = history({"check", slower_path});
  EXPECT_EQ(regressed.code, 1) << regressed.out;
  EXPECT_NE(regressed.out.find("bench/0002"), std::string::npos);
  // A run already in the history is not compared with itself: the last 5 others are used.
  EXPECT_EQ(history({"check", dir_.file("run5.json")}).code, 0);
  RunSpec new_libtorch = same;
  new_libtorch.libtorch = "2.12.0";
  const CliResult other_environment = history({"check", testing::write_run(make_run(new_libtorch), dir_.file("lt.json"))});
  EXPECT_EQ(other_environment.code, 0) << other_environment.out << other_environment.err;
  EXPECT_NE(other_environment.err.find("no earlier run in this run's environment"), std::string::npos)
      << other_environment.err;
  EXPECT_NE(other_environment.out.find("libtorch"), std::string::npos) << other_environment.out;  // compare's context diff
  RunSpec other_gpu;
  other_gpu.gpu = "NVIDIA A100";
  const std::string a100 = testing::write_run(make_run(other_gpu), dir_.file("a100.json"));
  const CliResult no_history = history({"check", a100});
  EXPECT_EQ(no_history.code, 2);
  EXPECT_NE(no_history.err.find("no earlier run on NVIDIA A100"), std::string::npos) << no_history.err;
}

TEST_F(HistoryCli, BadInputIsOneLineAndExit2) {
  add_runs(1, 99);
  std::ofstream(dir_.file("junk.sqlite")) << "not a database" << std::string(2000, '\n');
  std::ofstream(dir_.file("bad.json")) << "{\"benchmarks\": [";
  sqlite3* foreign = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.file("foreign.sqlite").c_str(), &foreign), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(foreign, "CREATE TABLE notes(text TEXT)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(foreign);
  const std::vector<std::vector<std::string>> cases = {
      {"--db", dir_.file("junk.sqlite"), "list"},
      {"--db", dir_.file("foreign.sqlite"), "add", dir_.file("run0.json")},
      {"--db", dir_.file("missing.sqlite"), "list"},
      {"--db", db_, "show", "("},
      {"--db", db_, "show", "nothing-matches"},
      {"--db", db_, "add", dir_.file("bad.json")},
      {"--db", db_, "add", dir_.file("absent.json")},
      {"--db", db_, "frobnicate"},
      {"--db", db_, "trend", "bench", "--html", dir_.file("no/such/dir/t.html")},
      {"--db", dir_.file("no/such/dir/h.sqlite"), "add", dir_.file("run0.json")},
  };
  for (const auto& args : cases) {
    const CliResult result = run_history(args);
    EXPECT_EQ(result.code, 2) << args.back() << ": " << result.out << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind("gptbench-history: error: ", 0), 0u) << result.err;
  }
  EXPECT_EQ(read(dir_.file("junk.sqlite")).substr(0, 14), "not a database");  // left as it was
}

TEST(HistoryExe, CorruptDatabaseExits2) {
  TempDir dir;
  RunSpec spec;
  spec.benchmarks = 300;
  const std::string db = dir.file("h.sqlite");
  ASSERT_EQ(run_history({"--db", db, "add", testing::write_run(make_run(spec), dir.file("r.json"))}).code, 0);
  {
    // Garbage over every page after the first: the header still says SQLite.
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);
    const std::string garbage(64 * 1024, '\x5a');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const std::string command = std::string(GPTBENCH_HISTORY_EXE) + " --db " + db + " show bench 2> " +
                              dir.file("err.txt") + " > /dev/null";
  const int status = std::system(command.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string err = read(dir.file("err.txt"));
  EXPECT_EQ(err.rfind("gptbench-history: error: ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace gptbench::history
