// Each benchmark's history: its per-run medians and quartiles in run-date order, split into
// one series per environment (device, driver, CUDA, LibTorch, timer: runs of different ones are
// never one series), with the steps PELT finds in each series and the commits around them.
#pragma once

#include <string>
#include <vector>

#include "changepoint.h"
#include "database.h"
#include "compare/pair.h"
#include "store.h"

namespace gptbench::history {

struct SeriesPoint {
  size_t run = 0;  // position in History::runs
  double median = 0, q1 = 0, q3 = 0;  // real time, ns
};

struct EnvironmentSeries {
  std::string environment;
  std::vector<SeriesPoint> points;  // in run order
  std::vector<Step> steps;          // Step::index is a position in `points`
};

struct BenchmarkHistory {
  std::string name;
  std::vector<EnvironmentSeries> series;  // by first appearance
};

struct History {
  std::vector<RunInfo> runs;  // every run, oldest first
  std::vector<BenchmarkHistory> benchmarks;  // matching the filter, by name
};

History load_history(Database& db, const compare::NameFilter& filter, const ChangePointSettings& settings = {});

// "abc1234..def5678" (short commits of the last run before a step and the first after it),
// with the run ids: the range where the step happened.
std::string step_range(const History& history, const EnvironmentSeries& series, const Step& step);

// The short form of a commit for tables: its first 10 characters.
std::string short_commit(const std::string& commit);

}  // namespace gptbench::history
