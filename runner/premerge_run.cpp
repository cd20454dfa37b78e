#include "premerge_run.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "cpu_list.h"
#include "names.h"
#include "premerge_output.h"
#include "premerge_progress.h"
#include "progress.h"
#include "compare/launch_axis.h"
#include "runjson/kernels_label.h"
#include "worker_client.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

// Restarts of one side that may fail in a row before its worker is given up on.
constexpr size_t kMaxFailedRestarts = 2;
// Requests of one benchmark that may lose a side's worker before that side is errored.
constexpr size_t kMaxWorkerLosses = 2;

// Google Benchmark's date format: 2026-11-22T02:22:39+00:00 (local time).
std::string iso_date_now() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  if (::localtime_r(&now, &local) == nullptr) return "";
  char buf[64];
  if (std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &local) == 0) return "";
  std::string date = buf;
  if (date.size() >= 5) date.insert(date.size() - 2, ":");  // +0000 -> +00:00
  return date;
}

std::string host_name() {
  char buf[256];
  if (::gethostname(buf, sizeof buf) != 0) return "";
  buf[sizeof buf - 1] = '\0';
  return buf;
}

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// "epoch 2/3: " when the check has several epochs, else "".
std::string epoch_prefix(size_t epoch, size_t epochs) {
  return epochs > 1 ? "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs) + ": " : "";
}

// One side's workers across the check: a fresh one at the start of each epoch, and restarts
// when a request lost it.
class SideWorker {
 public:
  SideWorker(WorkerSpec spec, WorkerRecord& record, PremergeConsole& console)
      : client_(std::move(spec)), record_(record), console_(console) {
    record_.argv = client_.spec().argv;
  }

  // Ends the current worker (quit, or killed when it does not go).
  void stop() { client_.stop(); }

  // The worker of epoch `epoch` (none may run). In the first epoch a failure throws
  // WorkerStartError; later it counts as a failed restart, and the side's benchmarks try again
  // (ensure_running) until the side is given up on.
  void start_epoch(size_t epoch, size_t epochs) {
    const double nan = std::nan("");
    record_.epoch_startup_s.push_back(nan);
    record_.epoch_start_wall_s.push_back(nan);
    if (!given_up_.empty()) return;
    ++record_.epoch_starts;
    try {
      const WorkerReady ready = client_.start();
      record_.starts = client_.starts();
      if (epoch == 0) {
        record_.context = ready.context;
        record_.startup_s = ready.startup_s;
        record_.start_wall_s = ready.wall_s;
      }
      record_.epoch_startup_s.back() = ready.startup_s;
      record_.epoch_start_wall_s.back() = ready.wall_s;
      failed_in_a_row_ = 0;
      console_.note(epoch_prefix(epoch, epochs) + client_.spec().label + " worker ready in " +
                    seconds_text(ready.wall_s) + " s");
    } catch (const WorkerStartError& e) {
      record_.starts = client_.starts();
      if (epoch == 0) throw;
      failed(e.what(), epoch_prefix(epoch, epochs) + client_.spec().label + " worker could not start: ");
    }
  }

  // Starts a worker if none runs. Returns "" when one runs, else why it could not start.
  std::string ensure_running() {
    if (client_.running()) return "";
    if (!given_up_.empty()) return given_up_;
    try {
      const WorkerReady ready = client_.start();
      record_.starts = client_.starts();
      failed_in_a_row_ = 0;
      console_.note(client_.spec().label + " worker restarted (ready in " + seconds_text(ready.wall_s) + " s)");
      return "";
    } catch (const WorkerStartError& e) {
      record_.starts = client_.starts();
      return failed(e.what(), client_.spec().label + " worker could not be restarted: ");
    }
  }

  WorkerClient& client() { return client_; }

