#include "store.h"

#include <bit>
#include <chrono>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "compare/context.h"
#include "runjson/median.h"

namespace gptbench::history {
namespace {

class Fnv1a {
 public:
  void add(std::string_view text) {
    for (unsigned char c : text) mix(c);
    mix(0xff);  // separator: "ab","c" differs from "a","bc"
  }
  void add(double value) {
    const auto bits = std::bit_cast<uint64_t>(value);
    for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(bits >> (8 * i)));
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash_));
    return buf;
  }

 private:
  void mix(unsigned char c) {
    hash_ ^= c;
    hash_ *= 0x100000001b3ULL;
  }
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string now_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
  return buf;
}

std::string value_or_empty(const std::map<std::string, std::string>& context, const std::string& key) {
  const auto it = context.find(key);
  return it == context.end() ? "" : it->second;
}

// Fills one `results` row and its repetitions and counters.
class ResultWriter {
 public:
  explicit ResultWriter(Database& db)
      : db_(db),
        find_benchmark_(db.prepare("SELECT id FROM benchmarks WHERE name = ?1")),
        insert_benchmark_(db.prepare("INSERT INTO benchmarks(name) VALUES (?1)")),
        insert_result_(db.prepare(
            "INSERT INTO results(run_id, benchmark_id, status, message, label, declared_repetitions, median_ns,"
            " q1_ns, q3_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")),
        insert_repetition_(db.prepare(
            "INSERT INTO repetitions(result_id, idx, process, real_ns, cpu_ns) VALUES (?1, ?2, ?3, ?4, ?5)")),
        insert_counter_(db.prepare(
            "INSERT INTO counters(result_id, name, idx, value, process) VALUES (?1, ?2, ?3, ?4, ?5)")) {}

  void write(int64_t run_id, const runjson::Benchmark& benchmark) {
    std::vector<double> real = benchmark.samples(runjson::TimeKind::kReal);
    double median = NAN, q1 = NAN, q3 = NAN;
    if (!real.empty()) {
      median = runjson::median(real);
      q1 = runjson::quantile(real, 0.25);
      q3 = runjson::quantile(real, 0.75);
    } else if (const runjson::Aggregate* aggregate = benchmark.aggregate("median"); aggregate && aggregate->has_time) {
      median = q1 = q3 = aggregate->real_ns;  // aggregates-only run: the median row is all there is
    }
    insert_result_.bind(1, run_id).bind(2, benchmark_id(benchmark.name)).bind(3, runjson::to_string(benchmark.status))
        .bind(4, benchmark.message).bind(5, benchmark.label).bind(6, benchmark.declared_repetitions)
        .bind(7, median).bind(8, q1).bind(9, q3).run();
    const int64_t result_id = db_.last_insert_id();
    for (size_t i = 0; i < benchmark.repetitions.size(); ++i) {
      const runjson::Repetition& rep = benchmark.repetitions[i];
      insert_repetition_.bind(1, result_id).bind(2, static_cast<int64_t>(i)).bind(3, rep.process)
          .bind(4, rep.real_ns).bind(5, rep.cpu_ns).run();
    }
    for (const runjson::CounterSeries& counter : benchmark.counters) {
      for (size_t i = 0; i < counter.values.size(); ++i) {
        insert_counter_.bind(1, result_id).bind(2, counter.name).bind(3, static_cast<int64_t>(i))
            .bind(4, counter.values[i]).bind(5, counter.processes[i]).run();
      }
    }
  }

 private:
  int64_t benchmark_id(const std::string& name) {
    find_benchmark_.bind(1, name);
    if (find_benchmark_.step()) {
      const int64_t id = find_benchmark_.column_int(0);
      find_benchmark_.reset();
      return id;
    }
    insert_benchmark_.bind(1, name).run();
    return db_.last_insert_id();
  }

  Database& db_;
  Statement find_benchmark_, insert_benchmark_, insert_result_, insert_repetition_, insert_counter_;
};

runjson::RunStatus parse_status(const std::string& text) {
  if (text == runjson::to_string(runjson::RunStatus::kSkipped)) return runjson::RunStatus::kSkipped;
  if (text == runjson::to_string(runjson::RunStatus::kErrored)) return runjson::RunStatus::kErrored;
  return runjson::RunStatus::kOk;
}

}  // namespace

std::string device_of(const std::map<std::string, std::string>& context) {
  const std::string gpu = value_or_empty(context, "gpu_name");
  return gpu.empty() || gpu == "none" ? "cpu" : gpu;
}

std::string environment_of(const std::map<std::string, std::string>& context) {
  std::string text = "device=" + device_of(context);
  for (const std::string& key : compare::kEnvironmentKeys) {
    if (key == "gpu_name") continue;
    const std::string value = value_or_empty(context, key);
    if (!value.empty() && value != "none") text += ", " + key + "=" + value;
  }
  return text;
}

