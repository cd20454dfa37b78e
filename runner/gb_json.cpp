#include "gb_json.h"

#include "runjson/json_text.h"

namespace gptbench::runner {

using nlohmann::json;

void GbJsonReader::feed(std::string_view bytes) {
  buf_.append(bytes);
  scan();
}

std::vector<json> GbJsonReader::take_rows() {
  std::vector<json> out;
  out.swap(rows_);
  return out;
}

std::optional<json> GbJsonReader::parse_value(size_t begin, size_t end) {
  const std::string_view text(buf_.data() + begin, end - begin);
  const std::optional<std::string> quoted = runjson::quote_nonfinite_literals(text);
  json value = json::parse(quoted ? std::string_view(*quoted) : text, nullptr, false);
  if (value.is_discarded() || !value.is_object()) {
    if (problem_.empty())
      problem_ = "invalid JSON object at byte " + std::to_string(begin);
    return std::nullopt;
  }
  return value;
}

void GbJsonReader::scan() {
  for (; pos_ < buf_.size(); ++pos_) {
    const char c = buf_[pos_];
    if (in_string_) {
      if (escape_) {
        escape_ = false;
      } else if (c == '\\') {
        escape_ = true;
      } else if (c == '"') {
        in_string_ = false;
        if (stack_.size() == 1 && expect_key_)
          last_key_.assign(buf_, string_start_, pos_ - string_start_);
      }
      continue;
    }
    if (root_closed_) {
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t' && problem_.empty())
        problem_ = "text after the end of the JSON document";
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        string_start_ = pos_ + 1;
        break;
      case '{':
      case '[':
        if (stack_.empty() && c != '{') {
          if (problem_.empty()) problem_ = "the document is not a JSON object";
          root_closed_ = true;
          break;
        }
        if (stack_.size() == 1) {
          expect_key_ = false;
          if (c == '{' && last_key_ == "context") value_start_ = pos_;
          in_benchmarks_ = c == '[' && last_key_ == "benchmarks";
        } else if (stack_.size() == 2 && in_benchmarks_ && c == '{') {
          value_start_ = pos_;
        }
        stack_.push_back(c);
        if (stack_.size() == 1) expect_key_ = true;
        break;
      case '}':
      case ']':
        if (stack_.empty()) break;
        stack_.pop_back();
        if (stack_.size() == 2 && in_benchmarks_ && c == '}') {
          if (auto row = parse_value(value_start_, pos_ + 1)) rows_.push_back(std::move(*row));
        } else if (stack_.size() == 1 && c == '}' && last_key_ == "context" && !context_) {
          context_ = parse_value(value_start_, pos_ + 1);
        } else if (stack_.size() == 1 && c == ']') {
          in_benchmarks_ = false;
        } else if (stack_.empty()) {
          root_closed_ = true;
        }
        break;
      case ',':
        if (stack_.size() == 1) expect_key_ = true;
        break;
      default:
        break;
    }
  }
}

GbJsonDocument read_gb_json(std::string_view text) {
  GbJsonReader reader;
  reader.feed(text);
  return GbJsonDocument{reader.context(), reader.take_rows(), reader.complete(), reader.problem()};
}

std::string row_benchmark(const json& row) {
  if (auto it = row.find("run_name"); it != row.end() && it->is_string()) return *it;
  if (auto it = row.find("name"); it != row.end() && it->is_string()) return *it;
  return "";
}

}  // namespace gptbench::runner