 private:
  // Records a failed start (after the first); returns why, "given up" after too many in a row.
  std::string failed(std::string why, const std::string& note) {
    record_.start_failures.push_back(why);
    if (++failed_in_a_row_ >= kMaxFailedRestarts) {
      given_up_ = why + " (given up after " + std::to_string(failed_in_a_row_) + " failed restarts)";
      why = given_up_;
    }
    console_.note(note + why);
    return why;
  }

  WorkerClient client_;
  WorkerRecord& record_;
  PremergeConsole& console_;
  size_t failed_in_a_row_ = 0;
  std::string given_up_;
};

// The benchmarks of the check, sampled one after the other.
class Check {
 public:
  Check(const PremergeConfig& config, PremergeRecord& record, std::array<SideWorker*, 2> workers,
        PremergeConsole& console, Clock::time_point started)
      : config_(config), record_(record), workers_(workers), console_(console), started_(started) {}

  // Benchmark `index`'s part in epoch `epoch`: prepared again in this epoch's workers, then
  // sampled in rounds until check_stop ends the epoch's part (or, in the last epoch, the
  // benchmark). False when it has nothing to do in this epoch (stopped, or errored on a side
  // whose other side has its samples).
  bool run_epoch(size_t index, size_t epoch) {
    BenchmarkRecord& b = record_.benchmarks[index];
    if (!wants_sample(b, Side::kBase, epoch) && !wants_sample(b, Side::kNew, epoch)) return false;
    const auto begun = Clock::now();
    const uint64_t seed = record_.settings.seed;
    SideOrder prepare_sides = prepare_order(seed, index);
    if (epoch % 2 == 1) std::swap(prepare_sides[0], prepare_sides[1]);
    for (Side s : prepare_sides)
      if (wants_sample(b, s, epoch)) (void)prepare(b, s);
    const StopSettings stop = limits(b, epoch);
    const double sampled_before = b.sampling_s;
    const auto sampling = Clock::now();
    for (;;) {
      if (b.on_both_sides()) {
        for (Side s : round_order(seed, index, b.rounds))
          if (wants_sample(b, s, epoch)) take_sample(b, s, epoch);
      } else {
        for (Side s : kSides)
          if (wants_sample(b, s, epoch)) take_sample(b, s, epoch);
      }
      ++b.rounds;
      const double elapsed = sampled_before + seconds_since(sampling);
      if (b.on_both_sides() && !any_finished(b)) {
        const StopCheck check = check_stop(samples_of(b.side(Side::kBase)), samples_of(b.side(Side::kNew)), stop,
                                           epoch, elapsed);
        if (check.compared) b.comparison = check.comparison;
        if (check.reason != StopReason::kContinue) {
          if (check.reason != StopReason::kEpochDone) b.stop = check.reason;
          break;
        }
      } else {
        // One side only (listed there alone, or the other errored): enough for the file.
        b.comparison.reset();
        b.stop = finished_reason(b);
        if (!wants_sample(b, Side::kBase, epoch) && !wants_sample(b, Side::kNew, epoch)) break;
        if (elapsed >= config_.max_seconds) break;
      }
      console_.update(line(index, b, "sampling", epoch, epoch * record_.benchmarks.size() + index));
    }
    b.sampling_s = sampled_before + seconds_since(sampling);
    b.wall_s += seconds_since(begun);
    return true;
  }

  size_t epochs() const { return std::max<size_t>(config_.processes, 1); }

  // The stopping rule's settings for b in epoch `epoch`. An extra epoch (after the --processes
  // ones) is the last so far: it takes min_samples a side, and a further share of max_seconds.
  StopSettings limits(const BenchmarkRecord& b, size_t epoch) const {
    StopSettings stop;
    stop.min_samples = config_.min_samples;
    stop.max_samples = config_.max_samples;
    stop.max_seconds = config_.max_seconds;
    stop.alpha = b.alpha;
    stop.threshold = b.threshold;
    stop.processes = epochs();
    if (epoch >= epochs()) {
      stop.processes = epoch + 1;
      stop.max_samples = config_.min_samples * stop.processes;
      stop.max_seconds = config_.max_seconds * static_cast<double>(stop.processes) / static_cast<double>(epochs());
    }
    return stop;
  }

