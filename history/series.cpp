#include "series.h"

#include <algorithm>
#include <unordered_map>

namespace gptbench::history {

History load_history(Database& db, const compare::NameFilter& filter, const ChangePointSettings& settings) {
  History history;
  history.runs = list_runs(db);
  std::unordered_map<int64_t, size_t> position;
  for (size_t i = 0; i < history.runs.size(); ++i) position[history.runs[i].id] = i;

  Statement names = db.prepare("SELECT id, name FROM benchmarks ORDER BY name");
  Statement results = db.prepare(
      "SELECT run_id, median_ns, q1_ns, q3_ns FROM results"
      " WHERE benchmark_id = ?1 AND status = 'ok' AND median_ns IS NOT NULL");
  while (names.step()) {
    BenchmarkHistory benchmark;
    benchmark.name = names.column_text(1);
    if (!filter.keeps(benchmark.name)) continue;
    std::vector<SeriesPoint> points;
    results.bind(1, names.column_int(0));
    while (results.step()) {
      points.push_back(SeriesPoint{position.at(results.column_int(0)), results.column_double(1),
                                   results.column_double(2), results.column_double(3)});
    }
    if (points.empty()) continue;
    std::sort(points.begin(), points.end(), [](const SeriesPoint& a, const SeriesPoint& b) { return a.run < b.run; });
    for (const SeriesPoint& point : points) {
      const std::string& environment = history.runs[point.run].environment;
      auto it = std::find_if(benchmark.series.begin(), benchmark.series.end(),
                             [&](const EnvironmentSeries& s) { return s.environment == environment; });
      if (it == benchmark.series.end()) it = benchmark.series.insert(it, EnvironmentSeries{environment, {}, {}});
      it->points.push_back(point);
    }
    for (EnvironmentSeries& series : benchmark.series) {
      std::vector<double> medians;
      for (const SeriesPoint& point : series.points) medians.push_back(point.median);
      series.steps = detect_steps(medians, settings);
    }
    history.benchmarks.push_back(std::move(benchmark));
  }
  return history;
}

std::string short_commit(const std::string& commit) { return commit.substr(0, 10); }

std::string step_range(const History& history, const EnvironmentSeries& series, const Step& step) {
  const RunInfo& before = history.runs[series.points[step.index - 1].run];
  const RunInfo& after = history.runs[series.points[step.index].run];
  return short_commit(before.commit) + ".." + short_commit(after.commit) + " (runs " + std::to_string(before.id) +
         ".." + std::to_string(after.id) + ")";
}

}  // namespace gptbench::history
