#include "runjson/load.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "runjson/json_text.h"
#include "runjson/run_builder.h"

namespace gptbench::runjson {
namespace {

using nlohmann::json;

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

// nlohmann's message minus its "[json.exception...] parse error at ...:" prefix.
std::string syntax_message(std::string what, size_t byte, std::string_view text) {
  if (!what.empty() && what.front() == '[') {
    const size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
  }
  if (what.rfind("parse error", 0) == 0) {
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
  }
  const TextPosition pos = position_of(text, byte > 0 ? byte - 1 : 0);
  return "invalid JSON at line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " +
         printable(what, 200, true);
}

// The text a parser reads: `text` with bare NaN / Infinity / -Infinity quoted; LoadError for a
// blank file.
class Input {
 public:
  Input(std::string_view text, const std::string& source) : text_(text) {
    if (is_blank(text)) throw LoadError(source + ": file is empty");
    quoted_ = quote_nonfinite_literals(text);
    if (quoted_) text_ = *quoted_;
  }
  std::string_view text() const { return text_; }

 private:
  std::optional<std::string> quoted_;
  std::string_view text_;
};

// After a walk over the whole document (`complete`: no event was refused): LoadError for what
// the validator found, else the checks that need the whole run.
void finish(RunBuilder& builder, bool complete, const std::string& source) {
  if (!complete) throw LoadError(source + ": " + (builder.problem().empty() ? "invalid JSON" : builder.problem()));
  if (!builder.saw_benchmarks()) throw LoadError(source + ": no 'benchmarks' array");
  if (!builder.finish()) throw LoadError(source + ": " + builder.problem());
}

// nlohmann's SAX parser over `input` into `handler`, which passes every event on to `builder`.
template <typename Handler>
void parse_with_nlohmann(std::string_view input, const std::string& source, RunBuilder& builder, Handler& handler) {
  const bool ok = json::sax_parse(input.begin(), input.end(), &handler, json::input_format_t::json, true);
  if (builder.saw_syntax_error()) {
    throw LoadError(source + ": " + syntax_message(builder.syntax_what(), builder.syntax_position(), input));
  }
  finish(builder, ok, source);
}

// One SAX parse into the validator and into a document at once: each event goes to the
// validator first (which may stop the parse), then to nlohmann's own DOM builder.
class ValidatedDocument {
 public:
  ValidatedDocument(RunBuilder& builder, json& document) : builder_(builder), dom_(document, false) {}

  bool null() { return builder_.null() && dom_.null(); }
  bool boolean(bool value) { return builder_.boolean(value) && dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) {
    return builder_.number_integer(value) && dom_.number_integer(value);
  }
  bool number_unsigned(json::number_unsigned_t value) {
    return builder_.number_unsigned(value) && dom_.number_unsigned(value);
  }
  bool number_float(json::number_float_t value, const std::string& text) {
    return builder_.number_float(value, text) && dom_.number_float(value, text);
  }
  bool string(std::string& value) { return builder_.string(value) && dom_.string(value); }
  bool binary(json::binary_t& value) { return builder_.binary(value) && dom_.binary(value); }
  bool key(std::string& value) { return builder_.key(value) && dom_.key(value); }
  bool start_object(std::size_t size) { return builder_.start_object(size) && dom_.start_object(size); }
  bool start_array(std::size_t size) { return builder_.start_array(size) && dom_.start_array(size); }
  bool end_object() { return builder_.end_object() && dom_.end_object(); }
  bool end_array() { return builder_.end_array() && dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& error) {
    return builder_.parse_error(position, token, error);
  }

 private:
  RunBuilder& builder_;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
};

// Replays a simdjson DOM as the SAX events RunBuilder takes, in document
// order (duplicate keys included), so both parsers share one validator.
class DomReplay {
 public:
  explicit DomReplay(RunBuilder& builder) : builder_(builder) {}

  bool walk(simdjson::dom::element element) {
    using Type = simdjson::dom::element_type;
    switch (element.type()) {
      case Type::OBJECT: {
        const simdjson::dom::object object = element.get_object().value_unsafe();
        if (!builder_.start_object(object.size())) return false;
        for (const simdjson::dom::key_value_pair field : object) {
          scratch_.assign(field.key);
          if (!builder_.key(scratch_) || !walk(field.value)) return false;
        }
        return builder_.end_object();
      }
      case Type::ARRAY: {
        const simdjson::dom::array array = element.get_array().value_unsafe();
        if (!builder_.start_array(array.size())) return false;
        for (const simdjson::dom::element item : array) {
          if (!walk(item)) return false;
        }
        return builder_.end_array();
      }
      case Type::STRING:
        scratch_.assign(element.get_string().value_unsafe());
        return builder_.string(scratch_);
      case Type::INT64: return builder_.number_integer(element.get_int64().value_unsafe());
      case Type::UINT64: return builder_.number_unsigned(element.get_uint64().value_unsafe());
      case Type::DOUBLE: return builder_.number_float(element.get_double().value_unsafe(), no_text_);
      case Type::BOOL: return builder_.boolean(element.get_bool().value_unsafe());
      case Type::NULL_VALUE: return builder_.null();
    }
    return false;
  }

 private:
  RunBuilder& builder_;
  std::string scratch_;
  const std::string no_text_;
};

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw LoadError(path + ": cannot open file (" + std::strerror(errno) + ")");
  const std::streamoff size = in.tellg();
  if (size < 0) throw LoadError(path + ": cannot read file");
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(text.data(), size)) throw LoadError(path + ": cannot read file");
  return text;
}

Run parse_run(std::string_view text, const std::string& source, Parser parser_choice) {
  const Input input(text, source);

  // Fast path: simdjson (GB/s) replayed into the validator. Anything it
  // refuses (syntax, depth, integers beyond 64 bits, 1e999) is parsed again
  // by nlohmann's SAX parser, which has the exact semantics and positions
  // the error messages use.
  if (parser_choice == Parser::kAuto) {
    Run run;
    run.source = source;
    RunBuilder builder(run);
    simdjson::dom::parser parser;
    const simdjson::padded_string padded(input.text());
    const simdjson::simdjson_result<simdjson::dom::element> document = parser.parse(padded);
    if (!document.error()) {
      finish(builder, DomReplay(builder).walk(document.value_unsafe()), source);
      return run;
    }
  }
  Run run;
  run.source = source;
  RunBuilder builder(run);
  parse_with_nlohmann(input.text(), source, builder, builder);
  return run;
}

Run parse_run(std::string_view text, const std::string& source, nlohmann::json& document) {
  const Input input(text, source);
  Run run;
  run.source = source;
  RunBuilder builder(run);
  document = json();
  ValidatedDocument handler(builder, document);
  parse_with_nlohmann(input.text(), source, builder, handler);
  return run;
}

Run load_run_file(const std::string& path) { return parse_run(read_text_file(path), path); }

std::pair<Run, Run> load_run_files(const std::string& base_path, const std::string& contender_path) {
  std::future<Run> contender = std::async(std::launch::async, [&contender_path] { return load_run_file(contender_path); });
  Run base;
  try {
    base = load_run_file(base_path);
  } catch (...) {
    contender.wait();
    throw;
  }
  return {std::move(base), contender.get()};
}

}  // namespace gptbench::runjson
