// gptbench-premerge end to end against tools/fake_worker: A/A, a planted slowdown, a crash,
// a hang, a crash twice, skipped and one-sided benchmarks, a worker that cannot start, epochs
// with fresh workers (--processes) and a process-level offset; the written files are read by
// gptbench-compare (its loader, and the binary for the verdicts). The checks run in the
// default 3 epochs unless a test says otherwise.
#include "premerge_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "child.h"
#include "runjson/load.h"
#include "premerge_output.h"
#include "premerge_test_dir.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;
using testing::kCompare;
using testing::kFakeWorker;
using testing::kPremerge;

struct CompareResult {
  int exit_code = -1;
  std::map<std::string, std::string> verdicts;  // benchmark -> verdict
  json report;
};

class PremergeRun : public testing::ScratchDir {
 protected:
  PremergeConfig config(std::vector<std::string> base_args, std::vector<std::string> new_args) const {
    PremergeConfig c;
    c.base_bin = c.new_bin = kFakeWorker;
    c.out_dir = path("out");
    c.base_args = {"--fake_seed=1"};
    c.new_args = {"--fake_seed=2"};
    c.base_args.insert(c.base_args.end(), base_args.begin(), base_args.end());
    c.new_args.insert(c.new_args.end(), new_args.begin(), new_args.end());
    c.worker_args = {"--gptbench_device=cpu"};
    c.seed = 11;
    c.timeout_s = 10;
    c.max_seconds = 60;
    return c;
  }

  // Runs the check; fails the test unless it exits `expected`.
  PremergeRecord run(const PremergeConfig& c, int expected = 0) const {
    PremergeRecord record;
    EXPECT_EQ(run_premerge(c, &record), expected);
    return record;
  }

  std::string out(const std::string& name) const { return path("out/" + name); }

  // gptbench-compare benchmarks over the written files.
  CompareResult compare_files(const std::string& threshold = "5%") const {
    const Captured c = run_captured({kCompare, "benchmarks", out("base.json"), out("new.json"), "--format=json",
                                     "--threshold=" + threshold});
    CompareResult r;
    r.exit_code = c.status.signaled ? -1 : c.status.code;
    r.report = json::parse(c.out, nullptr, false);
    EXPECT_TRUE(r.report.is_object()) << c.out << c.err;
    if (r.report.is_object())
      for (const json& b : r.report["benchmarks"]) r.verdicts[b["name"]] = b["verdict"];
    return r;
  }

  static const BenchmarkRecord& find(const PremergeRecord& r, const std::string& name) {
    for (const BenchmarkRecord& b : r.benchmarks)
      if (b.name == name) return b;
    throw std::runtime_error("no record of " + name);
  }

  static size_t total_lost(const PremergeRecord& r, Side side) {
    size_t lost = 0;
    for (const BenchmarkRecord& b : r.benchmarks) lost += b.side(side).lost;
    return lost;
  }
};

TEST_F(PremergeRun, AaCheckFindsNoRegression) {
  const PremergeRecord r = run(config({}, {}));
  ASSERT_EQ(r.benchmarks.size(), 3u);
  EXPECT_EQ(r.benchmarks[0].name, "fake/fast/a");  // the workers' order
  EXPECT_EQ(r.compared, 3u);
  EXPECT_EQ(find(r, "fake/fast/a").stop, StopReason::kDecidedSame);
  // Clearly the same from the start: min_samples in each of the 3 epochs.
  EXPECT_EQ(find(r, "fake/fast/a").side(Side::kBase).real_ns.size(), 15u);
  for (size_t epoch = 0; epoch < 3; ++epoch) EXPECT_EQ(find(r, "fake/fast/a").side(Side::kBase).samples_in(epoch), 5u);
  EXPECT_EQ(find(r, "fake/noisy/b").stop, StopReason::kMaxSamples);
  EXPECT_EQ(find(r, "fake/noisy/b").side(Side::kNew).real_ns.size(), 30u);  // 10 per epoch
  for (const BenchmarkRecord& b : r.benchmarks) {
    EXPECT_NEAR(b.alpha, 0.05 / 3, 1e-12);
    EXPECT_EQ(b.side(Side::kBase).prepare_s.size(), 3u);  // once per epoch
    EXPECT_EQ(b.side(Side::kNew).prepare_s.size(), 3u);
  }
  const CompareResult c = compare_files();
  EXPECT_EQ(c.exit_code, 0) << c.report.dump(1);
  EXPECT_EQ(c.verdicts.size(), 3u);
  for (const auto& [name, verdict] : c.verdicts) EXPECT_NE(verdict, "regression") << name;
  EXPECT_EQ(c.verdicts.at("fake/fast/a"), "same");
}

