// The example's implementations, registered into the suite's softmax family (docs/extending.md).
// Each gets the family's shapes and dtypes, its check against the float64 reference with the
// family's tolerance, its bytes/s and %peak counters, and names beside the suite's own:
//   softmax/mine/fp32/fwd/attn.tiny/rows:128/cols:16   next to   softmax/torch/fp32/fwd/...
#include <ATen/ATen.h>

#include "fixtures/extension.h"
#include "my_softmax.h"

namespace {

// mine: our CUDA kernel on a GPU, the CPU loop elsewhere, in every dtype the family runs.
const bool kMine = gptbench::register_impl(gptbench::kSoftmaxFwd, "mine", [](const at::Tensor& x) {
  return my_softmax(x);
});

// mine_wrong: the same without the normalisation. Its rows are reported as
// "wrong result: relative error ... exceeds ..." and never timed.
const bool kMineWrong = gptbench::register_impl(gptbench::kSoftmaxFwd, "mine_wrong",
                                                [](const at::Tensor& x) {
                                                  return my_softmax(x, /*normalise=*/false);
                                                });

}  // namespace
