#include "runjson/json_text.h"

#include <cstdio>
#include <limits>

namespace gptbench::runjson {
namespace {

constexpr std::string_view kNonfiniteTokens[] = {"-Infinity", "Infinity", "NaN"};

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::optional<std::string> quote_nonfinite_literals(std::string_view text) {
  if (text.find("NaN") == std::string_view::npos &&
      text.find("Infinity") == std::string_view::npos) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() + 64);
  bool in_string = false;
  bool changed = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < text.size()) {
        out.push_back(text[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    bool replaced = false;
    if (i == 0 || !is_identifier_char(text[i - 1])) {
      for (std::string_view token : kNonfiniteTokens) {
        const size_t end = i + token.size();
        if (text.compare(i, token.size(), token) == 0 &&
            (end == text.size() || !is_identifier_char(text[end]))) {
          out.push_back('"');
          out.append(token);
          out.push_back('"');
          i = end - 1;
          replaced = changed = true;
          break;
        }
      }
    }
    if (!replaced) out.push_back(c);
  }
  if (!changed) return std::nullopt;
  return out;
}

std::optional<double> nonfinite_from_string(std::string_view text) {
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (text == "Infinity") return std::numeric_limits<double>::infinity();
  if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

TextPosition position_of(std::string_view text, size_t offset) {
  TextPosition pos;
  const size_t end = offset < text.size() ? offset : text.size();
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

std::string printable(std::string_view text, size_t max_length, bool escape_non_ascii) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_length) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || (escape_non_ascii && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace gptbench::runjson