TEST_F(PremergeRun, PlantedSlowdownIsTheOnlyRegression) {
  const PremergeRecord r = run(config({}, {"--fake_slowdown=^fake/fast/:10"}));
  const BenchmarkRecord& fast = find(r, "fake/fast/a");
  EXPECT_EQ(fast.stop, StopReason::kDecidedChange);
  ASSERT_TRUE(fast.comparison.has_value());
  EXPECT_NEAR(fast.comparison->ratio, 1.10, 0.01);
  const CompareResult c = compare_files();
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_EQ(c.verdicts.at("fake/fast/a"), "regression");
  for (const auto& [name, verdict] : c.verdicts)
    if (name != "fake/fast/a") EXPECT_NE(verdict, "regression") << name;
}

TEST_F(PremergeRun, CrashRestartsTheWorkerLosesOneSampleAndCompletes) {
  const PremergeRecord r = run(config({}, {"--fake_crash_on_sample=3", "--fake_fault_once=" + path("crashed")}));
  EXPECT_EQ(total_lost(r, Side::kNew), 1u);
  EXPECT_EQ(total_lost(r, Side::kBase), 0u);
  EXPECT_EQ(r.worker(Side::kNew).starts, 4u);  // one per epoch, and the restart
  EXPECT_EQ(r.worker(Side::kBase).starts, 3u);
  const BenchmarkRecord& fast = find(r, "fake/fast/a");  // the third sample request is its
  EXPECT_EQ(fast.side(Side::kNew).lost, 1u);
  EXPECT_EQ(fast.side(Side::kNew).worker_losses, 1u);
  EXPECT_EQ(fast.side(Side::kNew).prepare_s.size(), 4u);  // prepared again after the restart, and per epoch
  EXPECT_EQ(fast.side(Side::kNew).samples_in(0), 5u);     // the lost sample is taken again
  for (const BenchmarkRecord& b : r.benchmarks)
    for (Side side : kSides) EXPECT_EQ(b.side(side).error, "") << b.name;
  EXPECT_EQ(fast.stop, StopReason::kDecidedSame);
  const runjson::Run contender = runjson::load_run_file(out("new.json"));
  EXPECT_EQ(contender.benchmarks.size(), 3u);
  const std::string log = slurp(out("new-worker.log"));
  EXPECT_NE(log.find("fake_worker: aborting on sample request 3"), std::string::npos) << log;
  EXPECT_NE(log.find("start 2 of the new worker"), std::string::npos) << log;
  EXPECT_EQ(compare_files().exit_code, 0);
  const json premerge = json::parse(slurp(out("premerge.json")));
  EXPECT_EQ(premerge["totals"]["lost"]["new"], 1);
  EXPECT_EQ(premerge["workers"]["new"]["restarts"], 1);
  EXPECT_EQ(premerge["benchmarks"][0]["lost"]["new"], 1);
}

