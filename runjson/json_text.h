// Small text helpers around JSON input: Google Benchmark writes non-finite
// doubles as bare NaN / Infinity / -Infinity, which is not JSON; error
// messages need a line and column and must stay on one line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gptbench::runjson {

// Rewrites bare NaN, Infinity and -Infinity tokens outside strings into the
// strings "NaN", "Infinity", "-Infinity". Returns nullopt when there is none
// (the common case: no copy).
std::optional<std::string> quote_nonfinite_literals(std::string_view text);

// The double a quoted non-finite literal stands for, or nullopt.
std::optional<double> nonfinite_from_string(std::string_view text);

// 1-based line and column of a byte offset.
struct TextPosition {
  size_t line = 1;
  size_t column = 1;
};
TextPosition position_of(std::string_view text, size_t offset);

// Quotes a name for a one-line message: control characters escaped, long
// names shortened; with escape_non_ascii also bytes >= 0x80 (for text that
// may not be UTF-8, such as a parser's "last read" excerpt).
std::string printable(std::string_view text, size_t max_length = 120, bool escape_non_ascii = false);

}  // namespace gptbench::runjson
