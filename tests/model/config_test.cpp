#include "model/config.h"

#include <gtest/gtest.h>

#include "model/gpt2.h"

namespace gptbench {
namespace {

// Expected counts: wte V·d + wpe T·d + L·(2 LayerNorms 4d, c_attn 3d²+3d, c_proj d²+d,
// c_fc d·ff+ff, c_proj ff·d+d) + ln_f 2d, with V = 50257, T = 1024 (GPT-2's published sizes;
// small's 124,439,808 is the figure every GPT-2 implementation reports).
TEST(Config, ParamCountsOfPresets) {
  EXPECT_EQ(param_count(model_config("small")), 124439808);
  EXPECT_EQ(param_count(model_config("medium")), 354823168);
  EXPECT_EQ(param_count(model_config("large")), 774030080);
  EXPECT_EQ(param_count(model_config("xl")), 1557611200);
  EXPECT_EQ(param_count(model_config("2.7B")), 2648931840);
}

TEST(Config, PresetShapes) {
  auto xl = model_config("xl");
  EXPECT_EQ(xl.d_model, 1600);
  EXPECT_EQ(xl.d_ff, 6400);
  EXPECT_EQ(xl.n_layer, 48);
  EXPECT_EQ(xl.n_head, 25);
  EXPECT_EQ(xl.head_dim(), 64);
  EXPECT_EQ(model_config("small").padded_vocab(), 50304);
  EXPECT_EQ(preset_names().size(), 5u);
}

TEST(Config, CustomSizes) {
  auto c = model_config("custom:L=3,d=96,h=3,V=500,T=32");
  EXPECT_EQ(c.n_layer, 3);
  EXPECT_EQ(c.d_model, 96);
  EXPECT_EQ(c.d_ff, 384);
  EXPECT_EQ(c.vocab, 500);
  EXPECT_EQ(c.n_ctx, 32);
  EXPECT_EQ(model_config("custom:L=1,d=64,h=2,ff=100").d_ff, 100);
}

// ':' between fields (it survives --gptbench_models' split at commas) or the older ','; either
// way the name is spelt with ':' in a fixed order, so benchmark names do not depend on it.
TEST(Config, CustomNameIsSpeltOneWay) {
  for (const char* spelling : {"custom:L=3:d=96:h=3:T=32", "custom:L=3,d=96,h=3,T=32", "custom:T=32,h=3:d=96,L=3"})
    EXPECT_EQ(model_config(spelling).name, "custom:L=3:d=96:h=3:T=32") << spelling;
  EXPECT_EQ(model_config("custom:L=1:d=64:h=2:ff=100").d_ff, 100);
  EXPECT_EQ(model_config("tiny").name, "tiny");
  EXPECT_THROW(model_config("custom:L=2;d=64"), std::invalid_argument);
  EXPECT_THROW(model_config("custom:L=2::d=64"), std::invalid_argument);
  EXPECT_THROW(model_config("custom:L=2:d=64:h=2:V=2147483648"), std::invalid_argument);  // > 2^31 - 1
}

TEST(Config, ParameterCountInDoubleAgreesAndDoesNotOverflow) {
  for (const char* name : {"small", "2.7B", "tiny"})
    EXPECT_EQ(param_count_approx(model_config(name)), static_cast<double>(param_count(model_config(name)))) << name;
  EXPECT_GT(param_count_approx(model_config("custom:L=2147483647:d=2147483647:h=1")), 1e28);
}

TEST(Config, BadNamesAreClearErrors) {
  try {
    model_config("huge");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("small, medium, large, xl, 2.7B"), std::string::npos);
  }
  EXPECT_THROW(model_config("custom:L=2,d=100,h=3"), std::invalid_argument);  // d % h != 0
  EXPECT_THROW(model_config("custom:L=x"), std::invalid_argument);
  EXPECT_THROW(model_config("custom:Q=2"), std::invalid_argument);
  EXPECT_THROW(model_config("custom:L=-1"), std::invalid_argument);
}

// The analytic count agrees with the module's actual parameters: for small itself and for
// custom sizes of the same structure (building xl or 2.7B would take 6-11 GB on a CI machine).
TEST(Config, ModuleParameterCountMatchesFormula) {
  for (std::string name : {"small", "tiny", "custom:L=3,d=96,h=3,ff=200,V=777,T=40"}) {
    auto cfg = model_config(name);
    GPT2 model(cfg);
    int64_t n = 0;
    for (const auto& p : model->parameters()) n += p.numel();
    EXPECT_EQ(n, param_count(cfg)) << name;
  }
}

}  // namespace
}  // namespace gptbench