TEST_F(PremergeRun, HangTimesOutAndTheWorkerIsRestarted) {
  PremergeConfig c = config({"--fake_hang_on_sample=2", "--fake_fault_once=" + path("hung")}, {});
  c.timeout_s = 1;
  c.filter = "^fake/mid/";
  const PremergeRecord r = run(c);
  ASSERT_EQ(r.benchmarks.size(), 1u);
  const BenchmarkRecord& mid = r.benchmarks[0];
  EXPECT_EQ(mid.side(Side::kBase).lost, 1u);
  EXPECT_EQ(mid.side(Side::kBase).error, "");
  EXPECT_EQ(r.worker(Side::kBase).starts, 4u);  // one per epoch, and the restart
  EXPECT_GE(mid.wall_s, 1.0);
  EXPECT_NE(mid.stop, StopReason::kLost);
  EXPECT_NE(slurp(out("base-worker.log")).find("no reply within 1 s (killed)"), std::string::npos);
}

TEST_F(PremergeRun, CrashingTwiceInOneBenchmarkIsAnErroredRow) {
  const PremergeRecord r = run(config({}, {"--fake_crash_on_sample=1", "--fake_fault_filter=^fake/fast/"}));
  const BenchmarkRecord& fast = find(r, "fake/fast/a");
  EXPECT_EQ(fast.stop, StopReason::kLost);
  EXPECT_EQ(fast.side(Side::kNew).worker_losses, 2u);
  EXPECT_EQ(fast.side(Side::kNew).lost, 2u);
  EXPECT_EQ(fast.side(Side::kNew).error.rfind("worker crashed twice: SIGABRT", 0), 0u) << fast.side(Side::kNew).error;
  EXPECT_NE(fast.side(Side::kNew).error.find("last stderr line: fake_worker: aborting"), std::string::npos);
  EXPECT_EQ(fast.side(Side::kBase).real_ns.size(), 5u);  // base still gives its minimum
  EXPECT_FALSE(fast.comparison.has_value());
  // The check moves on with a fresh worker; later epochs do not sample the errored benchmark.
  EXPECT_EQ(find(r, "fake/mid/c").stop, StopReason::kDecidedSame);
  EXPECT_EQ(r.worker(Side::kNew).starts, 5u);  // two restarts in the first epoch, then one per epoch
  EXPECT_EQ(fast.side(Side::kNew).prepare_s.size(), 2u);
  const runjson::Run contender = runjson::load_run_file(out("new.json"));
  ASSERT_NE(contender.find("fake/fast/a"), nullptr);
  EXPECT_EQ(contender.find("fake/fast/a")->status, runjson::RunStatus::kErrored);
  const CompareResult c = compare_files();
  EXPECT_EQ(c.exit_code, 1);  // broken in NEW fails the gate
  EXPECT_EQ(c.verdicts.at("fake/fast/a"), "broken");
}

TEST_F(PremergeRun, AWorkerThatCannotBeRestartedErrorsItsSideAndIsGivenUpOnAfterTwoTries) {
  const std::string marker = path("crashed");
  const PremergeRecord r = run(config({}, {"--fake_crash_on_sample=2", "--fake_fault_once=" + marker,
                                           "--fake_fail_start_if=" + marker}));
  ASSERT_EQ(r.benchmarks.size(), 3u);
  const std::string& first = r.benchmarks[0].side(Side::kNew).error;
  EXPECT_EQ(first.rfind("worker could not be restarted: ended with exit code 3 before its ready line", 0), 0u) << first;
  EXPECT_NE(r.benchmarks[1].side(Side::kNew).error.find("given up after 2 failed restarts"), std::string::npos)
      << r.benchmarks[1].side(Side::kNew).error;
  EXPECT_EQ(r.benchmarks[2].side(Side::kNew).error, r.benchmarks[1].side(Side::kNew).error);
  EXPECT_EQ(r.worker(Side::kNew).starts, 3u);  // the first, and two failed restarts
  EXPECT_EQ(r.worker(Side::kNew).start_failures.size(), 2u);
  for (const BenchmarkRecord& b : r.benchmarks) {
    EXPECT_EQ(b.stop, StopReason::kLost) << b.name;
    EXPECT_EQ(b.side(Side::kBase).real_ns.size(), 5u) << b.name;
  }
  const CompareResult c = compare_files();
  EXPECT_EQ(c.exit_code, 1);
  for (const auto& [name, verdict] : c.verdicts) EXPECT_EQ(verdict, "broken") << name;
}

