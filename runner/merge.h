// The merged result of a runner invocation: one Google Benchmark JSON document with one
// context and the rows of every family, in the order the families ran.
//
// Why not runjson/merge.h: merge_runs() merges *rounds* of the same benchmarks (it renumbers
// repetitions and drops aggregate rows, which summarise one round). Families are disjoint sets
// of benchmarks whose rows, aggregates included, must pass through unchanged; the runner uses
// the shared loader (runjson/load.h: parse_run) to check every document it reads and the one it
// writes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gptbench::runner {

class MergedRun {
 public:
  // The first context seen becomes the merged context (later ones are ignored: they differ
  // only in date, load average and measured peaks).
  void offer_context(const nlohmann::json& context);
  // Adds the rows of one child run. family_index values are renumbered so that they stay
  // unique across children (each child numbers its families from 0).
  void add_child_rows(std::vector<nlohmann::json> rows);
  // An errored row for a benchmark that did not finish (Google Benchmark's own shape for
  // SkipWithError: error_occurred, error_message, zero iterations).
  void add_errored(const std::string& name, const std::string& message);
  // Extra context entries written under "context" (strings).
  void set_context_entry(const std::string& key, const std::string& value);

  size_t row_count() const { return rows_.size(); }
  // The document; throws std::runtime_error if the loader (runjson/load.h) would reject it.
  nlohmann::json document() const;
  // document().dump(2) + "\n", validated.
  std::string text() const;

 private:
  nlohmann::json context_ = nlohmann::json::object();
  bool have_context_ = false;
  std::map<std::string, std::string> extra_;
  std::vector<nlohmann::json> rows_;
  int64_t next_family_index_ = 0;
};

// The row Google Benchmark writes for a benchmark stopped by SkipWithError (error_occurred,
// error_message, zero iterations and times), as one iteration row of one repetition.
nlohmann::json errored_row(const std::string& name, const std::string& message, int64_t family_index,
                           int64_t per_family_instance_index = 0);

// Checks text with the loader (runjson/load.h); returns "" or its one-line message.
std::string validate_gb_json(const std::string& text, const std::string& source);

}  // namespace gptbench::runner
