// The loader's two parsers (simdjson fast path, nlohmann SAX fallback) feed one validator and
// must agree: the same Run, or the same error message, on every committed input (valid,
// malformed, fuzz findings, seed corpus) and on number edge cases where the two libraries
// classify tokens differently. The fuzz target checks the same property on random inputs. The
// pass that also builds the document (merge_runs) gives the same Run or error, and the document
// nlohmann::json::parse gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runjson/json_text.h"
#include "runjson/load.h"

namespace gptbench::runjson {
namespace {

// The run, or the error message.
std::pair<std::optional<Run>, std::string> load(const std::string& text, Parser parser) {
  try {
    return {parse_run(text, "input.json", parser), ""};
  } catch (const LoadError& e) {
    return {std::nullopt, e.what()};
  }
}

// The run and its document from one pass (what merge_runs reads), or the error message.
std::pair<std::optional<Run>, std::string> load_document(const std::string& text, nlohmann::json& document) {
  try {
    return {parse_run(text, "input.json", document), ""};
  } catch (const LoadError& e) {
    return {std::nullopt, e.what()};
  }
}

// How deeply arrays and objects nest in `text`: the fuzz findings nest up to 100,000 deep, too
// deep for nlohmann::json's recursive comparison.
size_t nesting(const std::string& text) {
  size_t depth = 0;
  size_t deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

void expect_agreement(const std::string& text, const std::string& what) {
  const auto [fast, fast_error] = load(text, Parser::kAuto);
  const auto [exact, exact_error] = load(text, Parser::kNlohmann);
  nlohmann::json document;
  const auto [with_document, document_error] = load_document(text, document);
  ASSERT_EQ(fast.has_value(), exact.has_value()) << what << ": " << fast_error << exact_error;
  ASSERT_EQ(fast.has_value(), with_document.has_value()) << what << ": " << fast_error << document_error;
  if (fast) {
    EXPECT_EQ(first_difference(*fast, *exact), "") << what;
    EXPECT_EQ(first_difference(*fast, *with_document), "") << what;
    if (nesting(text) <= 100) {
      const std::optional<std::string> quoted = quote_nonfinite_literals(text);
      EXPECT_EQ(document, nlohmann::json::parse(quoted ? *quoted : text)) << what;
    }
  } else {
    EXPECT_EQ(fast_error, exact_error) << what;
    EXPECT_EQ(fast_error, document_error) << what;
  }
}

TEST(ParserAgreement, EveryCommittedInput) {
  const std::filesystem::path root(GPTBENCH_RUNJSON_TEST_DATA);
  int files = 0;
  for (const char* dir : {"data", "corpus"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      expect_agreement(read_text_file(entry.path().string()), entry.path().string());
      ++files;
    }
  }
  EXPECT_GT(files, 30);  // the data/, malformed/, fuzz/ and corpus/ files are all there
}

TEST(ParserAgreement, NumberAndSyntaxEdgeCases) {
  const std::string row_start = R"({"benchmarks": [{"name": "a", "run_type": "iteration", "time_unit": "ns", )";
  for (const std::string fields : {
           R"("real_time": -0, "cpu_time": 1)",                         // integer zero, negative sign
           R"("real_time": -0.0, "cpu_time": 1)",                       // a float zero
           R"("real_time": 1e400, "cpu_time": 1)",                      // out of double range
           R"("real_time": 18446744073709551616, "cpu_time": 1)",       // beyond 64-bit integers
           R"("real_time": 9223372036854775808, "cpu_time": 1, "repetition_index": 9223372036854775808)",
           R"("real_time": 1E2, "cpu_time": 2.5e-3, "repetition_index": 1.0)",  // float where an integer goes
           R"("real_time": 1, "cpu_time": 1, "x/s": 1e-400)",           // underflow to zero in a counter
           R"("real_time": 1, "cpu_time": 1, "real_time": 2)",          // duplicate key: last wins
           R"("real_time": NaN, "cpu_time": Infinity)",                 // Google Benchmark's bare literals
           "\"real_time\": 1, \"cpu_time\": 1, \"label\": \"\xff\"",    // invalid UTF-8 in a string
       }) {
    expect_agreement(row_start + fields + "}]}", fields);
  }
  for (const std::string& text : std::vector<std::string>{"{\"benchmarks\": []} x", "{\"benchmarks\": [}", "[]", "{\"a\": 1,}",
                                 std::string(2000, '[') + std::string(2000, ']')}) {
    expect_agreement(text, text.substr(0, 40));
  }
}

}  // namespace
}  // namespace gptbench::runjson