TEST_F(PremergeRun, SkippedBenchmarkIsAnErroredRowWithItsReason) {
  const PremergeRecord r = run(config({"--fake_skip=^fake/noisy/"}, {"--fake_skip=^fake/noisy/"}));
  const BenchmarkRecord& noisy = find(r, "fake/noisy/b");
  EXPECT_EQ(noisy.stop, StopReason::kSkipped);
  for (Side side : kSides) {
    EXPECT_TRUE(noisy.side(side).skipped);
    EXPECT_EQ(noisy.side(side).error, "fake: skipped by --fake_skip");
  }
  const json rows = json::parse(slurp(out("new.json")))["benchmarks"];
  const json& last = rows.back();
  EXPECT_EQ(last["name"], "fake/noisy/b");
  EXPECT_EQ(last["error_occurred"], true);
  EXPECT_EQ(last["error_message"], "fake: skipped by --fake_skip");
  const CompareResult c = compare_files();
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_EQ(c.verdicts.at("fake/noisy/b"), "not_compared");
}

TEST_F(PremergeRun, NamesOfOneSideAreAddedOrRemovedAndInOneFileOnly) {
  PremergeConfig c = config({"--fake_extra=fake/old/x"}, {"--fake_extra=fake/new/y"});
  c.filter = "fast|old|new/";
  const PremergeRecord r = run(c);
  ASSERT_EQ(r.benchmarks.size(), 3u);
  EXPECT_EQ(r.benchmarks[1].name, "fake/old/x");
  EXPECT_EQ(r.benchmarks[2].name, "fake/new/y");  // new-only names come last
  EXPECT_EQ(r.removed, (std::vector<std::string>{"fake/old/x"}));
  EXPECT_EQ(r.added, (std::vector<std::string>{"fake/new/y"}));
  EXPECT_EQ(r.compared, 1u);
  EXPECT_EQ(find(r, "fake/old/x").stop, StopReason::kOneSide);
  EXPECT_EQ(find(r, "fake/old/x").side(Side::kBase).real_ns.size(), 5u);
  const runjson::Run base = runjson::load_run_file(out("base.json"));
  const runjson::Run contender = runjson::load_run_file(out("new.json"));
  EXPECT_NE(base.find("fake/old/x"), nullptr);
  EXPECT_EQ(base.find("fake/new/y"), nullptr);
  EXPECT_NE(contender.find("fake/new/y"), nullptr);
  EXPECT_EQ(contender.find("fake/old/x"), nullptr);
  const CompareResult cmp = compare_files();
  EXPECT_EQ(cmp.report["added"], (json{"fake/new/y"}));
  EXPECT_EQ(cmp.report["removed"], (json{"fake/old/x"}));
}

TEST_F(PremergeRun, TimeLimitStopsABenchmarkUndecided) {
  PremergeConfig c = config({"--fake_delay_ms=20"}, {"--fake_delay_ms=20"});
  c.filter = "noisy";
  c.max_seconds = 0.3;
  const PremergeRecord r = run(c);
  ASSERT_EQ(r.benchmarks.size(), 1u);
  EXPECT_EQ(r.benchmarks[0].stop, StopReason::kMaxTime);
  EXPECT_LT(r.benchmarks[0].side(Side::kBase).real_ns.size(), 30u);
  EXPECT_EQ(runjson::load_run_file(out("base.json")).benchmarks.size(), 1u);
}

TEST_F(PremergeRun, BothWorkersArePinnedToTheCpusGiven) {
  PremergeConfig c = config({}, {});
  c.filter = "mid";
  c.cpus = {0};
  run(c);
  for (const char* file : {"base.json", "new.json"}) {
    const runjson::Run loaded = runjson::load_run_file(out(file));
    EXPECT_EQ(loaded.context.at("fake_cpus"), "0") << file;
    EXPECT_EQ(loaded.context.at("premerge_cpus"), "0") << file;
  }
}

