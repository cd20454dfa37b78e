#include "child.h"

#include <fcntl.h>
#include <poll.h>
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

}  // namespace

Child::Child(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::runtime_error("empty command");
  const std::string program = resolve_program(argv[0]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out[2], err[2], status_pipe[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(status_pipe, O_CLOEXEC) != 0)
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
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execve(program.c_str(), args.data(), environ);
    const int e = errno;
    (void)!::write(status_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also from the parent, so kill_group works before the child runs
  ::close(out[1]);
  ::close(err[1]);
  ::close(status_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = ::read(status_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  ::close(status_pipe[0]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {  // exec failed
    wait();
    close_fd(out_fd_);
    close_fd(err_fd_);
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(exec_errno));
  }
}

Child::~Child() {
  if (pid_ > 0 && !reaped_) {
    kill_group(SIGKILL);
    wait();
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
}

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

Captured run_captured(const std::vector<std::string>& argv) {
  Captured c;
  Child child(argv);
  while (child.pump(-1, -1, [&](const std::string& s) { c.out += s; },
                    [&](const std::string& s) { c.err += s; })) {
  }
  c.status = child.wait();
  return c;
}

}  // namespace gptbench::runner
