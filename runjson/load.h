// Loads Google Benchmark JSON (library versions 1.7 to 1.9) into a Run.
// Every malformed input becomes a LoadError whose message is one line
// starting with the source name; nothing is dropped silently.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "runjson/run.h"

namespace gptbench::runjson {

class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a whole file; LoadError if it is missing or unreadable.
std::string read_text_file(const std::string& path);

// Which parser reads the text: kAuto is simdjson, falling back to nlohmann's SAX parser for
// whatever simdjson refuses (and for the error message); kNlohmann is the fallback alone.
// Both feed one validator, so they must agree: the fuzz target and a test check that.
enum class Parser { kAuto, kNlohmann };

// Parses JSON text; `source` names it in error messages.
Run parse_run(std::string_view text, const std::string& source, Parser parser = Parser::kAuto);

// parse_run with nlohmann's parser alone, which also builds the document (bare NaN, Infinity and
// -Infinity as the strings "NaN", "Infinity", "-Infinity") in the same pass over the text: the
// same Run or the same LoadError as parse_run.
Run parse_run(std::string_view text, const std::string& source, nlohmann::json& document);

// read_text_file + parse_run.
Run load_run_file(const std::string& path);

// Loads two files concurrently (the second on its own thread); LoadError of
// the first file that fails, base first.
std::pair<Run, Run> load_run_files(const std::string& base_path, const std::string& contender_path);

}  // namespace gptbench::runjson
