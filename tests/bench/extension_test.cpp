// Implementations registered at every extension point (fixtures/extension.h) get the family's
// rows: a twin of each row of a reference implementation of the family, with the same shapes,
// dtypes and axes, and the family's check: a right implementation passes it, a wrong one fails
// it with the family's message. Registered on the CPU (the GPU's rows from its flags), built
// and checked on the CPU; the last test runs one on a GPU.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "fixtures/extension.h"
#include "fixtures/family.h"
#include "fixtures/options.h"
#include "fixtures/suite_inputs.h"
#include "ops/cross_entropy.h"
#include "ops/gemm.h"
#include "ops/layernorm.h"
#include "ops/optim/adamw.h"
#include "ops/softmax.h"
#include "tests/ops/have_gpu.h"

namespace gptbench {
namespace {

// The specs every family registers for a run with `flags` (on a GPU with `gpu`), by name.
std::map<std::string, CaseSpec> registered(std::vector<const char*> flags, bool gpu = false) {
  flags.insert(flags.begin(), {"gptbench", gpu ? "--gptbench_device=cuda" : "--gptbench_device=cpu"});
  const ParseResult parsed = parse_options(static_cast<int>(flags.size()), flags.data(), gpu);
  EXPECT_EQ(parsed.error, "");
  const size_t before = registered_cases().size();
  register_families(suite_inputs(parsed.options, 1));
  std::map<std::string, CaseSpec> specs;
  for (size_t i = before; i < registered_cases().size(); ++i)
    specs.emplace(registered_cases()[i].name, registered_cases()[i]);
  return specs;
}

// `name` with its implementation segment (the second) replaced by `impl`.
std::string with_impl(const std::string& name, const std::string& impl) {
  const size_t a = name.find('/'), b = name.find('/', a + 1);
  return name.substr(0, a + 1) + impl + name.substr(b);
}

// The names of `impl`'s rows of `family` holding `part`, the impl segment replaced by `as`.
std::vector<std::string> rows_of(const std::map<std::string, CaseSpec>& specs,
                                 const std::string& family, const std::string& impl,
                                 const std::string& part, const std::string& as) {
  std::vector<std::string> out;
  for (const auto& [name, spec] : specs)
    if (name.rfind(family + "/" + impl + "/", 0) == 0 && name.find(part) != std::string::npos)
      out.push_back(with_impl(name, as));
  return out;
}

// Registers `ok` and `bad` at `point`, registers the families for `flags`, and checks: `ok`'s
// rows are exactly the rows of `ref` (one of the family's own implementations) that hold `part`
// (the point's pass), `bad`'s too; the first row of each is built and checked, ok passing and
// bad failing with the family's message. Both are removed again.
template <class Fn>
void check_point(const ImplPoint<Fn>& point, const std::string& family, const std::string& ref,
                 const std::string& part, std::function<Fn> ok, std::function<Fn> bad,
                 std::vector<const char*> flags) {
  register_impl(point, "ext_ok", ok);
  register_impl(point, "ext_bad", bad);
  const auto specs = registered(flags);
  remove_any_impl(point.key, "ext_ok");
  remove_any_impl(point.key, "ext_bad");
  const auto ref_rows = rows_of(specs, family, ref, part, ref);
  ASSERT_FALSE(ref_rows.empty()) << family << "/" << ref;
  EXPECT_EQ(rows_of(specs, family, "ext_ok", "", ref), ref_rows) << family;
  EXPECT_EQ(rows_of(specs, family, "ext_bad", "", ref), ref_rows) << family;
  const CaseSpec& good = specs.at(with_impl(ref_rows.front(), "ext_ok"));
  const CaseSpec& wrong = specs.at(with_impl(ref_rows.front(), "ext_bad"));
  EXPECT_FALSE(good.needs_cuda_kernels);
  at::manual_seed(1);
  Case c = good.make();
  EXPECT_EQ(c.verify(), "") << good.name;
  Case w = wrong.make();
  const std::string why = w.verify();
  EXPECT_NE(why.find("relative error"), std::string::npos) << wrong.name << ": " << why;
  EXPECT_NE(why.find("exceeds"), std::string::npos) << wrong.name << ": " << why;
}

TEST(Extension, SoftmaxForwardAndBackward) {
  check_point<SoftmaxFwdFn>(kSoftmaxFwd, "softmax", "torch", "/fwd/", softmax_torch,
                            [](const at::Tensor& x) { return at::exp(x - x.amax(-1, true)); },
                            {"--gptbench_dtypes=fp32,bf16"});
  check_point<SoftmaxBwdFn>(kSoftmaxBwd, "softmax", "torch", "/bwd/", softmax_backward_torch,
                            [](const at::Tensor& y, const at::Tensor& dy) { return y * dy; }, {});
}

TEST(Extension, LayerNormForwardAndBackward) {
  check_point<LayerNormFn>(kLayerNorm, "layernorm", "torch", "", torch_add_layernorm,
                           [](const at::Tensor& x, const at::Tensor& branch, const at::Tensor& gamma,
                              const at::Tensor& beta, double eps) {
                             AddLayerNorm out = torch_add_layernorm(x, branch, gamma, beta, eps);
                             out.y = out.y - beta;  // beta left out
                             return out;
                           },
                           {"--gptbench_dtypes=fp32,bf16"});
}

TEST(Extension, CrossEntropyForwardAndBackward) {
  check_point<CrossEntropyFn>(kCrossEntropy, "loss", "torch", "", torch_cross_entropy,
                              [](const at::Tensor& logits, const at::Tensor& targets,
                                 int64_t classes, int64_t ignore) {
                                return 1.5 * torch_cross_entropy(logits, targets, classes, ignore);
                              },
                              {});
}

TEST(Extension, AttentionForwardAndBackward) {
  auto sdpa = [](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal);
  };
  check_point<AttentionFn>(kAttention, "attention", "naive", "", sdpa,
                           [sdpa](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  bool causal) { return sdpa(q, k, v, !causal); },
                           {});
}

TEST(Extension, OptimizerStep) {
  auto adamw = [](double lr) {
    return [lr](const std::vector<at::Tensor>& params) -> OptimizerStep {
      AdamWOptions o;
      o.lr = lr;
      auto opt = std::make_shared<AdamW>(params, o, OptimBackend::kReference);
      return [opt](const std::vector<at::Tensor>& grads) { opt->step(grads); };
    };
  };
  check_point<OptimizerFn>(kAdamW, "optim", "adamw", "", adamw(AdamWOptions{}.lr),
                           adamw(2 * AdamWOptions{}.lr), {});
}

TEST(Extension, Gemm) {
  check_point<GemmFn>(kGemm, "gemm", "torch", "", gemm_torch,
                      [](const at::Tensor& a, const at::Tensor& b, at::Tensor& c, const GemmArgs& args) {
                        gemm_torch(a, b, c, args);
                        c.mul_(1.01);
                      },
                      {"--gptbench_dtypes=fp32"});
}

// Rows only in the dtypes asked for, forward rows only when asked, and a CUDA-only
// implementation's rows skipped on the CPU with the reason.
TEST(Extension, OptionsSelectAndSkipRows) {
  ImplOptions bf16_forward;
  bf16_forward.dtypes = {"bf16"};
  bf16_forward.forward_only = true;
  register_impl(kLayerNorm, "ext_bf16", torch_add_layernorm, bf16_forward);
  ImplOptions cuda;
  cuda.cuda_only = true;
  register_impl(kSoftmaxFwd, "ext_cuda", softmax_torch, cuda);
  const auto specs = registered({"--gptbench_dtypes=fp32,bf16"});
  remove_any_impl(kLayerNorm.key, "ext_bf16");
  remove_any_impl(kSoftmaxFwd.key, "ext_cuda");
  int bf16_rows = 0, cuda_rows = 0;
  for (const auto& [name, spec] : specs) {
    if (name.rfind("layernorm/ext_bf16/", 0) == 0) {
      ++bf16_rows;
      EXPECT_EQ(name.rfind("layernorm/ext_bf16/bf16/fwd/", 0), 0u) << name;
    }
    if (name.rfind("softmax/ext_cuda/", 0) == 0) {
      ++cuda_rows;
      EXPECT_EQ(unavailable_reason(spec), "");  // not the suite's kernels: its own reason
      try {
        spec.make();
        ADD_FAILURE() << name << " was built on the CPU";
      } catch (const SkipCase& e) {
        EXPECT_EQ(std::string(e.what()), "skipped: ext_cuda runs on CUDA only");
      }
    }
  }
  EXPECT_GT(bf16_rows, 0);
  EXPECT_GT(cuda_rows, 0);
}

// A registered name the family already has fails the registration, naming both.
TEST(Extension, ANameOfTheSuitesOwnIsAnError) {
  register_impl(kSoftmaxFwd, "fused", softmax_torch);
  try {
    registered({});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'fused' registered at softmax/fwd"), std::string::npos) << e.what();
  }
  remove_any_impl(kSoftmaxFwd.key, "fused");
}

// On a GPU: a registered implementation built and checked on the device, beside ours.
TEST(Extension, SoftmaxOnTheGpu) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU";
  register_impl(kSoftmaxFwd, "ext_ok", softmax_torch);
  const auto specs = registered({"--gptbench_dtypes=bf16"}, /*gpu=*/true);
  remove_any_impl(kSoftmaxFwd.key, "ext_ok");
  auto it = specs.lower_bound("softmax/ext_ok/bf16/fwd/attn.");
  ASSERT_TRUE(it != specs.end() && it->first.rfind("softmax/ext_ok/bf16/fwd/attn.", 0) == 0);
  Case c = it->second.make();
  EXPECT_EQ(c.verify(), "") << it->first;
}

}  // namespace
}  // namespace gptbench
