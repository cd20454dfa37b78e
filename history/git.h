// The commit and branch of the checkout the tool runs in, for `add` without --commit/--branch.
#pragma once

#include <string>

namespace gptbench::history {

// Output of `git <arguments>` in the current directory, trimmed; empty when git fails or the
// directory is not a checkout.
std::string git_output(const std::string& arguments);

std::string current_commit();  // HEAD's full hash, or "unknown"
std::string current_branch();  // the branch name, "HEAD" when detached, or "unknown"

}  // namespace gptbench::history
