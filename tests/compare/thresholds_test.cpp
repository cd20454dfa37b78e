// Threshold rules: parsing values, the config file, longest-prefix lookup.
#include <gtest/gtest.h>

#include "test_util.h"
#include "compare/thresholds.h"

namespace gptbench::compare {
namespace {

TEST(Thresholds, ParsesPercentAndFraction) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold(" 12.5 % "), 0.125);
  EXPECT_DOUBLE_EQ(parse_threshold("0.1"), 0.1);
  EXPECT_DOUBLE_EQ(parse_threshold("0"), 0.0);
  for (const char* bad : {"", "%", "five", "5%%", "-1%", "1e999", "0.1x"}) {
    EXPECT_THROW(parse_threshold(bad), ConfigError) << bad;
  }
}

TEST(Thresholds, LongestPrefixWins) {
  Thresholds thresholds(0.05);
  thresholds.set_prefix("model/", 0.10);
  thresholds.set_prefix("model/fwd_bwd/xl/", 0.15);
  EXPECT_DOUBLE_EQ(thresholds.for_name("gemm/cublas"), 0.05);
  EXPECT_DOUBLE_EQ(thresholds.for_name("model/fwd_bwd/small/bf16"), 0.10);
  EXPECT_DOUBLE_EQ(thresholds.for_name("model/fwd_bwd/xl/bf16"), 0.15);
  thresholds.set_prefix("model/", 0.2);  // replaces, does not duplicate
  EXPECT_EQ(thresholds.prefixes().size(), 2u);
  EXPECT_DOUBLE_EQ(thresholds.for_name("model/x"), 0.2);
}

TEST(Thresholds, ConfigFileFromTestData) {
  const std::string path = test_util::data_path("thresholds.ini");
  Thresholds thresholds;
  apply_threshold_config(test_util::read_file(path), path, thresholds);
  EXPECT_DOUBLE_EQ(thresholds.default_threshold(), 0.04);
  EXPECT_DOUBLE_EQ(thresholds.for_name("model/fwd_bwd/small"), 0.10);
  EXPECT_DOUBLE_EQ(thresholds.for_name("model/fwd_bwd/xl/bf16"), 0.15);
  EXPECT_DOUBLE_EQ(thresholds.for_name("softmax/fused"), 0.04);
}

TEST(Thresholds, ConfigErrorsNameFileAndLine) {
  Thresholds thresholds;
  try {
    apply_threshold_config("# ok\nmodel/ = 10%\ngemm/ 5%\n", "t.ini", thresholds);
    ADD_FAILURE() << "accepted a line without '='";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "t.ini:3: expected 'PREFIX = THRESHOLD'");
  }
  try {
    apply_threshold_config("model/ = lots\n", "t.ini", thresholds);
    ADD_FAILURE() << "accepted a bad value";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("t.ini:1: invalid threshold 'lots'"), std::string::npos);
  }
  EXPECT_THROW(apply_threshold_config(" = 5%\n", "t.ini", thresholds), ConfigError);
}

}  // namespace
}  // namespace gptbench::compare
