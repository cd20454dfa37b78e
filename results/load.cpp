#include "results/load.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "results/json_text.h"

namespace gptbench::results {
namespace {

using nlohmann::json;

// Fields of a benchmark row that are not user counters.
enum class Field {
  kName, kRunName, kRunType, kAggregateName, kAggregateUnit, kLabel,
  kRepetitionIndex, kProcessIndex, kRepetitions, kFamilyIndex, kPerFamilyInstanceIndex, kThreads,
  kIterations, kRealTime, kCpuTime, kTimeUnit, kErrorOccurred, kErrorMessage,
  kSkipped, kSkipMessage, kIgnoredNumber, kIgnoredString,
};

const std::unordered_map<std::string_view, Field>& known_fields() {
  static const std::unordered_map<std::string_view, Field> kFields = {
      {"name", Field::kName},
      {"run_name", Field::kRunName},
      {"run_type", Field::kRunType},
      {"aggregate_name", Field::kAggregateName},
      {"aggregate_unit", Field::kAggregateUnit},
      {"label", Field::kLabel},
      {"repetition_index", Field::kRepetitionIndex},
      // gptbench-premerge: which of a side's worker processes took the sample.
      {"process_index", Field::kProcessIndex},
      {"repetitions", Field::kRepetitions},
      {"family_index", Field::kFamilyIndex},
      {"per_family_instance_index", Field::kPerFamilyInstanceIndex},
      {"threads", Field::kThreads},
      {"iterations", Field::kIterations},
      {"real_time", Field::kRealTime},
      {"cpu_time", Field::kCpuTime},
      {"time_unit", Field::kTimeUnit},
      {"error_occurred", Field::kErrorOccurred},
      {"error_message", Field::kErrorMessage},
      {"skipped", Field::kSkipped},
      {"skip_message", Field::kSkipMessage},
      // Complexity rows (BigO / RMS): numbers that are not counters.
      {"cpu_coefficient", Field::kIgnoredNumber},
      {"real_coefficient", Field::kIgnoredNumber},
      {"rms", Field::kIgnoredNumber},
      {"big_o", Field::kIgnoredString},
  };
  return kFields;
}

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

std::optional<double> nanoseconds_per(std::string_view unit) {
  if (unit == "ns") return 1.0;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  return std::nullopt;
}

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// Builds a Run from SAX events; stops at the first problem with a message.
class RunBuilder {
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
  bool number_integer(json::number_integer_t value) {
    Scalar s;
    s.kind = Scalar::Kind::kInteger;
    s.integer = value;
    s.number = static_cast<double>(value);
    return scalar(s);
  }
  bool number_unsigned(json::number_unsigned_t value) {
    Scalar s;
    s.kind = Scalar::Kind::kInteger;
    s.integer_fits = value <= static_cast<json::number_unsigned_t>(INT64_MAX);
    s.integer = s.integer_fits ? static_cast<int64_t>(value) : INT64_MAX;
    s.number = static_cast<double>(value);
    return scalar(s);
  }
  bool number_float(json::number_float_t value, const std::string&) {
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
  bool binary(json::binary_t&) { return fail("unexpected binary value"); }
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

 private:
  enum class Frame { kRoot, kContext, kBenchmarks, kRow, kIgnored };

  bool fail(std::string message) {
    if (problem_.empty()) problem_ = std::move(message);
    return false;
  }

  std::string row_prefix() const {
    std::string out = "benchmarks[" + std::to_string(row_.position) + "]";
    if (row_.name) out += " ('" + printable(*row_.name) + "')";
    return out;
  }

  bool open(bool is_object) {
    const char* what = is_object ? "an object" : "an array";
    if (stack_.empty()) {
      if (!is_object) return fail("top-level value is an array, expected an object");
      stack_.push_back(Frame::kRoot);
      return true;
    }
    switch (stack_.back()) {
      case Frame::kRoot:
        if (key_ == "benchmarks") {
          if (is_object) return fail("'benchmarks' is an object, expected an array");
          saw_benchmarks_ = true;
          stack_.push_back(Frame::kBenchmarks);
          return true;
        }
        if (key_ == "context") {
          if (!is_object) return fail("'context' is an array, expected an object");
          stack_.push_back(Frame::kContext);
          return true;
        }
        break;
      case Frame::kBenchmarks:
        if (!is_object) {
          return fail("benchmarks[" + std::to_string(next_row_) + "] is an array, expected an object");
        }
        row_ = RawRow{};
        row_.position = next_row_++;
        stack_.push_back(Frame::kRow);
        return true;
      case Frame::kRow:
        if (known_fields().count(key_) != 0) {
          return fail(row_prefix() + ": '" + key_ + "' is " + what + ", expected a scalar");
        }
        break;
      case Frame::kContext:
      case Frame::kIgnored:
        break;
    }
    stack_.push_back(Frame::kIgnored);
    return true;
  }

  bool close() {
    if (stack_.empty()) return fail("unbalanced JSON");
    const Frame frame = stack_.back();
    stack_.pop_back();
    if (frame == Frame::kRow) return finish_row();
    return true;
  }

  bool scalar(const Scalar& value) {
    if (stack_.empty()) return fail("top-level value is not an object");
    switch (stack_.back()) {
      case Frame::kRoot:
        if (key_ == "benchmarks") return fail(std::string("'benchmarks' is ") + value.kind_name() + ", expected an array");
        if (key_ == "context") return fail(std::string("'context' is ") + value.kind_name() + ", expected an object");
        return true;
      case Frame::kContext:
        run_.context[key_] = context_text(value);
        return true;
      case Frame::kBenchmarks:
        return fail("benchmarks[" + std::to_string(next_row_) + "] is " + value.kind_name() + ", expected an object");
      case Frame::kRow:
        return row_field(value);
      case Frame::kIgnored:
        return true;
    }
    return true;
  }

  static std::string context_text(const Scalar& value) {
    switch (value.kind) {
      case Scalar::Kind::kNull: return "null";
      case Scalar::Kind::kBool: return value.boolean ? "true" : "false";
      case Scalar::Kind::kInteger: return value.integer_fits ? std::to_string(value.integer) : format_number(value.number);
      case Scalar::Kind::kFloat: return format_number(value.number);
      case Scalar::Kind::kString: return *value.text;
    }
    return "";
  }

  bool type_error(const Scalar& value, const char* expected) {
    return fail(row_prefix() + ": '" + key_ + "' is " + value.kind_name() + ", expected " + expected);
  }

  bool take_string(const Scalar& value, std::optional<std::string>& out) {
    if (value.kind != Scalar::Kind::kString) return type_error(value, "a string");
    out = *value.text;
    return true;
  }

  bool take_integer(const Scalar& value, std::optional<int64_t>& out) {
    if (value.kind != Scalar::Kind::kInteger) return type_error(value, "an integer");
    if (!value.integer_fits) return fail(row_prefix() + ": '" + key_ + "' is out of range");
    out = value.integer;
    return true;
  }

  // A non-negative integer (an index that numbers things from 0).
  bool take_index(const Scalar& value, std::optional<int64_t>& out) {
    if (!take_integer(value, out)) return false;
    if (*out < 0) {
      return fail(row_prefix() + ": '" + key_ + "' is negative (" + std::to_string(*out) +
                  "), expected a non-negative integer");
    }
    return true;
  }

  bool take_bool(const Scalar& value, bool& out) {
    if (value.kind != Scalar::Kind::kBool) return type_error(value, "a boolean");
    out = value.boolean;
    return true;
  }

  // A number, or one of the non-finite literals quote_nonfinite_literals wrote.
  static std::optional<double> number_of(const Scalar& value) {
    if (value.is_number()) return value.number;
    if (value.kind == Scalar::Kind::kString) return nonfinite_from_string(*value.text);
    return std::nullopt;
  }

  bool take_time(const Scalar& value, std::optional<double>& out) {
    const std::optional<double> number = number_of(value);
    if (!number) return type_error(value, "a number");
    out = *number;
    return true;
  }

  bool row_field(const Scalar& value) {
    const auto& fields = known_fields();
    const auto it = fields.find(key_);
    if (it == fields.end()) {
      // Any other numeric field is a user counter; other types are not ours.
      if (const std::optional<double> number = number_of(value)) {
        row_.counters.emplace_back(key_, *number);
      }
      return true;
    }
    switch (it->second) {
      case Field::kName: return take_string(value, row_.name);
      case Field::kRunName: return take_string(value, row_.run_name);
      case Field::kRunType: return take_string(value, row_.run_type);
      case Field::kAggregateName: return take_string(value, row_.aggregate_name);
      case Field::kAggregateUnit: return take_string(value, row_.aggregate_unit);
      case Field::kLabel: return take_string(value, row_.label);
      case Field::kTimeUnit: return take_string(value, row_.time_unit);
      case Field::kErrorMessage: return take_string(value, row_.error_message);
      case Field::kSkipMessage: return take_string(value, row_.skip_message);
      case Field::kRepetitionIndex: return take_integer(value, row_.repetition_index);
      case Field::kProcessIndex: return take_index(value, row_.process_index);
      case Field::kRepetitions: return take_integer(value, row_.repetitions);
      case Field::kFamilyIndex: return take_integer(value, row_.family_index);
      case Field::kPerFamilyInstanceIndex:
      case Field::kThreads:
      case Field::kIterations: {
        std::optional<int64_t> ignored;
        return take_integer(value, ignored);
      }
      case Field::kRealTime: return take_time(value, row_.real_time);
      case Field::kCpuTime: return take_time(value, row_.cpu_time);
      case Field::kErrorOccurred: return take_bool(value, row_.error_occurred);
      case Field::kSkipped: return take_bool(value, row_.skipped);
      case Field::kIgnoredNumber:
        return value.is_number() || number_of(value) ? true : type_error(value, "a number");
      case Field::kIgnoredString: return true;
    }
    return true;
  }

  // Checks one time field; `scale` converts it to ns (1 for percentages).
  bool check_time(const char* field, const std::optional<double>& value, double scale, double& out) {
    if (!value) return fail(row_prefix() + ": missing '" + field + "'");
    if (!std::isfinite(*value)) return fail(row_prefix() + ": '" + field + "' is not finite (" + format_number(*value) + ")");
    if (*value < 0) return fail(row_prefix() + ": '" + field + "' is negative (" + format_number(*value) + ")");
    out = *value * scale;
    if (!std::isfinite(out)) return fail(row_prefix() + ": '" + field + "' overflows in nanoseconds (" + format_number(*value) + ")");
    return true;
  }

  bool check_times(bool is_percentage, double& real, double& cpu) {
    double scale = 1.0;
    if (!is_percentage) {
      if (!row_.time_unit) return fail(row_prefix() + ": missing 'time_unit'");
      const std::optional<double> per = nanoseconds_per(*row_.time_unit);
      if (!per) return fail(row_prefix() + ": unknown time_unit '" + printable(*row_.time_unit) + "' (expected ns, us, ms or s)");
      scale = *per;
    }
    return check_time("real_time", row_.real_time, scale, real) &&
           check_time("cpu_time", row_.cpu_time, scale, cpu);
  }

  // Position of the benchmark with this name, created on first sight.
  size_t benchmark_named(const std::string& name) {
    const auto [it, inserted] = run_.index.try_emplace(name, run_.benchmarks.size());
    if (inserted) {
      run_.benchmarks.emplace_back();
      run_.benchmarks.back().name = name;
      seen_repetitions_.emplace_back();
    }
    return it->second;
  }

  bool finish_row() {
    if (!row_.name) return fail(row_prefix() + ": missing 'name'");
    const std::string run_type = row_.run_type.value_or("iteration");
    if (run_type == "aggregate") return finish_aggregate();
    if (run_type != "iteration") {
      return fail(row_prefix() + ": unknown run_type '" + printable(run_type) + "' (expected iteration or aggregate)");
    }
    const bool did_not_run = row_.error_occurred || row_.skipped;
    Repetition rep;
    rep.index = row_.repetition_index.value_or(-1);
    rep.process = row_.process_index.value_or(-1);
    if (!did_not_run || row_.real_time || row_.cpu_time) {
      if (!check_times(false, rep.real_ns, rep.cpu_ns)) return false;
    }
    const std::string& name = row_.run_name ? *row_.run_name : *row_.name;
    const size_t position = benchmark_named(name);
    Benchmark& bench = run_.benchmarks[position];
    seen_repetitions_[position].push_back(rep.index);
    note_common(bench);
    if (row_.error_occurred) {
      mark(bench, RunStatus::kErrored, row_.error_message.value_or(""));
    } else if (row_.skipped) {
      mark(bench, RunStatus::kSkipped, row_.skip_message.value_or(""));
    } else {
      bench.repetitions.push_back(rep);
      for (auto& [counter_name, value] : row_.counters) {
        add_counter(bench, counter_name, value, rep.process);
      }
    }
    return true;
  }

  bool finish_aggregate() {
    if (!row_.aggregate_name) return fail(row_prefix() + ": aggregate row without 'aggregate_name'");
    Aggregate agg;
    agg.name = *row_.aggregate_name;
    agg.is_percentage = row_.aggregate_unit && *row_.aggregate_unit == "percentage";
    agg.has_time = row_.real_time.has_value() || row_.cpu_time.has_value();
    if (agg.has_time && !check_times(agg.is_percentage, agg.real_ns, agg.cpu_ns)) return false;
    for (auto& [counter_name, value] : row_.counters) agg.counters[counter_name] = value;

    std::string name;
    if (row_.run_name) {
      name = *row_.run_name;
    } else {
      name = *row_.name;
      const std::string suffix = "_" + agg.name;
      if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        name.resize(name.size() - suffix.size());
      }
    }
    Benchmark& bench = run_.benchmarks[benchmark_named(name)];
    if (bench.aggregate(agg.name) != nullptr) {
      return fail(row_prefix() + ": duplicate aggregate row '" + printable(*row_.name) + "'");
    }
    note_common(bench);
    if (row_.error_occurred) mark(bench, RunStatus::kErrored, row_.error_message.value_or(""));
    bench.aggregates.push_back(std::move(agg));
    return true;
  }