  // Whether benchmark `index`, after the --processes epochs, gets another one: it is gated
  // (not a launch:eager row whose launch:graph twin is in the check), ran on both sides, and
  // stopped undecided for want of processes (premerge_stop.h: wants_more_processes).
  bool wants_extra_epoch(size_t index) const {
    const BenchmarkRecord& b = record_.benchmarks[index];
    if (!b.on_both_sides() || any_finished(b) || !b.comparison) return false;
    if (const std::string twin = compare::graph_sibling(b.name); !twin.empty() && listed_names_.count(twin)) return false;
    return wants_more_processes(b.stop, *b.comparison);
  }

  // Benchmark `index` in extra epoch `epoch` (>= epochs()): sampled again from where it stopped.
  bool run_extra_epoch(size_t index, size_t epoch) {
    record_.benchmarks[index].stop = StopReason::kContinue;
    return run_epoch(index, epoch);
  }

  void note_listed(const std::vector<BenchmarkRecord>& benchmarks) {
    for (const BenchmarkRecord& b : benchmarks) listed_names_.insert(b.name);
  }

  // The benchmark's progress line in epoch `epoch`; `done` (benchmark, epoch) parts are finished.
  std::string line(size_t index, const BenchmarkRecord& b, const std::string& status, size_t epoch,
                   size_t done) const {
    BenchmarkLine l;
    l.position = index + 1;
    l.total = record_.benchmarks.size();
    l.name = b.name;
    if (epochs() > 1 || epoch > 0) {
      l.epoch = epoch + 1;
      l.epochs = std::max(epochs(), epoch + 1);
    }
    if (b.side(Side::kBase).listed) l.base_samples = b.side(Side::kBase).real_ns.size();
    if (b.side(Side::kNew).listed) l.new_samples = b.side(Side::kNew).real_ns.size();
    if (b.comparison) {
      l.change = b.comparison->change;
      l.uncertainty = b.comparison->uncertainty;
    }
    l.status = status;
    l.elapsed_s = seconds_since(started_);
    l.eta_s = estimate_left(done, l.total * epochs(), l.elapsed_s);
    return format_benchmark_line(l);
  }

 private:
  WorkerClient& client(Side s) { return workers_[index_of(s)]->client(); }

  static bool any_finished(const BenchmarkRecord& b) {
    return b.side(Side::kBase).finished() || b.side(Side::kNew).finished();
  }

  static StopReason finished_reason(const BenchmarkRecord& b) {
    for (Side s : kSides)
      if (b.side(s).finished()) return b.side(s).skipped ? StopReason::kSkipped : StopReason::kLost;
    return StopReason::kOneSide;
  }

  // Whether side s takes another sample in epoch `epoch`: up to the samples per process while
  // both sides run and the benchmark has not stopped, else up to min_samples in all (a
  // benchmark on one side only, or whose other side errored).
  bool wants_sample(const BenchmarkRecord& b, Side s, size_t epoch) const {
    const SideRecord& r = b.side(s);
    if (!r.listed || r.finished()) return false;
    const SideRecord& o = b.side(other_side(s));
    if (!o.listed || o.finished()) return r.real_ns.size() < config_.min_samples;
    if (b.stop != StopReason::kContinue) return false;
    return r.samples_in(epoch) < samples_per_process(limits(b, epoch));
  }

  static SideSamples samples_of(const SideRecord& r) { return SideSamples{r.real_ns, r.process_index}; }

