// What a child's stderr says about why it ended: the end of its stderr is kept (a few KiB), and
// its last meaningful line (or lines) is quoted in the reason given for a crash or a failed start.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gptbench::runner {

// Appends `chunk` to `tail`, keeping only its last `max_bytes`.
void append_tail(std::string& tail, std::string_view chunk, size_t max_bytes = 8192);

// Whether a line belongs to Google Benchmark's context banner or warnings, which say nothing
// about a crash ("Run on (...)", "CPU Caches:", "***WARNING***", the date line, ...).
bool is_gb_banner(const std::string& line);

// Last non-empty line of a child's stderr that is not the banner, shortened, for a reason;
// a sanitizer's "SUMMARY:" line when there is one (it names the bug; the last line does not).
std::string last_stderr_line(const std::string& tail);

// The last `count` non-empty lines that are not the banner, oldest first, joined with " | "
// (each shortened), for a one-line message about a child that could not start.
std::string last_stderr_lines(const std::string& tail, size_t count);

}  // namespace gptbench::runner