  void note_common(Benchmark& bench) {
    if (bench.family_index < 0 && row_.family_index) bench.family_index = *row_.family_index;
    if (row_.repetitions) bench.declared_repetitions = std::max(bench.declared_repetitions, *row_.repetitions);
    if (bench.label.empty() && row_.label) bench.label = *row_.label;
  }

  static void mark(Benchmark& bench, RunStatus status, const std::string& message) {
    if (static_cast<int>(status) > static_cast<int>(bench.status)) {
      bench.status = status;
      bench.message = message;
    }
  }

  static void add_counter(Benchmark& bench, const std::string& name, double value, int64_t process) {
    for (CounterSeries& series : bench.counters) {
      if (series.name == name) {
        series.values.push_back(value);
        series.processes.push_back(process);
        return;
      }
    }
    bench.counters.push_back(CounterSeries{name, {value}, {process}});
  }

 public:
  // After a successful parse: order repetitions, find duplicate iteration rows.
  bool finish() {
    for (size_t i = 0; i < run_.benchmarks.size(); ++i) {
      std::vector<int64_t>& seen = seen_repetitions_[i];
      std::sort(seen.begin(), seen.end());
      const auto dup = std::adjacent_find(seen.begin(), seen.end());
      if (dup != seen.end()) {
        const std::string which = *dup < 0 ? "without repetition_index" : "with repetition_index " + std::to_string(*dup);
        return fail("duplicate benchmark '" + printable(run_.benchmarks[i].name) + "' (two iteration rows " + which + ")");
      }
      auto& reps = run_.benchmarks[i].repetitions;
      std::sort(reps.begin(), reps.end(), [](const Repetition& a, const Repetition& b) { return a.index < b.index; });
    }
    return true;
  }

