#include "cli.h"

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>

#include <CLI/CLI.hpp>

#include "baseline.h"
#include "compare/cli_parse.h"
#include "runjson/format.h"
#include "git.h"
#include "runjson/load.h"
#include "compare/render.h"
#include "series.h"
#include "store.h"
#include "compare/thresholds.h"
#include "trend_html.h"

namespace gptbench::history {
namespace {

constexpr int kExitUsage = 2;
constexpr const char* kProgram = "gptbench-history";

struct Options {
  std::string db = "runjson/history.sqlite";
  std::string run_path, commit, branch, date, source;
  std::vector<std::string> add_paths;
  std::string regex, html, device, output, threshold = "5%", filter;
  size_t last = 5;
  double min_step = 0.02;
};

runjson::Run load(const std::string& path) {
  try {
    return runjson::load_run_file(path);
  } catch (const runjson::LoadError& error) {
    throw HistoryError(error.what());
  }
}

compare::NameFilter make_filter(const std::string& pattern) {
  try {
    return compare::NameFilter(pattern);
  } catch (const std::regex_error& error) {
    throw HistoryError("invalid regex '" + pattern + "': " + error.what());
  }
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream file(path, std::ios::binary);
  file << content;
  file.close();
  if (!file) throw HistoryError(path + ": cannot write file");
}

// The history of the benchmarks matching the regex; none is an input error.
History matching_history(Database& db, const Options& options) {
  ChangePointSettings settings;
  settings.min_effect = options.min_step;
  History history = load_history(db, make_filter(options.regex), settings);
  if (history.benchmarks.empty()) throw HistoryError("no benchmark in " + db.path() + " matches '" + options.regex + "'");
  return history;
}

int add(const Options& options, std::ostream& out) {
  if (!options.source.empty() && options.add_paths.size() > 1) throw HistoryError("--source names one RUN, not several");
  // Every file is loaded before any is added: a bad one among them adds nothing.
  std::vector<runjson::Run> runs;
  for (const std::string& path : options.add_paths) {
    runs.push_back(load(path));
    if (!options.source.empty()) runs.back().source = options.source;
  }
  Database db(options.db, Database::Mode::kCreate);
  AddOptions add_options;
  add_options.commit = options.commit.empty() ? current_commit() : options.commit;
  add_options.branch = options.branch.empty() ? current_branch() : options.branch;
  add_options.date = options.date;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string& path = options.add_paths[i];
    const AddResult result = add_run(db, runs[i], add_options);
    if (result.duplicate) {
      out << path << ": already in " << options.db << " as run " << result.run_id << "; not added again\n";
    } else {
      out << "added " << path << " as run " << result.run_id << " (" << runs[i].benchmarks.size() << " benchmarks, "
          << device_of(runs[i].context) << ", commit " << short_commit(add_options.commit) << ") to " << options.db
          << "\n";
    }
  }
  return 0;
}

int list(const Options& options, std::ostream& out) {
  Database db(options.db, Database::Mode::kExisting);
  char line[512];
  std::snprintf(line, sizeof line, "%5s  %-25s  %-10s  %-14s  %-24s  %10s  %s\n", "run", "date", "commit", "branch",
                "device", "benchmarks", "source");
  out << line;
  for (const RunInfo& run : list_runs(db)) {
    std::snprintf(line, sizeof line, "%5lld  %-25s  %-10s  %-14s  %-24s  %10lld  %s\n", static_cast<long long>(run.id),
                  run.date.c_str(), short_commit(run.commit).c_str(), run.branch.c_str(), run.device.c_str(),
                  static_cast<long long>(run.benchmarks), run.source.c_str());
    out << line;
  }
  return 0;
}

int show(const Options& options, std::ostream& out) {
  Database db(options.db, Database::Mode::kExisting);
  const History history = matching_history(db, options);
  char line[512];
  for (const BenchmarkHistory& benchmark : history.benchmarks) {
    out << benchmark.name << "\n";
    for (const EnvironmentSeries& series : benchmark.series) {
      out << "  " << environment_label(series.environment) << "\n";
      std::snprintf(line, sizeof line, "  %5s  %-25s  %-10s  %10s  %10s  %10s\n", "run", "date", "commit", "median",
                    "q1", "q3");
      out << line;
      for (const SeriesPoint& point : series.points) {
        const RunInfo& run = history.runs[point.run];
        std::snprintf(line, sizeof line, "  %5lld  %-25s  %-10s  %10s  %10s  %10s\n", static_cast<long long>(run.id),
                      run.date.c_str(), short_commit(run.commit).c_str(), runjson::format_time(point.median).c_str(),
                      runjson::format_time(point.q1).c_str(), runjson::format_time(point.q3).c_str());
        out << line;
      }
      for (const Step& step : series.steps) {
        out << "  step " << runjson::format_change(step.change) << " (" << runjson::format_time(step.before) << " -> "
            << runjson::format_time(step.after) << ") between " << step_range(history, series, step) << "\n";
      }
    }
  }
  return 0;
}

int trend(const Options& options, std::ostream& out) {
  Database db(options.db, Database::Mode::kExisting);
  const History history = matching_history(db, options);
  write_file(options.html, render_trend_html(history, TrendPage{"gptbench history", options.db, options.regex}));
  out << "wrote " << options.html << " (" << history.benchmarks.size() << " benchmarks over " << history.runs.size()
      << " runs)\n";
  return 0;
}

// Says when the pooled runs span more than one environment.
void note_environments(const RunSelection& selection, std::ostream& err) {
  if (selection.environments.size() < 2) return;
  err << kProgram << ": note: the selected runs span " << selection.environments.size() << " environments:";
  for (const std::string& environment : selection.environments) err << " [" << environment_label(environment) << "]";
  err << "\n";
}

int baseline(const Options& options, std::ostream& out, std::ostream& err) {
  Database db(options.db, Database::Mode::kExisting);
  const RunSelection selection = select_runs(list_runs(db), options.device, "", options.last);
  if (selection.runs.empty()) throw HistoryError("no run on a device matching '" + options.device + "' in " + options.db);
  note_environments(selection, err);
  write_file(options.output, to_benchmark_json(pooled_baseline(db, selection)).dump(1) + "\n");
  out << "wrote " << options.output << ": baseline of " << selection.runs.size() << " run(s) on "
      << selection.runs.back().device << "\n";
  return 0;
}

int check(const Options& options, std::ostream& out, std::ostream& err) {
  const runjson::Run run = load(options.run_path);
  Database db(options.db, Database::Mode::kExisting);
  const std::string device = device_of(run.context);
  const RunSelection selection =
      select_runs(list_runs(db), device, environment_of(run.context), options.last, run_digest(run));
  if (selection.runs.empty()) throw HistoryError("no earlier run on " + device + " in " + options.db);
  if (selection.environments.front() != environment_of(run.context)) {
    err << kProgram << ": note: no earlier run in this run's environment; comparing with runs on " << device << "\n";
  }
  note_environments(selection, err);
  const runjson::Run base = pooled_baseline(db, selection);
  compare::Settings settings;
  try {
    settings.thresholds.set_default(compare::parse_threshold(options.threshold));
  } catch (const compare::ConfigError& error) {
    throw HistoryError(error.what());
  }
  compare::Report report = compare::build_report(compare::pair_by_name(base, run, make_filter(options.filter)), settings);
  if (report.results.empty()) throw HistoryError("no benchmark of " + options.run_path + " is in the selected history");
  report.mode = "benchmarks";
  report.base_source = base.source;
  report.contender_source = options.run_path;
  report.context = compare::diff_context(base.context, run.context);
  out << compare::render_text(report, compare::TextOptions{false});
  return compare::exit_code(report);
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Options options;
  CLI::App app{"History of gptbench runs: a SQLite store, trend pages, change points, baselines.", kProgram};
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--db", options.db, "History database (default results/history.sqlite)");
  app.add_option("--min-step", options.min_step, "Smallest step that is reported, as a fraction (default 0.02)")
      ->check(CLI::Range(0.0, 10.0));

  CLI::App* add_command = app.add_subcommand("add", "Add Google Benchmark JSON runs");
  add_command->add_option("RUN", options.add_paths, "JSON runs (each its own transaction)")->required();
  add_command->add_option("--commit", options.commit, "Commit it was measured at (default: git HEAD here)");
  add_command->add_option("--branch", options.branch, "Branch (default: the current git branch)");
  add_command->add_option("--date", options.date, "Date, ISO 8601 (default: the run's context date)");
  add_command->add_option("--source", options.source, "Name to record for the file (default: RUN as given)");
  CLI::App* list_command = app.add_subcommand("list", "List the runs, oldest first");
  CLI::App* show_command = app.add_subcommand("show", "Table over time of the benchmarks matching a regex");
  show_command->add_option("REGEX", options.regex, "Benchmark name regex (ECMAScript, search)")->required();
  CLI::App* trend_command = app.add_subcommand("trend", "HTML page with one chart per matching benchmark");
  trend_command->add_option("REGEX", options.regex, "Benchmark name regex (ECMAScript, search)")->required();
  trend_command->add_option("--html", options.html, "Page to write")->required();
  CLI::App* baseline_command = app.add_subcommand("baseline", "Pool the last N runs on a device into a baseline JSON");
  baseline_command->add_option("--device", options.device, "Device name or part of it, e.g. H100, or cpu")->required();
  baseline_command->add_option("--last", options.last, "How many runs (default 5)")->check(CLI::PositiveNumber);
  baseline_command->add_option("-o,--output", options.output, "Baseline JSON to write")->required();
  CLI::App* check_command = app.add_subcommand("check", "Compare a run with the last N runs on its device");
  check_command->add_option("RUN", options.run_path, "JSON run")->required();
  check_command->add_option("--last", options.last, "How many runs (default 5)")->check(CLI::PositiveNumber);
  check_command->add_option("--threshold", options.threshold, "Minimum relative change that counts (default 5%)");
  check_command->add_option("--filter", options.filter, "Only benchmarks whose name matches this regex");

  if (const auto code = compare::parse_command_line(app, argc, argv, out, err, kProgram)) return *code;
  try {
    if (add_command->parsed()) return add(options, out);
    if (list_command->parsed()) return list(options, out);
    if (show_command->parsed()) return show(options, out);
    if (trend_command->parsed()) return trend(options, out);
    if (baseline_command->parsed()) return baseline(options, out, err);
    return check(options, out, err);
  } catch (const std::exception& error) {
    err << kProgram << ": error: " << error.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace gptbench::history