  // A reply that ends the side's part in this benchmark: "ok": false, or "skipped".
  static bool ends_side(SideRecord& r, const json& body) {
    if (body.value("ok", false) != true) {
      const auto e = body.find("error");
      r.error = "worker error: " + (e != body.end() && e->is_string() ? e->get<std::string>() : body.dump());
      return true;
    }
    if (const auto skipped = body.find("skipped"); skipped != body.end()) {
      r.skipped = true;
      r.error = skipped->is_string() ? skipped->get<std::string>() : skipped->dump();
      if (r.error.empty()) r.error = "skipped";
      return true;
    }
    return false;
  }

  // After a request lost side s's worker: counts it; the second loss errors the side.
  void worker_lost(BenchmarkRecord& b, Side s, const WorkerReply& reply, const char* request, bool sample) {
    SideRecord& r = b.side(s);
    ++r.worker_losses;
    if (sample) ++r.lost;
    const std::string who = std::string(side_name(s)) + " worker";
    if (r.worker_losses >= kMaxWorkerLosses) {
      r.error = "worker crashed twice: " + reply.failure;
      console_.note(who + " lost again in " + b.name + " (" + reply.failure + "): recorded as errored");
    } else {
      console_.note(who + " lost during " + request + " of " + b.name + " (" + reply.failure +
                    (sample ? "); sample lost; restarting it" : "); restarting it"));
    }
  }

  // Prepares b on side s (starting the worker when none runs); false when the side ended.
  bool prepare(BenchmarkRecord& b, Side s) {
    SideRecord& r = b.side(s);
    while (!r.finished()) {
      if (const std::string why = workers_[index_of(s)]->ensure_running(); !why.empty()) {
        r.error = "worker could not be restarted: " + why;
        return false;
      }
      const WorkerReply reply = client(s).request(json{{"cmd", "prepare"}, {"name", b.name}});
      if (!reply.answered()) {
        worker_lost(b, s, reply, "prepare", false);
        continue;
      }
      if (ends_side(r, reply.body)) return false;
      r.prepare_s.push_back(reply.wall_s);
      r.prepared = reply.body;
      prepared_in_start_[index_of(s)] = client(s).starts();
      return true;
    }
    return false;
  }

  // One sample of b on side s in epoch `epoch`; a lost worker is restarted and the case
  // prepared again.
  void take_sample(BenchmarkRecord& b, Side s, size_t epoch) {
    SideRecord& r = b.side(s);
    if (!client(s).running() || prepared_in_start_[index_of(s)] != client(s).starts())
      if (!prepare(b, s)) return;
    const WorkerReply reply = client(s).request(
        json{{"cmd", "sample"}, {"name", b.name}, {"count", 1}, {"min_time", config_.sample_time_s}});
    if (!reply.answered()) {
      worker_lost(b, s, reply, "a sample", true);
      if (!r.finished()) (void)prepare(b, s);
      return;
    }
    if (ends_side(r, reply.body)) return;
    if (std::string problem = add_samples(r, reply.body, epoch); !problem.empty())
      r.error = "worker error: malformed sample reply (" + problem + ")";
  }

  // The row label of a worker's prepare reply: its "kernels" (--gptbench_kernels) as
  // runjson/kernels_label.h writes them, or "" when it lists none.
  static std::string kernels_label_of(const json& prepared) {
    const auto k = prepared.find("kernels");
    if (k == prepared.end() || !k->is_array() || k->empty()) return "";
    std::vector<std::string> names;
    for (const json& n : *k)
      if (n.is_string()) names.push_back(n.get<std::string>());
    return names.empty() ? "" : runjson::kernels_label(names);
  }

