// The training report: Google Benchmark JSON runs of the training families
// (model/train_step, model/checkpointing, overheads/) into one self-contained HTML page with
// inline SVG charts — tokens/s and peak memory against batch size, warm-up and CUDA-graph
// capture cost against the steady step, a speed-up leaderboard against a chosen baseline,
// relative step-time jitter, phase breakdown as stacked bars — and the tables behind them.
// Loading goes through the shared loader (runjson/load.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runjson/run.h"

namespace gptbench::report {

struct Entry {
  std::string name;     // benchmark name
  std::string label;    // name, plus " [file]" when several runs hold the same name
  std::string source;   // the run's file
  double real_ms = 0;   // median over repetitions of the reported time, in ms
  std::map<std::string, double> counters;  // median over the repetitions' values

  // The value of "B:8"-style segment `key` ("B" → 8), or `fallback`.
  double arg(const std::string& key, double fallback = 0) const;
  // The name with segment "<key>:<value>" removed.
  std::string without(const std::string& key) const;
  double counter(const std::string& key, double fallback = 0) const;
  bool has(const std::string& key) const { return counters.count(key) > 0; }
};

// Entries of the benchmarks that ran (skipped and errored ones are left out, and counted).
struct Collected {
  std::vector<Entry> entries;
  std::vector<std::pair<std::string, std::string>> skipped;  // (name, message)
  std::vector<std::map<std::string, std::string>> contexts;  // one per run
  std::vector<std::string> sources;
};
Collected collect(const std::vector<runjson::Run>& runs);

struct ReportOptions {
  std::string title = "gptbench training report";
  std::string baseline;  // benchmark name, or a substring of one; "" picks a default
};

// The baseline entry for the leaderboard: exact name, else the first containing the text,
// else the first eager torch_fused train step, else the first train step; nullptr if none.
const Entry* pick_baseline(const Collected& c, const std::string& wanted);

std::string render_report(const Collected& c, const ReportOptions& options);

}  // namespace gptbench::report
