#include "worker_client.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>

#include "stderr_tail.h"

namespace gptbench::runner {
namespace {

using nlohmann::json;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Milliseconds left until `deadline` for poll(), rounded up, at least 0.
int millis_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > INT_MAX ? INT_MAX : static_cast<int>(left.count());
}

std::chrono::steady_clock::time_point deadline_after(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A reply line shortened for a message.
std::string shortened(const std::string& text) { return text.size() > 200 ? text.substr(0, 200) + "..." : text; }

constexpr double kQuitWait_s = 5;

}  // namespace

WorkerClient::WorkerClient(WorkerSpec spec) : spec_(std::move(spec)) {
  log_fd_ = ::open(spec_.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd_ < 0)
    throw std::runtime_error("cannot open " + spec_.log_path + ": " + std::strerror(errno));
}

WorkerClient::~WorkerClient() {
  kill();
  if (log_fd_ >= 0) ::close(log_fd_);
}

void WorkerClient::log(std::string_view text) {
  while (!text.empty()) {
    const ssize_t put = ::write(log_fd_, text.data(), text.size());
    if (put < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("writing " + spec_.log_path + ": " + std::strerror(errno));
    }
    text.remove_prefix(static_cast<size_t>(put));
  }
}

WorkerReady WorkerClient::start() {
  if (child_) throw std::logic_error("WorkerClient::start: the " + spec_.label + " worker is running");
  ++starts_;
  stdout_buffer_.clear();
  stderr_tail_.clear();
  log("--- gptbench-premerge: start " + std::to_string(starts_) + " of the " + spec_.label +
      " worker: " + joined(spec_.argv) + "\n");
  const auto started = Clock::now();
  ChildOptions options;
  options.stdin_pipe = true;
  options.cpus = spec_.cpus;
  try {
    child_ = std::make_unique<Child>(spec_.argv, options);
  } catch (const std::exception& e) {
    log(std::string("--- gptbench-premerge: ") + e.what() + "\n");
    throw WorkerStartError(e.what());
  }
  const Line line = read_line(deadline_after(spec_.timeout_s));
  const auto fail = [&](const std::string& why) {
    (void)finish();
    std::string reason = why;
    if (const std::string lines = last_stderr_lines(stderr_tail_, 3); !lines.empty())
      reason += "; last stderr lines: " + lines;
    log("--- gptbench-premerge: " + reason + "\n");
    return WorkerStartError(reason);
  };
  if (line.status == LineStatus::kTimedOut)
    throw fail("no ready line within " + seconds_text(spec_.timeout_s) + " s (killed)");
  if (line.status == LineStatus::kExited) {
    const ExitStatus status = finish();
    std::string reason = "ended with " + describe(status) + " before its ready line";
    if (const std::string lines = last_stderr_lines(stderr_tail_, 3); !lines.empty())
      reason += "; last stderr lines: " + lines;
    log("--- gptbench-premerge: " + reason + "\n");
    throw WorkerStartError(reason);
  }
  const json& body = line.body;
  if (body.value("ok", false) != true)
    throw fail("its first line is an error: " + shortened(body.value("error", body.dump())));
  if (body.value("event", "") != "ready")
    throw fail("its first line is not the ready line: " + shortened(body.dump()));
  const auto protocol = body.find("protocol");
  if (protocol == body.end() || !protocol->is_number_integer() || protocol->get<int>() != kWorkerProtocol)
    throw fail("it speaks protocol " + (protocol == body.end() ? std::string("(none)") : protocol->dump()) +
               "; gptbench-premerge speaks " + std::to_string(kWorkerProtocol));
  WorkerReady ready;
  ready.wall_s = seconds_since(started);
  if (const auto c = body.find("context"); c != body.end() && c->is_object()) ready.context = *c;
  const auto s = body.find("startup_s");
  ready.startup_s = s != body.end() && s->is_number() ? s->get<double>() : std::nan("");
  return ready;
}

WorkerReply WorkerClient::request(const json& req) {
  if (!child_) throw std::logic_error("WorkerClient::request: the " + spec_.label + " worker is not running");
  WorkerReply reply;
  const auto sent = Clock::now();
  // A worker that no longer reads its stdin has exited (or is exiting): read_line sees that.
  (void)child_->write_stdin(req.dump() + "\n");
  Line line = read_line(deadline_after(spec_.timeout_s));
  reply.wall_s = seconds_since(sent);
  switch (line.status) {
    case LineStatus::kLine:
      reply.body = std::move(line.body);
      return reply;
    case LineStatus::kExited: {
      reply.status = ReplyStatus::kExited;
      reply.failure = ended_reason(finish());
      break;
    }
    case LineStatus::kTimedOut:
      reply.status = ReplyStatus::kTimedOut;
      (void)finish();
      reply.failure = with_last_stderr_line("no reply within " + seconds_text(spec_.timeout_s) + " s (killed)");
      break;
  }
  log("--- gptbench-premerge: lost the worker during " + shortened(req.dump()) + ": " + reply.failure + "\n");
  return reply;
}

void WorkerClient::stop() {
  if (!child_) return;
  if (child_->write_stdin(json{{"cmd", "quit"}}.dump() + "\n")) {
    const auto deadline = deadline_after(std::min(spec_.timeout_s, kQuitWait_s));
    (void)read_line(deadline);  // its {"ok": true}
    child_->close_stdin();
    const auto on_out = [&](const std::string& s) { stdout_buffer_ += s; };
    const auto on_err = [&](const std::string& s) {
      log(s);
      append_tail(stderr_tail_, s);
    };
    while (Clock::now() < deadline && child_->pump(millis_until(deadline), -1, on_out, on_err)) {
    }
  }
  (void)finish();
}

void WorkerClient::kill() {
  if (child_) (void)finish();
}

ExitStatus WorkerClient::finish() {
  // The whole group: whatever the worker started goes with it.
  child_->kill_group(SIGKILL);
  const ExitStatus status = child_->wait();
  child_.reset();
  return status;
}

std::string WorkerClient::with_last_stderr_line(std::string reason) const {
  if (const std::string line = last_stderr_line(stderr_tail_); !line.empty())
    reason += "; last stderr line: " + line;
  return reason;
}

std::string WorkerClient::ended_reason(const ExitStatus& status) const {
  return with_last_stderr_line(describe(status));
}

WorkerClient::Line WorkerClient::read_line(Clock::time_point deadline) {
  const auto on_out = [&](const std::string& s) { stdout_buffer_ += s; };
  const auto on_err = [&](const std::string& s) {
    log(s);
    append_tail(stderr_tail_, s);
  };
  bool open = true;
  for (;;) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string text = stdout_buffer_.substr(0, newline);
      stdout_buffer_.erase(0, newline + 1);
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (text.find_first_not_of(" \t") == std::string::npos) continue;
      json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (body.is_object()) return Line{LineStatus::kLine, std::move(body)};
      log("--- gptbench-premerge: ignored a stdout line that is not a JSON object: " + shortened(text) + "\n");
      continue;
    }
    if (!open) return Line{LineStatus::kExited, {}};
    const int wait_ms = millis_until(deadline);
    if (wait_ms <= 0) return Line{LineStatus::kTimedOut, {}};
    open = child_->pump(wait_ms, -1, on_out, on_err);
  }
}

}  // namespace gptbench::runner