TEST_F(PremergeRun, ListingProblemsExitTwo) {
  PremergeConfig c = config({}, {});
  c.filter = "(";
  run(c, 2);
  c.filter = "^nothing/";
  run(c, 2);
}

// --- Epochs (--processes) -----------------------------------------------------------------------

TEST_F(PremergeRun, EachEpochStartsFreshWorkersAndItsSamplesCarryItsProcessIndex) {
  PremergeConfig c = config({}, {});
  c.processes = 3;
  const PremergeRecord r = run(c);
  for (Side side : kSides) {
    const WorkerRecord& w = r.worker(side);
    EXPECT_EQ(w.starts, 3u) << side_name(side);  // one per epoch, no restart
    EXPECT_EQ(w.epoch_starts, 3u);
    ASSERT_EQ(w.epoch_startup_s.size(), 3u);
    for (double t : w.epoch_start_wall_s) EXPECT_TRUE(std::isfinite(t) && t >= 0);
  }
  const json premerge = json::parse(slurp(out("premerge.json")));
  EXPECT_EQ(premerge["settings"]["processes"], 3);
  EXPECT_EQ(premerge["settings"]["samples_per_process"], 10);
  for (const char* side : {"base", "new"}) {
    EXPECT_EQ(premerge["workers"][side]["starts"], 3);
    EXPECT_EQ(premerge["workers"][side]["restarts"], 0);
    EXPECT_EQ(premerge["workers"][side]["epoch_startup_s"].size(), 3u);
    EXPECT_EQ(premerge["workers"][side]["epoch_start_wall_s"].size(), 3u);
  }
  const json& fast = premerge["benchmarks"][0];
  ASSERT_EQ(fast["name"], "fake/fast/a");
  EXPECT_EQ(fast["samples_per_process"]["base"], (json{5, 5, 5}));
  EXPECT_EQ(fast["samples_per_process"]["new"], (json{5, 5, 5}));
  EXPECT_EQ(fast["prepare_s"]["base"].size(), 3u);
  EXPECT_TRUE(fast["process_spread"]["base"].is_number());
  EXPECT_EQ(premerge["benchmarks"][2]["samples_per_process"]["base"], (json{10, 10, 10}));  // noisy: undecided
  // The log of each side holds the three starts.
  EXPECT_NE(slurp(out("new-worker.log")).find("start 3 of the new worker"), std::string::npos);

  // Every row names its process; repetition_index runs over all of a side's rows.
  const json rows = json::parse(slurp(out("base.json")))["benchmarks"];
  std::map<std::string, std::vector<int64_t>> processes, repetitions;
  for (const json& row : rows) {
    ASSERT_TRUE(row["process_index"].is_number_integer()) << row.dump();
    processes[row["name"]].push_back(row["process_index"]);
    repetitions[row["name"]].push_back(row["repetition_index"]);
  }
  EXPECT_EQ(processes["fake/fast/a"], (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2}));
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(repetitions["fake/fast/a"][static_cast<size_t>(i)], i);
  EXPECT_EQ(json::parse(slurp(out("base.json")))["context"]["premerge_processes"], "3");
  // gptbench-compare sees the three processes.
  const runjson::Run loaded = runjson::load_run_file(out("new.json"));
  EXPECT_EQ(loaded.find("fake/noisy/b")->processes().back(), 2);
  const CompareResult cmp = compare_files("2%");
  for (const json& b : cmp.report["benchmarks"]) EXPECT_EQ(b["time"]["base"]["processes"], 3) << b["name"];
}

