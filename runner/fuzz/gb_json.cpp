// libFuzzer target: the runner's reader of a child's (possibly truncated) Google Benchmark
// JSON must turn any bytes into rows, a context and a problem string, never a crash; fed in
// two pieces it must give the same rows as fed at once; and whatever rows it accepts must
// merge into a document that the loader (runjson/load.h) accepts, or be reported as unloadable.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gb_json.h"
#include "merge.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gptbench::runner;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  GbJsonDocument whole = read_gb_json(text);
  GbJsonReader pieces;
  const size_t cut = size > 0 ? data[0] % (size + 1) : 0;
  pieces.feed(text.substr(0, cut));
  std::vector<nlohmann::json> rows = pieces.take_rows();
  pieces.feed(text.substr(cut));
  for (auto& r : pieces.take_rows()) rows.push_back(std::move(r));
  if (rows != whole.rows || pieces.complete() != whole.complete) std::abort();
  for (const auto& row : whole.rows) (void)row_benchmark(row);
  MergedRun merged;
  if (whole.context) merged.offer_context(*whole.context);
  merged.add_child_rows(std::move(whole.rows));
  merged.add_errored("fuzz/errored", std::string(text.substr(0, 64)));  // any bytes as a reason
  try {
    (void)merged.text();
  } catch (const std::runtime_error&) {
    // rows the loader rejects (e.g. a row without a name) are reported, not written
  }
  return 0;
}