std::string run_digest(const runjson::Run& run) {
  Fnv1a hash;
  for (const auto& [key, value] : run.context) {
    hash.add(key);
    hash.add(value);
  }
  for (const runjson::Benchmark& benchmark : run.benchmarks) {
    hash.add(benchmark.name);
    hash.add(runjson::to_string(benchmark.status));
    for (const runjson::Repetition& rep : benchmark.repetitions) {
      hash.add(rep.real_ns);
      hash.add(rep.cpu_ns);
    }
    for (const runjson::CounterSeries& counter : benchmark.counters) {
      hash.add(counter.name);
      for (double value : counter.values) hash.add(value);
    }
    for (const runjson::Aggregate& aggregate : benchmark.aggregates) {
      hash.add(aggregate.name);
      hash.add(aggregate.real_ns);
    }
  }
  return hash.hex();
}

AddResult add_run(Database& db, const runjson::Run& run, const AddOptions& options,
                  const std::function<void(size_t)>& progress) {
  const std::string digest = run_digest(run);
  Transaction transaction(db);
  Statement existing = db.prepare("SELECT id FROM runs WHERE digest = ?1");
  existing.bind(1, digest);
  if (existing.step()) return AddResult{existing.column_int(0), true};

  std::string date = options.date;
  if (date.empty()) date = value_or_empty(run.context, "date");
  if (date.empty()) date = now_utc();
  db.prepare(
        "INSERT INTO runs(digest, commit_sha, branch, date, added, source, device, environment, context)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
      .bind(1, digest).bind(2, options.commit).bind(3, options.branch).bind(4, date).bind(5, now_utc())
      .bind(6, run.source).bind(7, device_of(run.context)).bind(8, environment_of(run.context))
      .bind(9, nlohmann::json(run.context).dump())
      .run();
  const int64_t run_id = db.last_insert_id();
  ResultWriter writer(db);
  for (size_t i = 0; i < run.benchmarks.size(); ++i) {
    writer.write(run_id, run.benchmarks[i]);
    if (progress) progress(i + 1);
  }
  transaction.commit();
  return AddResult{run_id, false};
}

std::vector<RunInfo> list_runs(Database& db) {
  Statement select = db.prepare(
      "SELECT r.id, digest, commit_sha, branch, date, added, source, device, environment, context,"
      " (SELECT count(*) FROM results WHERE run_id = r.id) FROM runs r ORDER BY date, id");
  std::vector<RunInfo> runs;
  while (select.step()) {
    RunInfo info;
    info.id = select.column_int(0);
    info.digest = select.column_text(1);
    info.commit = select.column_text(2);
    info.branch = select.column_text(3);
    info.date = select.column_text(4);
    info.added = select.column_text(5);
    info.source = select.column_text(6);
    info.device = select.column_text(7);
    info.environment = select.column_text(8);
    const auto context = nlohmann::json::parse(select.column_text(9), nullptr, false);
    if (context.is_object()) {
      for (const auto& [key, value] : context.items()) {
        if (value.is_string()) info.context[key] = value.get<std::string>();
      }
    }
    info.benchmarks = select.column_int(10);
    runs.push_back(std::move(info));
  }
  return runs;
}

runjson::Run load_stored_run(Database& db, const RunInfo& info) {
  runjson::Run run;
  run.source = info.source;
  run.context = info.context;
  Statement results = db.prepare(
      "SELECT r.id, b.name, r.status, r.message, r.label, r.declared_repetitions FROM results r"
      " JOIN benchmarks b ON b.id = r.benchmark_id WHERE r.run_id = ?1 ORDER BY r.id");
  Statement repetitions = db.prepare(
      "SELECT idx, process, real_ns, cpu_ns FROM repetitions WHERE result_id = ?1 ORDER BY idx");
  Statement counters = db.prepare(
      "SELECT name, value, process FROM counters WHERE result_id = ?1 ORDER BY name, idx");
  results.bind(1, info.id);
  while (results.step()) {
    runjson::Benchmark& benchmark = run.benchmarks.emplace_back();
    const int64_t result_id = results.column_int(0);
    benchmark.name = results.column_text(1);
    benchmark.status = parse_status(results.column_text(2));
    benchmark.message = results.column_text(3);
    benchmark.label = results.column_text(4);
    benchmark.declared_repetitions = results.column_int(5);
    repetitions.bind(1, result_id);
    while (repetitions.step()) {
      benchmark.repetitions.push_back(runjson::Repetition{repetitions.column_int(0), repetitions.column_int(1),
                                                          repetitions.column_double(2), repetitions.column_double(3)});
    }
    counters.bind(1, result_id);
    while (counters.step()) {
      const std::string name = counters.column_text(0);
      if (benchmark.counters.empty() || benchmark.counters.back().name != name) {
        benchmark.counters.push_back(runjson::CounterSeries{name, {}, {}});
      }
      benchmark.counters.back().values.push_back(counters.column_double(1));
      benchmark.counters.back().processes.push_back(counters.column_int(2));
    }
    run.index[benchmark.name] = run.benchmarks.size() - 1;
  }
  return run;
}

}  // namespace gptbench::history
