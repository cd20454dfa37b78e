// Writes a file so that the destination holds either its old content or the complete new
// content, never a prefix: the text goes to a temporary file in the same directory, is
// flushed to disk (fsync), and is renamed over the destination (rename(2) is atomic within
// one file system); the directory is synced so the rename survives a power cut.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace gptbench::runner {

// Throws std::runtime_error (naming the path and errno text) when any step fails; the
// temporary file is removed then. `between_writes` (tests only) is called after the first
// half of the text is written, to interrupt a write.
void write_file_atomic(const std::string& path, std::string_view text,
                       const std::function<void()>& between_writes = {});

// The temporary name write_file_atomic uses for `path` in this process.
std::string temp_path_for(const std::string& path);

}  // namespace gptbench::runner
