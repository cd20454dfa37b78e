// Number and text formatting shared by the tools' text, Markdown and HTML output.
#pragma once

#include <string>
#include <string_view>

namespace gptbench::runjson {

std::string format_time(double ns);          // "781 us", "1.23 ms" (3 significant digits)
std::string format_si(double value);         // counters: "3.12T", "850k", "0.991"
std::string format_change(double change);    // "+5.0%", "-12.3%", "n/a"
std::string format_percent(double fraction); // "5.0%"
std::string format_ratio(double ratio);      // "1.012"
std::string format_p_value(double p);        // "0.0004", "<1e-06"
std::string html_escape(std::string_view text);
std::string markdown_escape(std::string_view text);  // for table cells

}  // namespace gptbench::runjson
