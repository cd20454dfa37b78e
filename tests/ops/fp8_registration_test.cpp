// The FP8 rows the families register (bench/gemm_fp8.cpp, bench/quantize.cpp) for a run's flags,
// without running anything: their names, that they follow bf16's selection, and that the CPU
// lists the rows that need a GPU (to be skipped with the reason) — the suite's rule for rows that
// need a GPU, as for gemm/cublaslt.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "tests/bench/registered.h"

namespace gptbench {
namespace {

using test::count_prefix;
using test::has;
using test::registered;

TEST(Fp8Registration, GemmRowsAtEveryShapeScalingAndImpl) {
  const std::vector<std::string> gpu = registered({"--gptbench_dtypes=bf16", "--gptbench_fp8=true"}, true);
  // GPT-2 small at 8 × 1024 tokens: 15 GEMMs + 4 squares (1,024-8,192); ours at 3 scalings,
  // LibTorch's at 2 (no block-scaled peer: ops/fp8/gemm.h).
  EXPECT_EQ(count_prefix(gpu, "gemm/cublaslt/e4m3/"), 19u * 3);
  EXPECT_EQ(count_prefix(gpu, "gemm/cublaslt_search/e4m3/"), 0u);  // with --gptbench_gemm_search
  EXPECT_EQ(count_prefix(gpu, "gemm/torch/e4m3/"), 19u * 2);
  EXPECT_FALSE(has(gpu, "gemm/torch/e4m3/square/scale:block/M:8192/N:8192/K:8192"));
  EXPECT_TRUE(has(gpu, "gemm/cublaslt/e4m3/small.qkv.fwd/scale:tensor/M:8192/N:2304/K:768"));
  EXPECT_TRUE(has(gpu, "gemm/torch/e4m3/small.lm_head.wgrad/scale:row/M:50304/N:768/K:8192"));
  EXPECT_TRUE(has(gpu, "gemm/cublaslt/e4m3/square/scale:block/M:8192/N:8192/K:8192"));
  // The bf16 row of the same GEMM is there to compare with.
  EXPECT_TRUE(has(gpu, "gemm/cublaslt/bf16/small.qkv.fwd/M:8192/N:2304/K:768"));
}

// The algorithm search's rows, as bf16's cublaslt_search: opt-in, at every shape and scaling.
TEST(Fp8Registration, SearchRowsWithGemmSearch) {
  const std::vector<std::string> gpu =
      registered({"--gptbench_dtypes=bf16", "--gptbench_fp8=true", "--gptbench_gemm_search=true"}, true);
  EXPECT_EQ(count_prefix(gpu, "gemm/cublaslt_search/e4m3/"), 19u * 3);
  EXPECT_TRUE(has(gpu, "gemm/cublaslt_search/e4m3/small.qkv.fwd/scale:tensor/M:8192/N:2304/K:768"));
}

TEST(Fp8Registration, QuantizeRows) {
  const std::vector<std::string> gpu = registered({"--gptbench_dtypes=bf16", "--gptbench_fp8=true"}, true);
  // 4 tensors × 4 granularities per impl.
  EXPECT_EQ(count_prefix(gpu, "quantize/fused/e4m3/"), 16u);
  EXPECT_EQ(count_prefix(gpu, "quantize/torch/e4m3/"), 16u);
  EXPECT_TRUE(has(gpu, "quantize/fused/e4m3/small.act/scale:block1x128/rows:8192/cols:768"));
  EXPECT_TRUE(has(gpu, "quantize/torch/e4m3/small.dlogits/scale:tensor/rows:8192/cols:50304"));
}

// The default suite keeps its length: FP8 rows come with --gptbench_fp8=true only.
TEST(Fp8Registration, OptIn) {
  const std::vector<std::string> gpu = registered({}, true);
  EXPECT_EQ(count_prefix(gpu, "gemm/cublaslt/e4m3/"), 0u);
  EXPECT_EQ(count_prefix(gpu, "quantize/"), 0u);
}

TEST(Fp8Registration, FollowBf16AndAreListedOnTheCpu) {
  const std::vector<std::string> fp32 = registered({"--gptbench_dtypes=fp32", "--gptbench_fp8=true"}, true);
  EXPECT_EQ(count_prefix(fp32, "gemm/cublaslt/e4m3/"), 0u);
  EXPECT_EQ(count_prefix(fp32, "quantize/"), 0u);
  const std::vector<std::string> cpu = registered({"--gptbench_fp8=true"}, false);
  EXPECT_GT(count_prefix(cpu, "gemm/cublaslt/e4m3/"), 0u);
  EXPECT_GT(count_prefix(cpu, "quantize/fused/e4m3/"), 0u);
  for (const CaseSpec& spec : registered_cases()) {
    if (spec.name.rfind("gemm/torch/e4m3/", 0) == 0 || spec.name.rfind("quantize/fused/", 0) == 0) {
      EXPECT_TRUE(spec.needs_cuda_kernels) << spec.name;  // skipped on the CPU with the reason
    }
  }
}

}  // namespace
}  // namespace gptbench
