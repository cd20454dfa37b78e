// One resident worker of gptbench-premerge (docs/premerge.md, "Worker protocol"): the suite
// binary started with --gptbench_worker=true, which answers one JSON request per line on its
// stdin with one JSON reply per line on its stdout. The client starts it (a Child in its own
// process group with a stdin pipe, optionally pinned to CPUs), waits for its ready line, sends
// one request at a time with a deadline, copies the worker's stderr to a log file, and kills
// the worker's process group when it exits or does not answer in time. Whether and when to
// start it again is the caller's decision.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child.h"

namespace gptbench::runner {

// The protocol version this client speaks (the ready line's "protocol").
constexpr int kWorkerProtocol = 1;

struct WorkerSpec {
  std::string label;              // "base" / "new": names the worker in messages and the log
  std::vector<std::string> argv;  // the binary, --gptbench_worker=true, its flags
  std::vector<int> cpus;          // CPUs to pin it to; empty: no pinning
  std::string log_path;           // its stderr, over every start (truncated when the client is made)
  double timeout_s = 120;         // for the ready line and for each reply
};

struct WorkerReady {
  nlohmann::json context = nlohmann::json::object();  // the ready line's "context"
  double startup_s = 0;  // as the worker reports it (process start to ready line); NaN if absent
  double wall_s = 0;     // measured here, from starting the process to its ready line
};

// A worker that did not reach its ready line; what() is one line saying why (exit status or
// timeout, and the last lines of its stderr).
class WorkerStartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ReplyStatus {
  kOk,        // a reply arrived (it may still say "ok": false)
  kExited,    // the worker ended before replying
  kTimedOut,  // no reply within the timeout: the worker was killed
};

struct WorkerReply {
  ReplyStatus status = ReplyStatus::kOk;
  nlohmann::json body;  // the reply object, when status is kOk
  double wall_s = 0;    // from sending the request to the reply (or the failure)
  // When the worker was lost: "SIGABRT (Aborted)", "exit code 3", "no reply within 120 s",
  // followed by "; last stderr line: ..." when it wrote one.
  std::string failure;
  bool answered() const { return status == ReplyStatus::kOk; }
};

class WorkerClient {
 public:
  // Opens (truncates) the log file; throws std::runtime_error when it cannot.
  explicit WorkerClient(WorkerSpec spec);
  ~WorkerClient();  // kills a running worker
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  const WorkerSpec& spec() const { return spec_; }
  bool running() const { return child_ != nullptr; }
  // Processes started so far (including ones that never became ready).
  size_t starts() const { return starts_; }

  // Starts a worker (none may be running) and waits for its ready line. Throws
  // WorkerStartError when it exits, fails to start, answers something else, or is not ready
  // within the timeout (the process is killed then).
  WorkerReady start();

  // Sends one request and waits for its reply line. When the worker exits or does not reply
  // in time, its process group is killed, running() turns false and the reply says why.
  WorkerReply request(const nlohmann::json& request);

  // Asks the worker to quit and waits briefly for it to exit; kills it if it does not.
  void stop();
  // Kills the worker's process group at once (no-op when none runs).
  void kill();

  // The end of the current (or last) worker's stderr.
  const std::string& stderr_tail() const { return stderr_tail_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class LineStatus { kLine, kExited, kTimedOut };
  struct Line {
    LineStatus status = LineStatus::kLine;
    nlohmann::json body;
  };

  // The next stdout line that is a JSON object, until `deadline`; other lines are logged and
  // skipped (the protocol allows nothing else on stdout).
  Line read_line(Clock::time_point deadline);
  // Kills the process group, reaps it and returns how it ended.
  ExitStatus finish();
  // How the worker ended (after finish()), with its last stderr line.
  std::string ended_reason(const ExitStatus& status) const;
  std::string with_last_stderr_line(std::string reason) const;
  void log(std::string_view text);

  WorkerSpec spec_;
  int log_fd_ = -1;
  std::unique_ptr<Child> child_;
  size_t starts_ = 0;
  std::string stdout_buffer_;
  std::string stderr_tail_;
};

}  // namespace gptbench::runner
