// A child process with its stdout and stderr read through pipes, in its own process group so
// that a Ctrl-C on the terminal reaches the runner only (the runner decides when the child
// stops), and killed with its group when the runner gives up on it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gptbench::runner {

// How a child ended.
struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // terminating signal when signaled
  bool ok() const { return !signaled && code == 0; }
};

// "exit code 3", "SIGABRT (Aborted)", "SIGSEGV (Segmentation fault)".
std::string describe(const ExitStatus& status);
// "SIGSEGV" for 11, "signal 77" for unknown numbers.
std::string signal_name(int signal);
// Decodes a waitpid() status word.
ExitStatus exit_status_from_wait(int wait_status);

// How a child is started (the defaults: what gptbench-run needs).
struct ChildOptions {
  // stdin from a pipe the parent writes with write_stdin() (a resident worker's requests);
  // otherwise from /dev/null.
  bool stdin_pipe = false;
  // CPUs the child (and every thread it creates) may run on; empty: inherited.
  std::vector<int> cpus;
  // "NAME=value" entries added to (or replacing in) the inherited environment.
  std::vector<std::string> env;
};

class Child {
 public:
  // Starts argv[0] (searched in PATH when it has no '/').
  // Throws std::runtime_error when it cannot be started.
  explicit Child(const std::vector<std::string>& argv, const ChildOptions& options = {});
  ~Child();  // kills the group if still running
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits up to timeout_ms for output; calls on_stdout / on_stderr with what arrived.
  // Returns false once both pipes are closed (the child has exited or closed them).
  // `wake_fd` (>= 0) also ends the wait when readable (the runner's signal pipe).
  bool pump(int timeout_ms, int wake_fd, const std::function<void(const std::string&)>& on_stdout,
            const std::function<void(const std::string&)>& on_stderr);

  // Writes all of `text` to the child's stdin (ChildOptions::stdin_pipe). Returns false when
  // the child no longer reads it (closed or exited: EPIPE, without raising SIGPIPE here).
  bool write_stdin(std::string_view text);
  // Closes the child's stdin: end of input for it.
  void close_stdin();

  // Sends a signal to the child's process group.
  void kill_group(int signal);
  // Reaps the child (blocking); idempotent.
  ExitStatus wait();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  bool reaped_ = false;
  ExitStatus status_;
};

// Runs a command to completion, collecting stdout and stderr (for --benchmark_list_tests).
struct Captured {
  ExitStatus status;
  std::string out, err;
};
Captured run_captured(const std::vector<std::string>& argv, const ChildOptions& options = {});

}  // namespace gptbench::runner
