// libFuzzer target: the loader must turn any byte string into either a Run or
// a LoadError, never a crash, hang or sanitizer report. Differential: the
// simdjson fast path and the nlohmann-only path must give the same Run or the
// same error message (abort otherwise, so libFuzzer keeps the input). A loaded
// run is also compared with itself so the statistics see whatever loads.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "runjson/load.h"
#include "pair.h"
#include "report.h"

namespace {

using namespace gptbench::compare;
using namespace gptbench::runjson;

// The run, or the error message as the second member.
std::pair<std::optional<Run>, std::string> load(std::string_view text, Parser parser) {
  try {
    return {parse_run(text, "fuzz.json", parser), ""};
  } catch (const LoadError& e) {
    return {std::nullopt, e.what()};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto [fast, fast_error] = load(text, Parser::kAuto);
  const auto [exact, exact_error] = load(text, Parser::kNlohmann);
  std::string why;
  if (fast.has_value() != exact.has_value()) {
    why = "one parser accepted, the other said: " + fast_error + exact_error;
  } else if (fast) {
    why = first_difference(*fast, *exact);
  } else if (fast_error != exact_error) {
    why = "different errors: '" + fast_error + "' vs '" + exact_error + "'";
  }
  if (!why.empty()) {
    std::fprintf(stderr, "simdjson and nlohmann paths disagree: %s\n", why.c_str());
    std::abort();
  }
  if (fast) {
    const Report report = build_report(pair_by_name(*fast, *fast, NameFilter()), Settings());
    (void)exit_code(report);
  }
  return 0;
}
