#include "child.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace gptbench::runner {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string signal_name(int signal) {
  switch (signal) {
    case SIGABRT: return "SIGABRT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    case SIGQUIT: return "SIGQUIT";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    default: return "signal " + std::to_string(signal);
  }
}

std::string describe(const ExitStatus& status) {
  if (!status.signaled) return "exit code " + std::to_string(status.code);
  std::string out = signal_name(status.signal);
  if (const char* text = ::strsignal(status.signal)) out += std::string(" (") + text + ")";
  return out;
}

ExitStatus exit_status_from_wait(int wait_status) {
  ExitStatus s;
  if (WIFSIGNALED(wait_status)) {
    s.signaled = true;
    s.signal = WTERMSIG(wait_status);
  } else if (WIFEXITED(wait_status)) {
    s.code = WEXITSTATUS(wait_status);
  }
  return s;
}

namespace {

// argv[0] as execve needs it: a name without '/' is looked up in PATH (before fork, so the
// child only makes async-signal-safe calls).
std::string resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

// The environment for execve: ours, with `overrides` ("NAME=value") added or replacing.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  auto overridden = [&](const std::string& entry) {
    const std::string name = entry.substr(0, entry.find('=') + 1);
    for (const std::string& o : overrides)
      if (o.compare(0, name.size(), name) == 0) return true;
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e)
    if (!overridden(*e)) env.emplace_back(*e);
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

}  // namespace

namespace {

// What the child reports through its status pipe when it fails before running the program.
struct StartFailure {
  int step = 0;  // kStepExec or kStepAffinity
  int error = 0;
};
constexpr int kStepExec = 0;
constexpr int kStepAffinity = 1;

}  // namespace

Child::Child(const std::vector<std::string>& argv, const ChildOptions& options) {
  if (argv.empty()) throw std::runtime_error("empty command");
  const std::string program = resolve_program(argv[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::vector<std::string> env_strings = child_environment(options.env);
  std::vector<char*> envp;
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : options.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE)
      throw std::runtime_error("CPU " + std::to_string(cpu) + " is out of range (0.." +
                               std::to_string(CPU_SETSIZE - 1) + ")");
    CPU_SET(cpu, &cpus);
  }
  const bool pin = !options.cpus.empty();
  int in[2] = {-1, -1}, out[2], err[2], status_pipe[2];
  if ((options.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) || ::pipe2(out, O_CLOEXEC) != 0 ||
      ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(status_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Own process group: a Ctrl-C on the terminal reaches the runner only, which decides when
    // the child stops. Killed if the runner dies (it could not clean up otherwise).
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    StartFailure failure;
    if (pin && ::sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
      failure = {kStepAffinity, errno};
      (void)!::write(status_pipe[1], &failure, sizeof failure);
      ::_exit(127);
    }
    if (options.stdin_pipe) {
      ::dup2(in[0], 0);
    } else {
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, 0);
    }
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(program.c_str(), args.data(), envp.data());
    failure = {kStepExec, errno};
    (void)!::write(status_pipe[1], &failure, sizeof failure);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also from the parent, so kill_group works before the child runs
  if (options.stdin_pipe) ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(status_pipe[1]);
  StartFailure failure;
  ssize_t got;
  while ((got = ::read(status_pipe[0], &failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  ::close(status_pipe[0]);
  in_fd_ = in[1];
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (got == static_cast<ssize_t>(sizeof failure)) {  // the program did not start
    wait();
    close_fd(in_fd_);
    close_fd(out_fd_);
    close_fd(err_fd_);
    if (failure.step == kStepAffinity)
      throw std::runtime_error("cannot pin " + argv[0] + " to the CPUs given: " + std::strerror(failure.error));
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(failure.error));
  }
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    kill_group(SIGKILL);
    wait();
  }
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
}

bool Child::write_stdin(std::string_view text) {
  if (in_fd_ < 0) return false;
  // A write to a pipe nobody reads raises SIGPIPE, which would end the runner: it is blocked
  // for the write, and one raised by it is taken off the pending set before unblocking.
  sigset_t pipe_set, old_mask, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  if (::sigpending(&pending) != 0) throw std::runtime_error(std::string("sigpending: ") + std::strerror(errno));
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  if (const int e = ::pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask); e != 0)
    throw std::runtime_error(std::string("pthread_sigmask: ") + std::strerror(e));
  bool ok = true;
  int write_errno = 0;
  while (!text.empty()) {
    const ssize_t put = ::write(in_fd_, text.data(), text.size());
    if (put < 0) {
      if (errno == EINTR) continue;
      ok = false;
      write_errno = errno;
      break;
    }
    text.remove_prefix(static_cast<size_t>(put));
  }
  if (!ok && write_errno == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    while (::sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  if (const int e = ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr); e != 0)
    throw std::runtime_error(std::string("pthread_sigmask: ") + std::strerror(e));
  if (!ok && write_errno != EPIPE)
    throw std::runtime_error(std::string("writing to the child's stdin: ") + std::strerror(write_errno));
  if (!ok) close_fd(in_fd_);
  return ok;
}

void Child::close_stdin() { close_fd(in_fd_); }

bool Child::pump(int timeout_ms, int wake_fd,
                 const std::function<void(const std::string&)>& on_stdout,
                 const std::function<void(const std::string&)>& on_stderr) {
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
  const int n = ::poll(fds, wake_fd >= 0 ? 3 : 2, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return true;  // a signal arrived: the caller re-checks its flags
    throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  }
  char buf[65536];
  int* fdp[2] = {&out_fd_, &err_fd_};
  for (int i = 0; i < 2; ++i) {
    if (*fdp[i] < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
    const ssize_t got = ::read(*fdp[i], buf, sizeof buf);
    if (got > 0) {
      const std::string chunk(buf, static_cast<size_t>(got));
      if (i == 0 && on_stdout) on_stdout(chunk);
      if (i == 1 && on_stderr) on_stderr(chunk);
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      close_fd(*fdp[i]);
    }
  }
  return out_fd_ >= 0 || err_fd_ >= 0;
}

void Child::kill_group(int signal) {
  if (pid_ > 0 && !reaped_) ::kill(-pid_, signal);
}

ExitStatus Child::wait() {
  if (pid_ <= 0 || reaped_) return status_;
  int ws = 0;
  while (::waitpid(pid_, &ws, 0) < 0) {
    if (errno != EINTR) {
      reaped_ = true;
      return status_;
    }
  }
  reaped_ = true;
  status_ = exit_status_from_wait(ws);
  return status_;
}

Captured run_captured(const std::vector<std::string>& argv, const ChildOptions& options) {
  Captured c;
  Child child(argv, options);
  while (child.pump(-1, -1, [&](const std::string& s) { c.out += s; },
                    [&](const std::string& s) { c.err += s; })) {
  }
  c.status = child.wait();
  return c;
}

}  // namespace gptbench::runner