  // Appends the samples of a reply; "" or what is wrong with it.
  static std::string add_samples(SideRecord& r, const json& body, size_t epoch) {
    const auto samples = body.find("samples");
    const auto calls = body.find("calls");
    if (samples == body.end() || !samples->is_array() || samples->empty()) return "no samples";
    if (calls == body.end() || !calls->is_array() || calls->size() != samples->size())
      return "calls do not match samples";
    for (size_t i = 0; i < samples->size(); ++i) {
      const json& t = (*samples)[i];
      const json& n = (*calls)[i];
      if (!t.is_number() || !(t.get<double>() >= 0) || !std::isfinite(t.get<double>()))
        return "sample " + t.dump() + " is not a time";
      if (!n.is_number_integer() || n.get<int64_t>() < 1) return "calls " + n.dump() + " is not a count";
    }
    const auto counters = body.find("counters");
    const json counter_values = counters != body.end() && counters->is_object() ? *counters : json::object();
    for (size_t i = 0; i < samples->size(); ++i) {
      r.real_ns.push_back((*samples)[i].get<double>() * 1e9);
      r.process_index.push_back(static_cast<int64_t>(epoch));
      r.calls.push_back((*calls)[i].get<int64_t>());
      r.counters.push_back(counter_values);
      r.labels.push_back(kernels_label_of(r.prepared));
    }
    return "";
  }

  const PremergeConfig& config_;
  PremergeRecord& record_;
  std::array<SideWorker*, 2> workers_;
  PremergeConsole& console_;
  Clock::time_point started_;
  std::array<size_t, 2> prepared_in_start_{0, 0};  // the worker start a side's case was prepared in
  std::unordered_set<std::string> listed_names_;   // every benchmark of the check
};

// The names a worker lists for the filter; throws std::runtime_error with a one-line reason.
std::vector<std::string> list_names(WorkerClient& client, const std::string& filter) {
  const WorkerReply reply = client.request(json{{"cmd", "list"}, {"filter", filter}});
  if (!reply.answered()) throw std::runtime_error("lost while listing the benchmarks: " + reply.failure);
  if (reply.body.value("ok", false) != true)
    throw std::runtime_error("cannot list the benchmarks: " + reply.body.value("error", reply.body.dump()));
  const auto names = reply.body.find("names");
  if (names == reply.body.end() || !names->is_array())
    throw std::runtime_error("its list reply has no 'names' array");
  std::vector<std::string> out;
  for (const json& n : *names) {
    if (!n.is_string()) throw std::runtime_error("its list reply holds a name that is not a string: " + n.dump());
    out.push_back(n.get<std::string>());
  }
  return out;
}

// The union of both lists (base's order, then new-only names) as benchmark records, with
// added/removed and the number of benchmarks compared.
void plan_benchmarks(const PremergeConfig& config, PremergeRecord& record, const std::vector<std::string>& base,
                     const std::vector<std::string>& contender) {
  const std::unordered_set<std::string> in_base(base.begin(), base.end());
  const std::unordered_set<std::string> in_new(contender.begin(), contender.end());
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const std::vector<std::string>* list : {&base, &contender})
    for (const std::string& n : *list)
      if (seen.insert(n).second) names.push_back(n);
  std::unordered_map<std::string, std::pair<int64_t, int64_t>> position;
  const std::vector<Family> families = group_families(names);
  for (size_t f = 0; f < families.size(); ++f)
    for (size_t i = 0; i < families[f].benchmarks.size(); ++i)
      position[families[f].benchmarks[i]] = {static_cast<int64_t>(f), static_cast<int64_t>(i)};
  for (const std::string& n : names) {
    BenchmarkRecord b;
    b.name = n;
    std::tie(b.family_index, b.per_family_instance_index) = position[n];
    b.side(Side::kBase).listed = in_base.count(n) > 0;
    b.side(Side::kNew).listed = in_new.count(n) > 0;
    b.threshold = config.thresholds.for_name(n);
    if (!b.side(Side::kNew).listed) record.removed.push_back(n);
    if (!b.side(Side::kBase).listed) record.added.push_back(n);
    if (b.on_both_sides()) ++record.compared;
    record.benchmarks.push_back(std::move(b));
  }
  const double alpha = config.alpha / static_cast<double>(std::max<size_t>(record.compared, 1));
  for (BenchmarkRecord& b : record.benchmarks) b.alpha = alpha;
}

