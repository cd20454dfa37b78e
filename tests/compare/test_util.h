// Helpers shared by the compare tests: fixture paths, running the CLI in
// process, and a temporary directory.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"

namespace gptbench::compare::test_util {

inline std::string data_path(const std::string& name) {
  return std::string(GPTBENCH_COMPARE_TEST_DATA) + "/data/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

inline CliResult run(const std::vector<std::string>& args, bool color_terminal = false) {
  std::vector<const char*> argv = {"gptbench-compare"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  std::ostringstream out;
  std::ostringstream err;
  CliResult result;
  result.code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err, color_terminal);
  result.out = out.str();
  result.err = err.str();
  return result;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gptbench-compare-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace gptbench::compare::test_util
