// Reads Google Benchmark's JSON output (--benchmark_out) while it is being written, and after
// the writer died. Google Benchmark flushes the file after each benchmark's report, so a file
// cut short by a crash holds the context and every finished benchmark followed by a partial
// or missing tail; this reader keeps exactly the complete rows.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gptbench::runner {

class GbJsonReader {
 public:
  // Appends bytes and scans them; complete rows become available through take_rows().
  void feed(std::string_view bytes);

  // Rows completed since the last call, in file order (non-finite literals such as a bare
  // NaN are stored as the strings "NaN", "Infinity", "-Infinity", as gptbench-compare reads them).
  std::vector<nlohmann::json> take_rows();
  // The "context" object, once it is complete.
  const std::optional<nlohmann::json>& context() const { return context_; }
  // True once the root object closed (the writer finished normally).
  bool complete() const { return root_closed_; }
  // First problem met (a row that is not valid JSON, input after the root); "" when none.
  const std::string& problem() const { return problem_; }
  size_t bytes_scanned() const { return buf_.size(); }

 private:
  void scan();
  std::optional<nlohmann::json> parse_value(size_t begin, size_t end);

  std::string buf_;
  size_t pos_ = 0;
  std::vector<char> stack_;  // open '{' / '['
  bool in_string_ = false, escape_ = false;
  bool expect_key_ = false;  // at depth 1: the next string is a key
  size_t string_start_ = 0;
  std::string last_key_;     // last key read at depth 1
  bool in_benchmarks_ = false;
  size_t value_start_ = 0;   // start of the context object or of the current row
  bool root_closed_ = false;
  std::optional<nlohmann::json> context_;
  std::vector<nlohmann::json> rows_;
  std::string problem_;
};

// Reads a whole (possibly truncated) output: the context, if complete, and every complete row.
struct GbJsonDocument {
  std::optional<nlohmann::json> context;
  std::vector<nlohmann::json> rows;
  bool complete = false;
  std::string problem;
};
GbJsonDocument read_gb_json(std::string_view text);

// The benchmark a row belongs to: "run_name" (aggregates: the name without _mean etc.), else "name".
std::string row_benchmark(const nlohmann::json& row);

}  // namespace gptbench::runner