std::string totals_text(const PremergeRecord& record) {
  std::map<std::string, size_t> stops;
  for (const BenchmarkRecord& b : record.benchmarks) ++stops[to_string(b.stop)];
  std::string text;
  for (const auto& [reason, count] : stops) text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + reason;
  return text;
}

}  // namespace

std::vector<std::string> worker_argv(const PremergeConfig& config, Side side) {
  std::vector<std::string> argv = {side == Side::kBase ? config.base_bin : config.new_bin, "--gptbench_worker=true"};
  argv.insert(argv.end(), config.worker_args.begin(), config.worker_args.end());
  const std::vector<std::string>& own = side == Side::kBase ? config.base_args : config.new_args;
  argv.insert(argv.end(), own.begin(), own.end());
  return argv;
}

int run_premerge(const PremergeConfig& config, PremergeRecord* record_out) {
  const auto started = Clock::now();
  PremergeConsole console(config.live_progress);
  PremergeRecord record;
  PremergeSettings& s = record.settings;
  s.filter = config.filter;
  s.alpha = config.alpha;
  s.default_threshold = config.thresholds.default_threshold();
  s.threshold_prefixes = config.thresholds.prefixes();
  s.min_samples = config.min_samples;
  s.max_samples = config.max_samples;
  s.processes = std::max<size_t>(config.processes, 1);
  s.max_processes = std::max(config.max_processes, s.processes);
  s.extra_seconds = config.extra_seconds;
  {
    StopSettings limits;
    limits.min_samples = config.min_samples;
    limits.max_samples = config.max_samples;
    limits.processes = s.processes;
    s.samples_per_process = samples_per_process(limits);
  }
  s.sample_time_s = config.sample_time_s;
  s.max_seconds = config.max_seconds;
  s.timeout_s = config.timeout_s;
  s.seed = config.seed ? *config.seed : random_seed();
  s.cpus = format_cpu_list(config.cpus);
  record.date = iso_date_now();
  record.host_name = host_name();
  const auto done = [&](int code) {
    if (record_out) *record_out = record;
    return code;
  };

  std::error_code ec;
  std::filesystem::create_directories(config.out_dir, ec);
  if (ec) {
    console.note("cannot create " + config.out_dir + ": " + ec.message());
    return done(2);
  }
  try {
    std::array<std::unique_ptr<SideWorker>, 2> workers;
    for (Side side : kSides) {
      WorkerSpec spec;
      spec.label = side_name(side);
      spec.argv = worker_argv(config, side);
      spec.cpus = config.cpus;
      spec.log_path = config.out_dir + "/" + side_name(side) + "-worker.log";
      spec.timeout_s = config.timeout_s;
      workers[index_of(side)] = std::make_unique<SideWorker>(spec, record.worker(side), console);
    }
    Check check(config, record, {workers[0].get(), workers[1].get()}, console, started);
    const size_t epochs = check.epochs();
    // This epoch's workers: the previous ones quit first, then one side after the other (so
    // their start-up times do not overlap), base first in even epochs, new first in odd. False
    // when one could not start in the first epoch (the check cannot run).
    const auto start_workers = [&](size_t epoch) {
      for (auto& worker : workers) worker->stop();
      const SideOrder start_order = epoch % 2 == 0 ? SideOrder{Side::kBase, Side::kNew} : SideOrder{Side::kNew, Side::kBase};
      for (Side side : start_order) {
        try {
          workers[index_of(side)]->start_epoch(epoch, std::max(epochs, epoch + 1));
        } catch (const WorkerStartError& e) {
          const WorkerSpec& spec = workers[index_of(side)]->client().spec();
          console.note(std::string(side_name(side)) + " worker (" + spec.argv.front() + ") could not start: " +
                       e.what() + " (its stderr: " + spec.log_path + ")");
          return false;
        }
      }
      return true;
    };
    // Benchmark i's line once its part in `epoch` is done.
    const auto finish_line = [&](size_t i, size_t epoch, size_t done_parts) {
      const BenchmarkRecord& b = record.benchmarks[i];
      std::string status = to_string(b.stop == StopReason::kContinue ? StopReason::kEpochDone : b.stop);
      for (Side side : kSides)
        if (b.side(side).finished()) status += std::string("; ") + side_name(side) + ": " + b.side(side).error;
      console.finish(check.line(i, b, status, epoch, done_parts));
    };
    for (size_t epoch = 0; epoch < epochs; ++epoch) {
      // 1. This epoch's workers.
      if (!start_workers(epoch)) return done(2);

      if (epoch == 0) {
        // 2. What each side lists.
        std::array<std::vector<std::string>, 2> listed;
        for (Side side : kSides) {
          try {
            listed[index_of(side)] = list_names(workers[index_of(side)]->client(), config.filter);
          } catch (const std::runtime_error& e) {
            console.note(std::string(side_name(side)) + " worker " + e.what());
            return done(2);
          }
        }
        plan_benchmarks(config, record, listed[0], listed[1]);
        if (record.benchmarks.empty()) {
          console.note("no benchmark matches the filter '" + config.filter + "'");
          return done(2);
        }
        if (!record.added.empty() || !record.removed.empty())
          console.note(std::to_string(record.removed.size()) + " benchmarks listed by base only, " +
                       std::to_string(record.added.size()) + " by new only: sampled on their side alone");
      }

      // 3. Each benchmark, interleaved between the sides.
      const size_t n = record.benchmarks.size();
      if (epoch == 0) check.note_listed(record.benchmarks);
      for (size_t i = 0; i < n; ++i)
        if (check.run_epoch(i, epoch)) finish_line(i, epoch, epoch * n + i + 1);
    }
    // 4. Extra epochs, up to --max-processes and --extra-seconds, for the benchmarks whose
    // processes' medians alone left them undecided: fresh workers, those benchmarks only.
    const auto extra_started = Clock::now();
    const auto extra_time_left = [&] { return seconds_since(extra_started) < config.extra_seconds; };
    for (size_t epoch = epochs; epoch < config.max_processes && extra_time_left(); ++epoch) {
      std::vector<size_t> wanted;
      for (size_t i = 0; i < record.benchmarks.size(); ++i)
        if (check.wants_extra_epoch(i)) wanted.push_back(i);
      if (wanted.empty()) break;
      console.note("extra epoch " + std::to_string(epoch + 1) + ": " + std::to_string(wanted.size()) +
                   (wanted.size() == 1 ? " benchmark" : " benchmarks") +
                   " undecided for their processes' spread, with fresh workers");
      if (!start_workers(epoch)) break;
      ++record.extra_epochs;
      for (size_t k = 0; k < wanted.size() && extra_time_left(); ++k)
        if (check.run_extra_epoch(wanted[k], epoch)) finish_line(wanted[k], epoch, k + 1);
    }
    record.extra_s = seconds_since(extra_started);
    for (auto& worker : workers) worker->stop();
  } catch (const std::exception& e) {
    console.note(e.what());
    return done(2);
  }

  // 4. The files.
  record.wall_s = seconds_since(started);
  try {
    write_premerge_outputs(record, config.out_dir);
  } catch (const std::exception& e) {
    console.note(e.what());
    return done(2);
  }
  const size_t n = record.benchmarks.size();
  console.note(std::to_string(n) + (n == 1 ? " benchmark (" : " benchmarks (") + totals_text(record) + ") in " +
               format_duration(record.wall_s) + "; wrote base.json, new.json and premerge.json in " +
               config.out_dir + "; gate: gptbench-compare benchmarks " + side_output_path(config.out_dir, Side::kBase) +
               " " + side_output_path(config.out_dir, Side::kNew));
  return done(0);
}

}  // namespace gptbench::runner
