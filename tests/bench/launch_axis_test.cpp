// The launch axis the families register (docs/usage.md "Device rows and eager rows"): the
// host-bound cases come as a launch:graph row and a launch:eager row of one case, and nothing
// else carries the axis.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/suite_inputs.h"

namespace gptbench {
namespace {

std::vector<CaseSpec> registered_on_a_gpu() {
  std::vector<const char*> flags = {"gptbench", "--gptbench_device=cuda"};
  const ParseResult parsed = parse_options(static_cast<int>(flags.size()), flags.data(), true);
  EXPECT_EQ(parsed.error, "");
  const size_t before = registered_cases().size();
  register_families(suite_inputs(parsed.options, 1));
  return {registered_cases().begin() + static_cast<long>(before), registered_cases().end()};
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(LaunchAxis, HostBoundCasesHaveAGraphRowAndAnEagerRow) {
  const std::vector<CaseSpec> specs = registered_on_a_gpu();
  std::set<std::string> graph, eager;
  for (const auto& s : specs) {
    if (ends_with(s.name, "/launch:graph")) {
      EXPECT_EQ(s.launch, Launch::kGraph) << s.name;
      EXPECT_EQ(s.key + "/launch:graph", s.name);
      graph.insert(s.key);
    } else if (ends_with(s.name, "/launch:eager")) {
      EXPECT_EQ(s.launch, Launch::kEager) << s.name;
      eager.insert(s.key);
    } else {
      EXPECT_EQ(s.name.find("launch:"), std::string::npos) << s.name;
    }
  }
  EXPECT_EQ(graph, eager);  // every case has both rows
  auto has = [&](const std::string& key) { return graph.count(key) == 1; };
  EXPECT_TRUE(has("layernorm/fused/bf16/fwd_bwd/rows:8192/cols:768"));
  EXPECT_TRUE(has("backward/block/bf16/fwd_bwd/small/B:8/T:1024"));
  EXPECT_TRUE(has("optim/torch_adamw/fp32/model:small"));
  EXPECT_TRUE(has("optim/torch_fused_adamw/fp32/model:small"));
  EXPECT_TRUE(has("attention/sdpa_cudnn/bf16/causal/fwd_bwd/B:8/H:12/L:1024/d:128"));
  // Device-bound rows keep their names: our fused optimizer, a forward.
  EXPECT_FALSE(has("optim/adamw/fp32/model:small"));
  EXPECT_FALSE(has("layernorm/fused/bf16/fwd/rows:8192/cols:768"));
}

}  // namespace
}  // namespace gptbench
