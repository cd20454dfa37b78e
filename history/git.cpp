#include "git.h"

#include <cstdio>
#include <memory>

namespace gptbench::history {

std::string git_output(const std::string& arguments) {
  const std::string command = "git " + arguments + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe.get())) output += buffer;
  if (pclose(pipe.release()) != 0) return "";
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  return output;
}

std::string current_commit() {
  const std::string commit = git_output("rev-parse HEAD");
  return commit.empty() ? "unknown" : commit;
}

std::string current_branch() {
  const std::string branch = git_output("rev-parse --abbrev-ref HEAD");
  return branch.empty() ? "unknown" : branch;
}

}  // namespace gptbench::history
