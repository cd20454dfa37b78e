// libFuzzer target: the loader must turn any byte string into either a Run or
// a LoadError, never a crash, hang or sanitizer report. A loaded run is also
// compared with itself so the statistics see whatever the loader accepts.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "load.h"
#include "pair.h"
#include "report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gptbench::compare;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const Run run = parse_run(text, "fuzz.json");
    const Report report = build_report(pair_by_name(run, run, NameFilter()), Settings());
    (void)exit_code(report);
  } catch (const LoadError&) {
  }
  return 0;
}
