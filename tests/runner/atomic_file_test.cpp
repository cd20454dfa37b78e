#include "atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gptbench::runner {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gptbench_atomic_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "baseline.json").string();
    std::ofstream(path_) << kOld;
  }
  void TearDown() override { fs::remove_all(dir_); }
  size_t files_in_dir() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()));
  }
  static constexpr const char* kOld = "{\"old\": true}\n";
  fs::path dir_;
  std::string path_;
};

TEST_F(AtomicFile, ReplacesTheContent) {
  const std::string text(1 << 20, 'n');
  write_file_atomic(path_, text);
  EXPECT_EQ(slurp(path_), text);
  EXPECT_EQ(files_in_dir(), 1u);  // no temporary left
}

TEST_F(AtomicFile, FailureMidwayLeavesTheOldFileAndNoTemporary) {
  EXPECT_THROW(write_file_atomic(path_, std::string(1 << 20, 'n'),
                                 [] { throw std::runtime_error("disk full"); }),
               std::runtime_error);
  EXPECT_EQ(slurp(path_), kOld);
  EXPECT_EQ(files_in_dir(), 1u);
}

// The process is killed in the middle of writing: the destination still holds the whole old
// file (the half-written text is only in the temporary).
TEST_F(AtomicFile, KilledWriterNeverLeavesATruncatedDestination) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    write_file_atomic(path_, std::string(1 << 20, 'n'), [] { ::raise(SIGKILL); });
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(slurp(path_), kOld);
  // The half-written temporary is the only trace (named after the dead writer).
  const std::string tmp = path_ + ".tmp." + std::to_string(pid);
  ASSERT_TRUE(fs::exists(tmp));
  EXPECT_EQ(fs::file_size(tmp), (1u << 20) / 2);
}

TEST_F(AtomicFile, UnwritableDirectoryThrowsWithThePath) {
  try {
    write_file_atomic((dir_ / "no" / "such" / "dir.json").string(), "x");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/dir.json"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(path_), kOld);
}

}  // namespace
}  // namespace gptbench::runner
