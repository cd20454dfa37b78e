// The SVG elements the tools' HTML pages are drawn with (runjson/svg.h).
#include <gtest/gtest.h>

#include <cfloat>
#include <sstream>
#include <string>

#include "runjson/svg.h"

namespace gptbench::runjson {
namespace {

TEST(Svg, NumbersHaveOneDecimal) {
  EXPECT_EQ(svg_number(12.25), "12.2");  // ties to even, as printf
  EXPECT_EQ(svg_number(0.06), "0.1");
  EXPECT_EQ(svg_number(-0.04), "-0.0");
  EXPECT_EQ(svg_number(80), "80.0");
  EXPECT_EQ(svg_number(DBL_MAX).size(), 311u);  // 309 digits, ".", one decimal
}

TEST(Svg, AttributesInTheOrderGivenAndTextEscaped) {
  std::ostringstream out;
  SvgWriter svg(out);
  svg.open("svg", {{"width", 100.0}, {"role", "img"}});
  svg.element("line", {{"x1", 1.0}, {"y1", "0"}, {nullptr, "left out"}, {"stroke", std::string("#333")}});
  svg.text("text", {{"class", "label"}}, "a<b & 'c'");
  svg.titled("circle", {{"r", "3"}}, "x=\"1\"");
  svg.open("g", {});
  svg.close("g");
  svg.close("svg");
  EXPECT_EQ(out.str(),
            "<svg width='100.0' role='img'><line x1='1.0' y1='0' stroke='#333'/>"
            "<text class='label'>a&lt;b &amp; &#39;c&#39;</text>"
            "<circle r='3'><title>x=&quot;1&quot;</title></circle><g></g></svg>");
}

}  // namespace
}  // namespace gptbench::runjson
