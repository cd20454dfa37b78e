#include "runjson/run_builder.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "runjson/json_text.h"

namespace gptbench::runjson {
namespace {

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

}  // namespace

bool RunBuilder::fail(std::string message) {
  if (problem_.empty()) problem_ = std::move(message);
  return false;
}

std::string RunBuilder::row_prefix() const {
  std::string out = "benchmarks[" + std::to_string(row_.position) + "]";
  if (row_.name) out += " ('" + printable(*row_.name) + "')";
  return out;
}

bool RunBuilder::open(bool is_object) {
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

bool RunBuilder::close() {
  if (stack_.empty()) return fail("unbalanced JSON");
  const Frame frame = stack_.back();
  stack_.pop_back();
  if (frame == Frame::kRow) return finish_row();
  return true;
}

bool RunBuilder::scalar(const Scalar& value) {
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

std::string RunBuilder::context_text(const Scalar& value) {
  switch (value.kind) {
    case Scalar::Kind::kNull: return "null";
    case Scalar::Kind::kBool: return value.boolean ? "true" : "false";
    case Scalar::Kind::kInteger: return value.integer_fits ? std::to_string(value.integer) : format_number(value.number);
    case Scalar::Kind::kFloat: return format_number(value.number);
    case Scalar::Kind::kString: return *value.text;
  }
  return "";
}

bool RunBuilder::type_error(const Scalar& value, const char* expected) {
  return fail(row_prefix() + ": '" + key_ + "' is " + value.kind_name() + ", expected " + expected);
}

bool RunBuilder::take_string(const Scalar& value, std::optional<std::string>& out) {
  if (value.kind != Scalar::Kind::kString) return type_error(value, "a string");
  out = *value.text;
  return true;
}

bool RunBuilder::take_integer(const Scalar& value, std::optional<int64_t>& out) {
  if (value.kind != Scalar::Kind::kInteger) return type_error(value, "an integer");
  if (!value.integer_fits) return fail(row_prefix() + ": '" + key_ + "' is out of range");
  out = value.integer;
  return true;
}

bool RunBuilder::take_index(const Scalar& value, std::optional<int64_t>& out) {
  if (!take_integer(value, out)) return false;
  if (*out < 0) {
    return fail(row_prefix() + ": '" + key_ + "' is negative (" + std::to_string(*out) +
                "), expected a non-negative integer");
  }
  return true;
}

bool RunBuilder::take_bool(const Scalar& value, bool& out) {
  if (value.kind != Scalar::Kind::kBool) return type_error(value, "a boolean");
  out = value.boolean;
  return true;
}

std::optional<double> RunBuilder::number_of(const Scalar& value) {
  if (value.is_number()) return value.number;
  if (value.kind == Scalar::Kind::kString) return nonfinite_from_string(*value.text);
  return std::nullopt;
}

bool RunBuilder::take_time(const Scalar& value, std::optional<double>& out) {
  const std::optional<double> number = number_of(value);
  if (!number) return type_error(value, "a number");
  out = *number;
  return true;
}

bool RunBuilder::row_field(const Scalar& value) {
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

bool RunBuilder::check_time(const char* field, const std::optional<double>& value, double scale, double& out) {
  if (!value) return fail(row_prefix() + ": missing '" + field + "'");
  if (!std::isfinite(*value)) return fail(row_prefix() + ": '" + field + "' is not finite (" + format_number(*value) + ")");
  if (*value < 0) return fail(row_prefix() + ": '" + field + "' is negative (" + format_number(*value) + ")");
  out = *value * scale;
  if (!std::isfinite(out)) return fail(row_prefix() + ": '" + field + "' overflows in nanoseconds (" + format_number(*value) + ")");
  return true;
}

bool RunBuilder::check_times(bool is_percentage, double& real, double& cpu) {
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

size_t RunBuilder::benchmark_named(const std::string& name) {
  const auto [it, inserted] = run_.index.try_emplace(name, run_.benchmarks.size());
  if (inserted) {
    run_.benchmarks.emplace_back();
    run_.benchmarks.back().name = name;
    seen_repetitions_.emplace_back();
  }
  return it->second;
}

bool RunBuilder::finish_row() {
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

bool RunBuilder::finish_aggregate() {
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

void RunBuilder::note_common(Benchmark& bench) {
  if (bench.family_index < 0 && row_.family_index) bench.family_index = *row_.family_index;
  if (row_.repetitions) bench.declared_repetitions = std::max(bench.declared_repetitions, *row_.repetitions);
  if (bench.label.empty() && row_.label) bench.label = *row_.label;
  if (row_.label && std::find(bench.labels.begin(), bench.labels.end(), *row_.label) == bench.labels.end())
    bench.labels.push_back(*row_.label);
}

void RunBuilder::mark(Benchmark& bench, RunStatus status, const std::string& message) {
  if (static_cast<int>(status) > static_cast<int>(bench.status)) {
    bench.status = status;
    bench.message = message;
  }
}

void RunBuilder::add_counter(Benchmark& bench, const std::string& name, double value, int64_t process) {
  for (CounterSeries& series : bench.counters) {
    if (series.name == name) {
      series.values.push_back(value);
      series.processes.push_back(process);
      return;
    }
  }
  bench.counters.push_back(CounterSeries{name, {value}, {process}});
}

bool RunBuilder::finish() {
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
}  // namespace gptbench::runjson
