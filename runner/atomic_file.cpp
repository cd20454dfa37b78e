#include "atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gptbench::runner {
namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

void write_all(int fd, std::string_view text, const std::string& tmp) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", tmp);
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string temp_path_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void write_file_atomic(const std::string& path, std::string_view text,
                       const std::function<void()>& between_writes) {
  const std::string tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp);
  try {
    const size_t half = text.size() / 2;
    write_all(fd, text.substr(0, half), tmp);
    if (between_writes) between_writes();
    write_all(fd, text.substr(half), tmp);
    if (::fsync(fd) != 0) fail("sync", tmp);
    if (::close(fd) != 0) {
      ::unlink(tmp.c_str());
      fail("close", tmp);
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail("rename " + tmp + " to", path);
  }
  const std::string dir = directory_of(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // best effort: some file systems refuse fsync on directories
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace gptbench::runner
