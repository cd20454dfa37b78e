// The fused optimizers' launch tables (ops/optim/device_table.*): when they are rebuilt, and
// the shared Adam scalars (ops/optim/multi_tensor.*). CPU tensors stand in for device ones:
// upload_bytes copies to whatever device the parameters are on.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "ops/optim/device_table.h"

namespace gptbench::optim {
namespace {

struct Row {
  const void* p;
  int64_t n;
};

std::vector<Row> rows_of(const std::vector<at::Tensor>& ts) {
  std::vector<Row> rows;
  for (const auto& t : ts) rows.push_back({t.data_ptr(), t.numel()});
  return rows;
}

// Whole chunks first (tensor order), then the partial ones; every chunk of every tensor once.
TEST(MakeChunks, ListsWholeChunksFirstThenPartialOnes) {
  const auto chunks = make_chunks({5, 40000, 16384, 0, 3, 32768}, 16384);
  const std::vector<std::pair<int, int>> want = {{1, 0}, {1, 1}, {2, 0}, {5, 0}, {5, 1},
                                                 {0, 0}, {1, 2}, {4, 0}};
  ASSERT_EQ(chunks.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(chunks[i].tensor, want[i].first) << "item " << i;
    EXPECT_EQ(chunks[i].chunk, want[i].second) << "item " << i;
  }
  EXPECT_THROW(make_chunks({5}, 0), std::invalid_argument);
}

TEST(LaunchTables, RebuiltOnlyWhenPointersOrGradientDtypeChange) {
  std::vector<at::Tensor> params = {at::randn({5}), at::randn({40000})};
  std::vector<at::Tensor> grads = {at::randn({5}), at::randn({40000})};
  LaunchTables t;
  ASSERT_TRUE(t.stale(params, grads));  // never built
  t.store_chunked(rows_of(params), params[0].device());  // sizes from the rows' n
  EXPECT_FALSE(t.stale(params, grads));
  // 5 elements: one chunk; 40,000: three chunks of kChunkElems = 16,384.
  ASSERT_EQ(t.num_items(), 4);
  EXPECT_EQ(t.items()[3].tensor, 1);
  EXPECT_EQ(t.items()[3].chunk, 2);
  EXPECT_EQ(t.rows<Row>()[1].n, 40000);
  EXPECT_EQ(t.rows<Row>()[1].p, params[1].data_ptr());

  auto moved = grads;
  moved[1] = at::randn({40000});  // a new gradient buffer
  EXPECT_TRUE(t.stale(params, moved));
  auto bf16 = grads;
  for (auto& g : bf16) g = g.to(at::kBFloat16);  // same shapes, other dtype and buffers
  EXPECT_TRUE(t.stale(params, bf16));
  auto new_param = params;
  new_param[0] = at::randn({5});
  EXPECT_TRUE(t.stale(new_param, grads));
  EXPECT_FALSE(t.stale(params, grads));  // asking does not change what was stored
}

TEST(LaunchTables, ABuildThatThrowsIsRetried) {
  std::vector<at::Tensor> params = {at::randn({7})}, grads = {at::randn({7})};
  LaunchTables t;
  ASSERT_TRUE(t.stale(params, grads));
  // The caller's build fails before store(): the key must not be kept.
  EXPECT_TRUE(t.stale(params, grads));
  t.store(rows_of(params), std::vector<ChunkRef>{{0, 0}}, params[0].device());
  EXPECT_FALSE(t.stale(params, grads));
}

TEST(AdamScalars, MatchTheBiasCorrectedUpdate) {
  const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  for (int64_t t : {1, 2, 10, 1000}) {
    const AdamScalars s = adam_scalars(lr, b1, b2, eps, wd, t);
    EXPECT_FLOAT_EQ(s.beta1, 0.9f);
    EXPECT_FLOAT_EQ(s.one_minus_beta1, 0.1f);
    EXPECT_FLOAT_EQ(s.one_minus_beta2, 0.001f);
    EXPECT_FLOAT_EQ(s.decay, static_cast<float>(1 - lr * wd));
    EXPECT_FLOAT_EQ(s.step_size, static_cast<float>(lr / (1 - std::pow(b1, t))));
    EXPECT_FLOAT_EQ(s.inv_sqrt_bc2, static_cast<float>(1 / std::sqrt(1 - std::pow(b2, t))));
    EXPECT_FLOAT_EQ(s.eps, 1e-8f);
  }
  // Step 1: step_size = lr / (1 − β1) = 1e-2; 1 / sqrt(1 − β2) = 1 / sqrt(1e-3) ≈ 31.62.
  const AdamScalars first = adam_scalars(lr, b1, b2, eps, wd, 1);
  EXPECT_NEAR(first.step_size, 1e-2, 1e-8);
  EXPECT_NEAR(first.inv_sqrt_bc2, 31.6227766, 1e-4);
}

}  // namespace
}  // namespace gptbench::optim
