// A streaming writer of pretty-printed JSON whose text is byte for byte what
// nlohmann::json::dump(2) prints for the same document: two-space indentation,
// `"key": value`, `{}`/`[]` for empty containers, doubles in nlohmann's
// shortest round-trip form (NaN and infinities as null), strings escaped as
// nlohmann escapes them. It writes as it goes: no document is built, so the
// caller must emit an object's keys in sorted (byte) order, as json's
// std::map would hold them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gptbench::runjson {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  // The next member's key; its value follows with one of the calls below.
  void key(std::string_view name);
  // key(name) then value(item).
  template <typename T>
  void member(std::string_view name, const T& item) {
    key(name);
    value(item);
  }

  void value(double number);
  void value(size_t number) { unsigned_value(number); }
  void value(int number);
  void value(bool flag);
  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(const std::string& text) { value(std::string_view(text)); }
  void value(const std::vector<double>& numbers);
  void value(const std::vector<std::string>& texts);
  void null();
  // A small document built as json (settings, summary): its dump(2) at this depth.
  void value(const nlohmann::json& document);

 private:
  void open(char bracket);
  void close(char bracket);
  // Separator, newline and indentation before an array element or a key.
  void next();
  void unsigned_value(uint64_t number);
  void write_string(std::string_view text);
  void indent(size_t depth);

  std::string& out_;
  std::vector<bool> empty_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace gptbench::runjson