TEST_F(PremergeRun, AaWithAProcessLevelOffsetIsNeverARegression) {
  // Each worker process of fake/fast/a (0.2% noise) is up to 10% slower or faster than another
  // of the same binary, as host-bound benchmarks are. Three processes per side show it: the
  // benchmark is unreliable (or, when the draws happen to agree, same), never a change.
  // The offsets are random (pid and time). A check still calls a change when all three draws
  // of each side fall within the threshold of each other and the two sides apart: at 2% that
  // is about 6e-4 of the checks (measured: 1 in 3000), at the 0.5% used here, which fake/fast/a's
  // noise allows, about 3e-6.
  const compare::Thresholds threshold(0.005);
  size_t unreliable = 0;
  for (int trial = 0; trial < 5; ++trial) {
    PremergeConfig c = config({}, {});
    c.worker_args.push_back("--fake_process_offset=^fake/fast/:10");
    c.thresholds = threshold;
    c.seed = 100 + trial;
    const PremergeRecord r = run(c);
    const BenchmarkRecord& fast = find(r, "fake/fast/a");
    EXPECT_NE(fast.stop, StopReason::kDecidedChange) << trial;
    const CompareResult cmp = compare_files("0.5%");
    const std::string& verdict = cmp.verdicts.at("fake/fast/a");
    EXPECT_TRUE(verdict == "unreliable" || verdict == "same") << trial << ": " << verdict;
    unreliable += verdict == "unreliable" ? 1 : 0;
  }
  EXPECT_GE(unreliable, 1u);  // "same" five times in a row: far below 1e-12

  // One process per side cannot see it: the two processes' offsets differ by more than the
  // threshold in most checks, and such a check reports a clean, significant change.
  size_t changes = 0;
  for (int trial = 0; trial < 5; ++trial) {
    PremergeConfig c = config({}, {});
    c.worker_args.push_back("--fake_process_offset=^fake/fast/:10");
    c.thresholds = threshold;
    c.processes = 1;
    (void)run(c);
    const std::string verdict = compare_files("0.5%").verdicts.at("fake/fast/a");
    changes += verdict == "regression" || verdict == "improvement" ? 1 : 0;
  }
  EXPECT_GE(changes, 1u);  // none in 5: about 3e-7
}

// fake/fast/a's processes at -1%, 0 and +1% of its time on base, +1%, -1% and 0 on new (so
// that the epochs' differences do not cancel), the same again in later starts: after three
// epochs the paired differences (+2, -1, -1%) leave the change known to +/-4.3% only, wider
// than the 2% threshold; after six, +/-1.6%.
PremergeConfig with_process_offsets(PremergeConfig c, const std::string& dir) {
  c.base_args.push_back("--fake_process_offsets=^fake/fast/:-1,0,1:" + dir + "/base.starts");
  c.new_args.push_back("--fake_process_offsets=^fake/fast/:1,-1,0:" + dir + "/new.starts");
  return c;
}

TEST_F(PremergeRun, ExtraEpochsRunOnlyTheBenchmarksTheProcessesLeftUndecided) {
  const PremergeRecord r = run(with_process_offsets(config({}, {}), path("")));
  EXPECT_EQ(r.extra_epochs, 3u);  // up to the default 6 processes a side
  const BenchmarkRecord& fast = find(r, "fake/fast/a");
  for (Side side : kSides) {
    EXPECT_EQ(r.worker(side).epoch_starts, 6u);
    for (size_t e = 3; e < 6; ++e) EXPECT_EQ(fast.side(side).samples_in(e), 5u) << e;
  }
  ASSERT_TRUE(fast.comparison.has_value());
  EXPECT_EQ(fast.comparison->base.processes, 6u);
  EXPECT_LT(fast.comparison->process_interval, 0.02);  // 6 epochs: +/-1.6%
  // The others were decided, or undecided by their samples' own noise: no extra epoch.
  for (const char* name : {"fake/mid/c", "fake/noisy/b"})
    for (Side side : kSides) EXPECT_EQ(find(r, name).side(side).samples_in(3), 0u) << name;
  const json premerge = json::parse(slurp(out("premerge.json")));
  EXPECT_EQ(premerge["totals"]["extra_epochs"], 3);
  EXPECT_EQ(premerge["settings"]["max_processes"], 6);
  // One process cannot show a process effect: the first epoch samples to its share (10).
  EXPECT_EQ(premerge["benchmarks"][0]["samples_per_process"]["base"], (json{10, 5, 5, 5, 5, 5}));
  EXPECT_EQ(compare_files("2%").verdicts.at("fake/fast/a"), "same");

  // Without extra epochs the same check stops it for its processes, and the gate cannot say.
  std::filesystem::remove_all(path("out"));
  PremergeConfig three = with_process_offsets(config({}, {}), path("again"));
  std::filesystem::create_directories(path("again"));
  three.max_processes = 3;
  const PremergeRecord plain = run(three);
  EXPECT_EQ(plain.extra_epochs, 0u);
  EXPECT_EQ(find(plain, "fake/fast/a").stop, StopReason::kProcesses);
  EXPECT_EQ(compare_files("2%").verdicts.at("fake/fast/a"), "unreliable");
}

