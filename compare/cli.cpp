#include "cli.h"

#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_parse.h"
#include "kernel_note.h"
#include "runjson/load.h"
#include "runjson/merge.h"
#include "pair.h"
#include "render.h"
#include "report.h"

namespace gptbench::compare {
using runjson::LoadError;
using runjson::Run;
using runjson::TimeKind;
using runjson::load_run_file;
using runjson::load_run_files;
using runjson::merge_run_files;
using runjson::read_text_file;

namespace {

constexpr int kExitUsage = 2;
constexpr const char* kProgram = "gptbench-compare";

// A usage or input problem: printed as one line, exit code 2.
struct UsageError {
  std::string message;
};

struct Options {
  std::string base_path, new_path;       // benchmarks mode
  std::string run_path, impl_a, impl_b;  // filters mode
  std::string merge_out;                 // merge mode
  std::vector<std::string> merge_inputs;
  std::string filter;
  double alpha = 0.05;
  std::string correction = "holm";
  std::optional<std::string> threshold;
  std::string config;
  std::string format = "text";
  std::string html;
  std::string time = "real";
  bool no_color = false;
  bool strict_context = false;
  bool gate_counters = false;
  bool fail_on_removed = false;
};

Settings make_settings(const Options& options) {
  Settings settings;
  if (!(options.alpha > 0 && options.alpha < 1)) throw UsageError{"--alpha must be in (0, 1)"};
  settings.alpha = options.alpha;
  settings.correction = parse_correction(options.correction).value_or(Correction::kHolm);  // checked by CLI11
  settings.time = options.time == "cpu" ? TimeKind::kCpu : TimeKind::kReal;
  settings.gate_counters = options.gate_counters;
  settings.fail_on_removed = options.fail_on_removed;
  try {
    if (!options.config.empty()) {
      apply_threshold_config(read_text_file(options.config), options.config, settings.thresholds);
    }
    if (options.threshold) settings.thresholds.set_default(parse_threshold(*options.threshold));
  } catch (const ConfigError& error) {
    throw UsageError{error.what()};
  } catch (const LoadError& error) {
    throw UsageError{error.what()};
  }
  return settings;
}

NameFilter make_filter(const std::string& pattern) {
  try {
    return NameFilter(pattern);
  } catch (const std::regex_error& error) {
    throw UsageError{"invalid --filter regex '" + pattern + "': " + error.what()};
  }
}

Run load(const std::string& path) {
  try {
    return load_run_file(path);
  } catch (const LoadError& error) {
    throw UsageError{error.what()};
  }
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream file(path, std::ios::binary);
  file << content;
  file.close();
  if (!file) throw UsageError{path + ": cannot write file"};
}

// The compared counters the suite declares no direction for, sorted, comma-separated.
std::string undeclared_counters(const Report& report) {
  std::set<std::string> names;
  for (const PairResult& result : report.results)
    for (const CounterResult& counter : result.counters)
      if (!declared_counter(counter.name)) names.insert(counter.name);
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

int compare(const Options& options, bool filters_mode, std::ostream& out, std::ostream& err, bool color_terminal) {
  const Settings settings = make_settings(options);
  const NameFilter filter = make_filter(options.filter);
  Report report;
  if (filters_mode) {
    if (options.impl_a == options.impl_b) throw UsageError{"IMPL_A and IMPL_B must differ"};
    const Run run = load(options.run_path);
    report = build_report(pair_by_impl(run, options.impl_a, options.impl_b, filter), settings);
    report.base_source = report.contender_source = options.run_path;
    report.base_label = options.impl_a;
    report.contender_label = options.impl_b;
  } else {
    std::pair<Run, Run> runs;
    try {
      runs = load_run_files(options.base_path, options.new_path);
    } catch (const LoadError& error) {
      throw UsageError{error.what()};
    }
    const Run& base = runs.first;
    const Run& contender = runs.second;
    const Pairing pairing = pair_by_name(base, contender, filter);
    const auto check_of = [](const Run& run) {
      const auto it = run.context.find(kPremergeCheckKey);
      return it == run.context.end() ? std::string() : it->second;
    };
    Settings run_settings = settings;
    run_settings.paired_processes = !check_of(base).empty() && check_of(base) == check_of(contender);
    report = build_report(pairing, run_settings);
    add_kernel_notes(report, pairing);
    report.base_source = options.base_path;
    report.contender_source = options.new_path;
    report.context = diff_context(base.context, contender.context);
  }
  report.mode = filters_mode ? "filters" : "benchmarks";
  report.strict_context = options.strict_context;
  if (report.results.empty()) {
    throw UsageError{"no benchmark pairs to compare" +
                     std::string(options.filter.empty() ? "" : " (--filter '" + options.filter + "' matched none)")};
  }

  if (const std::string undeclared = undeclared_counters(report); !undeclared.empty())
    err << kProgram << ": note: counters with no declared direction (compare/counter_table.h), judged from "
        << "their names: " << undeclared << "\n";
  if (options.format == "json") {
    out << render_json(report);
  } else if (options.format == "markdown") {
    out << render_markdown(report);
  } else {
    out << render_text(report, TextOptions{color_terminal && !options.no_color});
  }
  if (!options.html.empty()) write_file(options.html, render_html(report));

  const int code = exit_code(report);
  if (code == kExitUsage) err << kProgram << ": error: environment differs between the runs (--strict-context)\n";
  return code;
}

int merge(const Options& options, std::ostream& out) {
  nlohmann::json merged;
  try {
    merged = merge_run_files(options.merge_inputs);
  } catch (const LoadError& error) {
    throw UsageError{error.what()};
  }
  write_file(options.merge_out, merged.dump(2) + "\n");
  out << "merged " << options.merge_inputs.size() << " file(s), " << merged["benchmarks"].size() << " row(s) into "
      << options.merge_out << "\n";
  return 0;
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool color_terminal) {
  Options options;
  CLI::App app{"Compare Google Benchmark JSON runs: statistics, verdicts, exit code for merge gates.", kProgram};
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--filter", options.filter, "Only benchmarks whose name matches this regex (ECMAScript, search)");
  app.add_option("--alpha", options.alpha, "Significance level of the Mann-Whitney U test (default 0.05)");
  app.add_option("--correction", options.correction,
                 "Multiple-testing correction over all tested pairs: holm (default) or none (each pair at alpha)")
      ->check(CLI::IsMember({"holm", "none"}));
  app.add_option("--threshold", options.threshold, "Minimum relative change that counts, e.g. 5% or 0.05 (default 5%)");
  app.add_option("--config", options.config, "Threshold rules file: lines 'PREFIX = 10%', '*' for the default")
      ->check(CLI::ExistingFile);
  app.add_option("--format", options.format, "Output format: text, markdown or json")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  app.add_option("--html", options.html, "Also write a self-contained HTML report to this file");
  app.add_option("--time", options.time, "Which time to compare: real (default) or cpu")
      ->check(CLI::IsMember({"real", "cpu"}));
  app.add_flag("--no-color", options.no_color, "No ANSI colours (they are only used on a terminal anyway)");
  app.add_flag("--strict-context", options.strict_context,
               "Exit 2 when GPU, driver, CUDA runtime or LibTorch version differ between the runs");
  app.add_flag("--gate-counters", options.gate_counters, "Counter regressions (e.g. memory up) fail the gate too");
  app.add_flag("--fail-on-removed", options.fail_on_removed, "Benchmarks missing from NEW fail the gate");

  CLI::App* benchmarks = app.add_subcommand("benchmarks", "Compare two runs, pairing benchmarks by exact name");
  benchmarks->add_option("BASE", options.base_path, "Baseline JSON")->required();
  benchmarks->add_option("NEW", options.new_path, "New JSON")->required();
  CLI::App* filters = app.add_subcommand("filters", "Compare two implementations within one run");
  filters->add_option("RUN", options.run_path, "JSON run")->required();
  filters->add_option("IMPL_A", options.impl_a, "Path segment of the baseline implementation, e.g. torch")->required();
  filters->add_option("IMPL_B", options.impl_b, "Path segment of the contender, e.g. fused")->required();
  CLI::App* merge_command = app.add_subcommand("merge", "Merge per-round JSON files into one run with repetitions");
  merge_command->add_option("OUT", options.merge_out, "Merged JSON to write")->required();
  merge_command->add_option("INPUTS", options.merge_inputs, "Per-round JSON files, in round order")->required();

  if (const auto code = parse_command_line(app, argc, argv, out, err, kProgram)) return *code;

  try {
    if (merge_command->parsed()) return merge(options, out);
    return compare(options, filters->parsed(), out, err, color_terminal);
  } catch (const UsageError& error) {
    err << kProgram << ": error: " << error.message << "\n";
  } catch (const std::exception& error) {
    err << kProgram << ": error: " << error.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace gptbench::compare
