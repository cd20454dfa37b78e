// JsonWriter prints what nlohmann::json::dump(2) prints for the same document,
// byte for byte: the streaming --format=json output must stay interchangeable
// with the DOM-built one it replaced.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runjson/json_writer.h"

namespace gptbench::runjson {
namespace {

using nlohmann::json;

// Writes `document` through JsonWriter, walking it as the renderers do (keys in
// the object's own, sorted, order).
void write(JsonWriter& writer, const json& document) {
  switch (document.type()) {
    case json::value_t::object:
      writer.begin_object();
      for (const auto& [key, value] : document.items()) {
        writer.key(key);
        write(writer, value);
      }
      writer.end_object();
      break;
    case json::value_t::array:
      writer.begin_array();
      for (const json& value : document) write(writer, value);
      writer.end_array();
      break;
    case json::value_t::string: writer.value(document.get<std::string>()); break;
    case json::value_t::boolean: writer.value(document.get<bool>()); break;
    case json::value_t::number_unsigned: writer.value(document.get<size_t>()); break;
    case json::value_t::number_integer: writer.value(document.get<int>()); break;
    case json::value_t::number_float: writer.value(document.get<double>()); break;
    default: writer.null(); break;
  }
}

std::string streamed(const json& document) {
  std::string out;
  JsonWriter writer(out);
  write(writer, document);
  return out;
}

TEST(JsonWriter, MatchesDumpOnEdgeCases) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const json document = {
      {"empty_array", json::array()},
      {"empty_object", json::object()},
      {"numbers", {0.0, -0.0, 1.0, 1000.0, 1e15, 1e16, 1e-4, 1e-5, 0.1, 1.0 / 3, -2.5e-300, 1.7976931348623157e308,
                   4.9e-324, 123456789012345678.0}},
      {"non_finite", {nan, inf, -inf}},
      {"integers", {0u, 7u, 18446744073709551615ull}},
      {"negative", -42},
      {"flags", {true, false}},
      {"null", nullptr},
      {"strings", {"", "plain/name:1", "quote\" and \\ backslash", "tab\tnewline\ncontrol\x01", "µs, ≥ 1.0×"}},
      {"nested", {{"a", {{"b", json::array({json::object(), json::array({1, 2})})}}}}},
      {"key with \"quote\"", 1},
  };
  EXPECT_EQ(streamed(document), document.dump(2));
}

TEST(JsonWriter, MatchesDumpOnRandomDoubles) {
  std::mt19937_64 gen(20261125);
  std::uniform_real_distribution<double> mantissa(-10.0, 10.0);
  std::uniform_int_distribution<int> exponent(-320, 308);
  json numbers = json::array();
  for (int i = 0; i < 20000; ++i) numbers.push_back(mantissa(gen) * std::pow(10.0, exponent(gen)));
  const json document = {{"samples", numbers}};
  EXPECT_EQ(streamed(document), document.dump(2));
}

TEST(JsonWriter, TopLevelScalarsAndSmallDocuments) {
  EXPECT_EQ(streamed(json(2.5)), "2.5");
  EXPECT_EQ(streamed(json("x")), "\"x\"");
  std::string out;
  JsonWriter writer(out);
  writer.begin_object();
  writer.member("settings", json{{"alpha", 0.05}, {"list", {1, 2}}});
  writer.member("tool", "gptbench-compare");
  writer.end_object();
  const json expected = {{"settings", {{"alpha", 0.05}, {"list", {1, 2}}}}, {"tool", "gptbench-compare"}};
  EXPECT_EQ(out, expected.dump(2));
}

TEST(JsonWriter, InvalidUtf8IsRejectedAsDumpRejectsIt) {
  std::string out;
  JsonWriter writer(out);
  EXPECT_THROW(writer.value(std::string("bad \xff byte")), json::type_error);
}

}  // namespace
}  // namespace gptbench::runjson