TEST_F(PremergeRun, ExtraEpochsCatchASlowdownTheProcessesHid) {
  // 10% slower, with processes 2% apart: undecided after three processes a side, a regression
  // once the extra epochs have narrowed the interval under the threshold (six).
  const PremergeRecord r = run(with_process_offsets(config({}, {"--fake_slowdown=^fake/fast/:10"}), path("")));
  const BenchmarkRecord& fast = find(r, "fake/fast/a");
  EXPECT_EQ(fast.stop, StopReason::kDecidedChange);
  EXPECT_GT(fast.comparison->base.processes, 3u);
  EXPECT_TRUE(fast.comparison->processes_paired);
  EXPECT_EQ(compare_files("2%").verdicts.at("fake/fast/a"), "regression");
}

TEST_F(PremergeRun, AProcessOffsetThatCarriesThePooledChangeIsNoRegression) {
  // Nothing changed, but two of new's three processes (and of the three extra ones) run 2.5%
  // slow and one 1% fast: the pooled medians differ by 2.5%, over the 2% threshold, with a
  // significant U test; epoch by epoch the change is +1.3% (+2.5, +2.5, -1 twice), within it.
  // The gate follows the processes: same, as the pre-merge check's A/A on an H100 needed
  // (docs/compare.md, "process change").
  PremergeConfig c = config({}, {});
  c.base_args.push_back("--fake_process_offsets=^fake/fast/:0,0,0:" + path("") + "/base.starts");
  c.new_args.push_back("--fake_process_offsets=^fake/fast/:2.5,2.5,-1:" + path("") + "/new.starts");
  (void)run(c);
  const CompareResult cmp = compare_files("2%");
  ASSERT_TRUE(cmp.report.is_object());
  for (const json& b : cmp.report["benchmarks"]) {
    if (b["name"] != "fake/fast/a") continue;
    const json& t = b["time"];
    EXPECT_GT(t["change"].get<double>(), 0.02) << t.dump();
    EXPECT_NEAR(t["process_change"].get<double>(), 0.0133, 0.002) << t.dump();
    EXPECT_TRUE(t["processes_paired"].get<bool>());
  }
  EXPECT_EQ(cmp.verdicts.at("fake/fast/a"), "same");
  EXPECT_EQ(cmp.exit_code, 0);
}

TEST_F(PremergeRun, PlantedSlowdownIsStillTheOnlyRegressionWithThreeProcesses) {
  PremergeConfig c = config({}, {"--fake_slowdown=^fake/fast/:10"});
  c.processes = 3;
  const PremergeRecord r = run(c);
  const BenchmarkRecord& fast = find(r, "fake/fast/a");
  EXPECT_EQ(fast.stop, StopReason::kDecidedChange);
  EXPECT_EQ(fast.side(Side::kNew).real_ns.size(), 15u);
  ASSERT_TRUE(fast.comparison.has_value());
  EXPECT_NEAR(fast.comparison->ratio, 1.10, 0.01);
  EXPECT_EQ(fast.comparison->base.processes, 3u);
  EXPECT_EQ(fast.side(Side::kNew).samples_in(2), 5u);
  const CompareResult cmp = compare_files("2%");
  EXPECT_EQ(cmp.exit_code, 1);
  EXPECT_EQ(cmp.verdicts.at("fake/fast/a"), "regression");
  for (const auto& [name, verdict] : cmp.verdicts)
    if (name != "fake/fast/a") EXPECT_NE(verdict, "regression") << name;
}

