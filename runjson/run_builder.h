// The validator both parsers of the loader feed (load.cpp): nlohmann's SAX events, or
// simdjson's DOM replayed as the same events in document order. It checks every row of Google
// Benchmark JSON (library versions 1.7 to 1.9) as it comes, builds the Run, and stops at the
// first problem with a one-line message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runjson/run.h"

namespace gptbench::runjson {

class RunBuilder {
 private:
  // One JSON scalar as the SAX parser delivers it.
  struct Scalar {
    enum class Kind { kNull, kBool, kInteger, kFloat, kString } kind = Kind::kNull;
    bool boolean = false;
    bool integer_fits = true;  // false for unsigned values above INT64_MAX
    int64_t integer = 0;
    double number = 0;         // integers too, converted
    const std::string* text = nullptr;

    bool is_number() const { return kind == Kind::kInteger || kind == Kind::kFloat; }
    const char* kind_name() const {
      switch (kind) {
        case Kind::kNull: return "null";
        case Kind::kBool: return "a boolean";
        case Kind::kInteger: return "an integer";
        case Kind::kFloat: return "a number";
        case Kind::kString: return "a string";
      }
      return "?";
    }
  };

  // A benchmark row as read, before validation.
  struct RawRow {
    size_t position = 0;  // index in the benchmarks array
    std::optional<std::string> name, run_name, run_type, aggregate_name, aggregate_unit, label,
        time_unit, error_message, skip_message;
    std::optional<int64_t> repetition_index, process_index, repetitions, family_index;
    std::optional<double> real_time, cpu_time;
    bool error_occurred = false;
    bool skipped = false;
    std::vector<std::pair<std::string, double>> counters;
  };

 public:
  explicit RunBuilder(Run& run) : run_(run) {}

  const std::string& problem() const { return problem_; }
  bool saw_benchmarks() const { return saw_benchmarks_; }
  bool saw_syntax_error() const { return syntax_error_; }

  // --- nlohmann SAX interface -------------------------------------------------
  bool null() { return scalar(Scalar{}); }
  bool boolean(bool value) {
    Scalar s;
    s.kind = Scalar::Kind::kBool;
    s.boolean = value;
    return scalar(s);
  }
  bool number_integer(nlohmann::json::number_integer_t value) {
    Scalar s;
    s.kind = Scalar::Kind::kInteger;
    s.integer = value;
    s.number = static_cast<double>(value);
    return scalar(s);
  }
  bool number_unsigned(nlohmann::json::number_unsigned_t value) {
    Scalar s;
    s.kind = Scalar::Kind::kInteger;
    s.integer_fits = value <= static_cast<nlohmann::json::number_unsigned_t>(INT64_MAX);
    s.integer = s.integer_fits ? static_cast<int64_t>(value) : INT64_MAX;
    s.number = static_cast<double>(value);
    return scalar(s);
  }
  bool number_float(nlohmann::json::number_float_t value, const std::string&) {
    Scalar s;
    s.kind = Scalar::Kind::kFloat;
    s.number = value;
    return scalar(s);
  }
  bool string(std::string& value) {
    Scalar s;
    s.kind = Scalar::Kind::kString;
    s.text = &value;
    return scalar(s);
  }
  bool binary(nlohmann::json::binary_t&) { return fail("unexpected binary value"); }
  bool key(std::string& value) {
    key_ = value;
    return true;
  }
  bool start_object(std::size_t) { return open(true); }
  bool start_array(std::size_t) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& error) {
    syntax_error_ = true;
    syntax_what_ = error.what();
    syntax_position_ = position;
    return false;
  }
  const std::string& syntax_what() const { return syntax_what_; }
  size_t syntax_position() const { return syntax_position_; }

  // After a successful parse: order repetitions, find duplicate iteration rows.
  bool finish();

 private:
  enum class Frame { kRoot, kContext, kBenchmarks, kRow, kIgnored };

  bool fail(std::string message);
  std::string row_prefix() const;
  bool open(bool is_object);
  bool close();
  bool scalar(const Scalar& value);
  static std::string context_text(const Scalar& value);
  bool type_error(const Scalar& value, const char* expected);
  bool take_string(const Scalar& value, std::optional<std::string>& out);
  bool take_integer(const Scalar& value, std::optional<int64_t>& out);
  // A non-negative integer (an index that numbers things from 0).
  bool take_index(const Scalar& value, std::optional<int64_t>& out);
  bool take_bool(const Scalar& value, bool& out);
  // A number, or one of the non-finite literals quote_nonfinite_literals wrote.
  static std::optional<double> number_of(const Scalar& value);
  bool take_time(const Scalar& value, std::optional<double>& out);
  bool row_field(const Scalar& value);
  // Checks one time field; `scale` converts it to ns (1 for percentages).
  bool check_time(const char* field, const std::optional<double>& value, double scale, double& out);
  bool check_times(bool is_percentage, double& real, double& cpu);
  // Position of the benchmark with this name, created on first sight.
  size_t benchmark_named(const std::string& name);
  bool finish_row();
  bool finish_aggregate();
  void note_common(Benchmark& bench);
  static void mark(Benchmark& bench, RunStatus status, const std::string& message);
  static void add_counter(Benchmark& bench, const std::string& name, double value, int64_t process);

  Run& run_;
  std::vector<Frame> stack_;
  std::string key_;
  RawRow row_;
  size_t next_row_ = 0;
  bool saw_benchmarks_ = false;
  bool syntax_error_ = false;
  std::string problem_;
  std::string syntax_what_;
  size_t syntax_position_ = 0;
  std::vector<std::vector<int64_t>> seen_repetitions_;  // per benchmark
};

}  // namespace gptbench::runjson
