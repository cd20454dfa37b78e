#include "runjson/svg.h"

#include <charconv>
#include <utility>

#include "runjson/format.h"

namespace gptbench::runjson {

std::string svg_number(double value) {
  // std::to_chars (a page of many charts formats millions of them); room for every double in
  // fixed notation (DBL_MAX has 309 digits).
  char buffer[400];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, 1);
  return std::string(buffer, result.ptr);
}

void SvgWriter::start(const char* name, SvgAttributes attributes) {
  out_ << '<' << name;
  for (const SvgAttribute& attribute : attributes) {
    if (attribute.name != nullptr) out_ << ' ' << attribute.name << "='" << attribute.value << '\'';
  }
}

void SvgWriter::element(const char* name, SvgAttributes attributes) {
  start(name, attributes);
  out_ << "/>";
}

void SvgWriter::text(const char* name, SvgAttributes attributes, std::string_view content) {
  start(name, attributes);
  out_ << '>' << html_escape(content) << "</" << name << '>';
}

void SvgWriter::titled(const char* name, SvgAttributes attributes, std::string_view tooltip) {
  start(name, attributes);
  out_ << "><title>" << html_escape(tooltip) << "</title></" << name << '>';
}

void SvgWriter::open(const char* name, SvgAttributes attributes) {
  start(name, attributes);
  out_ << '>';
}

void SvgWriter::close(const char* name) { out_ << "</" << name << '>'; }

}  // namespace gptbench::runjson