// The binary: progress lines, the exit code, and a worker that cannot start.
TEST_F(PremergeRun, CommandLineRunPrintsAProgressLinePerBenchmark) {
  const Captured c = run_captured({kPremerge, "--base-bin", kFakeWorker, "--new-bin", kFakeWorker, "--out",
                                   path("out"), "--filter", "fast|mid", "--base-arg=--fake_seed=3", "--new-arg",
                                   "--fake_seed=4", "--seed", "5"});
  EXPECT_EQ(c.status.code, 0) << c.err;
  EXPECT_NE(c.err.find("gptbench-premerge: epoch 1/3: base worker ready in "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("[1/2] fake/fast/a  epoch 1/3  n=5/5  change "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("epoch-done  (elapsed 0:00, ETA 0:00)"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("gptbench-premerge: epoch 2/3: new worker ready in "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("[1/2] fake/fast/a  epoch 3/3  n=15/15  change "), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("decided-same  (elapsed 0:00, ETA 0:00)"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("[2/2] fake/mid/c  epoch 3/3  n="), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("gate: gptbench-compare benchmarks"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(json::parse(slurp(out("premerge.json")))["settings"]["seed"], 5);
  // One process per side: one line per benchmark, without an epoch.
  const Captured one = run_captured({kPremerge, "--base-bin", kFakeWorker, "--new-bin", kFakeWorker, "--out",
                                     path("one"), "--filter", "fast|mid", "--base-arg=--fake_seed=3", "--new-arg",
                                     "--fake_seed=4", "--seed", "5", "--processes", "1"});
  EXPECT_EQ(one.status.code, 0) << one.err;
  EXPECT_NE(one.err.find("gptbench-premerge: base worker ready in "), std::string::npos) << one.err;
  EXPECT_NE(one.err.find("[1/2] fake/fast/a  n=5/5  change "), std::string::npos) << one.err;
  EXPECT_NE(one.err.find("decided-same  (elapsed 0:00, ETA 0:00)"), std::string::npos) << one.err;
  EXPECT_EQ(one.err.find("epoch"), std::string::npos) << one.err;
  EXPECT_EQ(json::parse(slurp(path("one/premerge.json")))["settings"]["processes"], 1);
}

TEST_F(PremergeRun, AWorkerThatCannotStartExitsTwoWithItsReason) {
  const Captured c = run_captured({kPremerge, "--base-bin", kFakeWorker, "--new-bin", kFakeWorker, "--out",
                                   path("out"), "--new-arg=--fake_fail_start"});
  EXPECT_EQ(c.status.code, 2);
  EXPECT_NE(c.err.find("new worker (" + kFakeWorker + ") could not start: ended with exit code 3 before its ready line; "
                       "last stderr lines: fake_worker: starting (seed 1) | fake_worker: cannot initialise the fake device"),
            std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find(out("new-worker.log")), std::string::npos) << c.err;
  EXPECT_NE(slurp(out("new-worker.log")).find("cannot initialise the fake device"), std::string::npos);
  const Captured missing = run_captured({kPremerge, "--base-bin", path("nonexistent"), "--new-bin", kFakeWorker,
                                         "--out", path("out")});
  EXPECT_EQ(missing.status.code, 2);
  EXPECT_NE(missing.err.find("base worker (" + path("nonexistent") + ") could not start: cannot start"),
            std::string::npos)
      << missing.err;
  const Captured usage = run_captured({kPremerge, "--base-bin", kFakeWorker});
  EXPECT_EQ(usage.status.code, 2);
  EXPECT_NE(usage.err.find("gptbench-premerge: "), std::string::npos);
}

}  // namespace
}  // namespace gptbench::runner
