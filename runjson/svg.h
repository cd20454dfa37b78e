// Inline SVG for the tools' self-contained HTML pages (gptbench-compare's report, gptbench-report's
// charts and through them gptbench-history's trend page): elements written one by one, their
// attributes in the order given, coordinates with one decimal, text content escaped.
#pragma once

#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace gptbench::runjson {

// A coordinate or length as the charts write it: fixed, one decimal ("12.5", "-0.0").
std::string svg_number(double value);

// One attribute of an element: a number (written by svg_number) or text written as it is
// (colours, class names, transforms, whole numbers such as "10": text that needs no escaping).
// An attribute whose name is nullptr is left out: {clipped ? "stroke" : nullptr, "#000"}.
struct SvgAttribute {
  SvgAttribute(const char* attribute, double number) : name(attribute), value(svg_number(number)) {}
  SvgAttribute(const char* attribute, const char* text) : name(attribute), value(text) {}
  SvgAttribute(const char* attribute, std::string text) : name(attribute), value(std::move(text)) {}

  const char* name;
  std::string value;
};
using SvgAttributes = std::initializer_list<SvgAttribute>;

// Writes SVG elements to a stream; what goes between them (newlines, other markup) the caller
// writes to the same stream.
class SvgWriter {
 public:
  explicit SvgWriter(std::ostream& out) : out_(out) {}

  // <name a='1.0' b='x'/>
  void element(const char* name, SvgAttributes attributes);
  // <name a='1.0'>text</name>, the text escaped.
  void text(const char* name, SvgAttributes attributes, std::string_view content);
  // <name a='1.0'><title>tooltip</title></name>, the tooltip escaped.
  void titled(const char* name, SvgAttributes attributes, std::string_view tooltip);
  // <name a='1.0'>: children follow, then close(name) writes </name>.
  void open(const char* name, SvgAttributes attributes);
  void close(const char* name);

 private:
  void start(const char* name, SvgAttributes attributes);

  std::ostream& out_;
};

}  // namespace gptbench::runjson
