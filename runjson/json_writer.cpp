#include "runjson/json_writer.h"

#include <array>
#include <charconv>
#include <cmath>

namespace gptbench::runjson {
namespace {

// Printable ASCII with nothing to escape: the common case for benchmark names,
// verdicts and reasons, written without going through a json value.
bool plain_ascii(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace

void JsonWriter::indent(size_t depth) { out_.append(2 * depth, ' '); }

void JsonWriter::next() {
  if (after_key_) {  // the value of the key just written
    after_key_ = false;
    return;
  }
  if (empty_.empty()) return;  // the document's top-level value
  out_ += empty_.back() ? "\n" : ",\n";
  empty_.back() = false;
  indent(empty_.size());
}

void JsonWriter::open(char bracket) {
  next();
  out_ += bracket;
  empty_.push_back(true);
}

void JsonWriter::close(char bracket) {
  const bool empty = empty_.back();
  empty_.pop_back();
  if (!empty) {
    out_ += '\n';
    indent(empty_.size());
  }
  out_ += bracket;
}

void JsonWriter::key(std::string_view name) {
  next();
  write_string(name);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::value(double number) {
  next();
  if (!std::isfinite(number)) {
    out_ += "null";
    return;
  }
  // nlohmann's own shortest round-trip formatting (what dump() calls), so the
  // text is the one a json value would print.
  std::array<char, 64> buffer;
  const char* end = nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), number);
  out_.append(buffer.data(), static_cast<size_t>(end - buffer.data()));
}

void JsonWriter::unsigned_value(uint64_t number) {
  next();
  std::array<char, 24> buffer;
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), number);
  out_.append(buffer.data(), result.ptr);
}

void JsonWriter::value(int number) {
  if (number >= 0) return unsigned_value(static_cast<uint64_t>(number));
  next();
  out_ += std::to_string(number);
}

void JsonWriter::value(bool flag) {
  next();
  out_ += flag ? "true" : "false";
}

void JsonWriter::value(std::string_view text) {
  next();
  write_string(text);
}

void JsonWriter::write_string(std::string_view text) {
  if (plain_ascii(text)) {
    out_ += '"';
    out_ += text;
    out_ += '"';
  } else {
    out_ += nlohmann::json(text).dump();  // escapes, and rejects invalid UTF-8 as dump() does
  }
}

void JsonWriter::value(const std::vector<double>& numbers) {
  begin_array();
  for (const double number : numbers) value(number);
  end_array();
}

void JsonWriter::value(const std::vector<std::string>& texts) {
  begin_array();
  for (const std::string& text : texts) value(text);
  end_array();
}

void JsonWriter::null() {
  next();
  out_ += "null";
}

void JsonWriter::value(const nlohmann::json& document) {
  next();
  const std::string text = document.dump(2);
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    out_.append(text, begin, end - begin);
    out_ += '\n';
    indent(empty_.size());
  }
  out_.append(text, begin);
}

}  // namespace gptbench::runjson
