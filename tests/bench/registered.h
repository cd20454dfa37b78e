#pragma once
// The names the families register (bench/*.cpp) for a run's flags, without running anything,
// for the registration tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/suite_inputs.h"

namespace gptbench::test {

// The names every family registers for a run with `flags`, on a GPU (`gpu`) or the CPU.
inline std::vector<std::string> registered(std::vector<const char*> flags, bool gpu) {
  flags.insert(flags.begin(), {"gptbench", gpu ? "--gptbench_device=cuda" : "--gptbench_device=cpu"});
  const ParseResult parsed = parse_options(static_cast<int>(flags.size()), flags.data(), gpu);
  EXPECT_EQ(parsed.error, "");
  const size_t before = registered_cases().size();
  register_families(suite_inputs(parsed.options, 1));
  std::vector<std::string> names;
  for (size_t i = before; i < registered_cases().size(); ++i) names.push_back(registered_cases()[i].name);
  return names;
}

inline bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

inline size_t count_prefix(const std::vector<std::string>& names, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(names.begin(), names.end(),
                                           [&](const std::string& n) { return n.rfind(prefix, 0) == 0; }));
}

// Every case registered since index `from` whose name starts with `prefix` refuses to be built on
// the CPU with SkipCase("skipped: ...") naming a CUDA GPU; `each` first sees each such spec.
template <typename Each>
void expect_cpu_skips(size_t from, const std::string& prefix, Each each) {
  for (size_t i = from; i < registered_cases().size(); ++i) {
    const CaseSpec& spec = registered_cases()[i];
    if (spec.name.rfind(prefix, 0) != 0) continue;
    each(spec);
    try {
      spec.make();
      ADD_FAILURE() << spec.name << " was built on the CPU";
    } catch (const SkipCase& e) {
      EXPECT_EQ(std::string(e.what()).rfind("skipped: ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("CUDA GPU"), std::string::npos) << e.what();
    }
  }
}
inline void expect_cpu_skips(size_t from, const std::string& prefix) {
  expect_cpu_skips(from, prefix, [](const CaseSpec&) {});
}

}  // namespace gptbench::test