 private:
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

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

// nlohmann's message minus its "[json.exception...] parse error at ...:" prefix.
std::string syntax_message(std::string what, size_t byte, std::string_view text) {
  if (!what.empty() && what.front() == '[') {
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
  }
  if (what.rfind("parse error", 0) == 0) {
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
  }
  const TextPosition pos = position_of(text, byte > 0 ? byte - 1 : 0);
  return "invalid JSON at line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " +
         printable(what, 200, true);
}

// Replays a simdjson DOM as the SAX events RunBuilder takes, in document
// order (duplicate keys included), so both parsers share one validator.
class DomReplay {
 public:
  explicit DomReplay(RunBuilder& builder) : builder_(builder) {}

  bool walk(simdjson::dom::element element) {
    using Type = simdjson::dom::element_type;
    switch (element.type()) {
      case Type::OBJECT: {
        const simdjson::dom::object object = element.get_object().value_unsafe();
        if (!builder_.start_object(object.size())) return false;
        for (const simdjson::dom::key_value_pair field : object) {
          scratch_.assign(field.key);
          if (!builder_.key(scratch_) || !walk(field.value)) return false;
        }
        return builder_.end_object();
      }
      case Type::ARRAY: {
        const simdjson::dom::array array = element.get_array().value_unsafe();
        if (!builder_.start_array(array.size())) return false;
        for (const simdjson::dom::element item : array) {
          if (!walk(item)) return false;
        }
        return builder_.end_array();
      }
      case Type::STRING:
        scratch_.assign(element.get_string().value_unsafe());
        return builder_.string(scratch_);
      case Type::INT64: return builder_.number_integer(element.get_int64().value_unsafe());
      case Type::UINT64: return builder_.number_unsigned(element.get_uint64().value_unsafe());
      case Type::DOUBLE: return builder_.number_float(element.get_double().value_unsafe(), no_text_);
      case Type::BOOL: return builder_.boolean(element.get_bool().value_unsafe());
      case Type::NULL_VALUE: return builder_.null();
    }
    return false;
  }

 private:
  RunBuilder& builder_;
  std::string scratch_;
  const std::string no_text_;
};

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw LoadError(path + ": cannot open file (" + std::strerror(errno) + ")");
  const std::streamoff size = in.tellg();
  if (size < 0) throw LoadError(path + ": cannot read file");
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(text.data(), size)) throw LoadError(path + ": cannot read file");
  return text;
}

Run parse_run(std::string_view text, const std::string& source, Parser parser_choice) {
  if (is_blank(text)) throw LoadError(source + ": file is empty");
  const std::optional<std::string> quoted = quote_nonfinite_literals(text);
  const std::string_view input = quoted ? std::string_view(*quoted) : text;

  // Fast path: simdjson (GB/s) replayed into the validator. Anything it
  // refuses (syntax, depth, integers beyond 64 bits, 1e999) is parsed again
  // by nlohmann's SAX parser, which has the exact semantics and positions
  // the error messages use.
  if (parser_choice == Parser::kAuto) {
    Run run;
    run.source = source;
    RunBuilder builder(run);
    simdjson::dom::parser parser;
    const simdjson::padded_string padded(input);
    const simdjson::simdjson_result<simdjson::dom::element> document = parser.parse(padded);
    if (!document.error()) {
      const bool ok = DomReplay(builder).walk(document.value_unsafe());
      if (!ok) throw LoadError(source + ": " + (builder.problem().empty() ? "invalid JSON" : builder.problem()));
      if (!builder.saw_benchmarks()) throw LoadError(source + ": no 'benchmarks' array");
      if (!builder.finish()) throw LoadError(source + ": " + builder.problem());
      return run;
    }
  }
  Run run;
  run.source = source;
  RunBuilder builder(run);
  const bool ok = json::sax_parse(input.begin(), input.end(), &builder, json::input_format_t::json, true);
  if (builder.saw_syntax_error()) {
    throw LoadError(source + ": " + syntax_message(builder.syntax_what(), builder.syntax_position(), input));
  }
  if (!ok) throw LoadError(source + ": " + (builder.problem().empty() ? "invalid JSON" : builder.problem()));
  if (!builder.saw_benchmarks()) throw LoadError(source + ": no 'benchmarks' array");
  if (!builder.finish()) throw LoadError(source + ": " + builder.problem());
  return run;
}

Run load_run_file(const std::string& path) { return parse_run(read_text_file(path), path); }

std::pair<Run, Run> load_run_files(const std::string& base_path, const std::string& contender_path) {
  std::future<Run> contender = std::async(std::launch::async, [&contender_path] { return load_run_file(contender_path); });
  Run base;
  try {
    base = load_run_file(base_path);
  } catch (...) {
    contender.wait();
    throw;
  }
  return {std::move(base), contender.get()};
}

}  // namespace gptbench::results
