// Cross-entropy family: the mean loss of the LM head's logits (B·T rows, the vocabulary padded
// to a multiple of 64 in columns, the first V counted) against random targets, forward and
// forward+backward.
//   impls:  torch (the columns narrowed to V, converted to fp32, at::cross_entropy_loss — what
//           the PyTorch peer and head:torch run), fused (ops/cross_entropy.cu; needs a GPU),
//           and those registered at kCrossEntropy (fixtures/extension.h; forward_only ones have
//           no fwd_bwd rows).
//   dtypes: bf16, fp32 (of those selected with --gptbench_dtypes): the logits' storage.
//   shapes: vocab: B·T rows (--gptbench_batch × --gptbench_seq) × each selected model's padded
//           vocabulary, V = its vocabulary.
//   cost:   the bytes the fused path must move: forward one read of the counted logits
//           (rows·V·size), forward+backward that plus one more read and a write of the whole
//           gradient (rows·(2V + C)·size); %peak of the measured copy bandwidth. (torch moves
//           about 5× that: the fp32 copy, log_softmax over it, the copies back.)
//   names:  loss/<impl>/<dtype>/<fwd|fwd_bwd>/vocab/rows:R/classes:V/cols:C, and fwd_bwd's with a
//           last launch:<graph|eager> (graph: replays of a CUDA graph of the call, device time)
#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fixtures/bench_name.h"
#include "fixtures/case_runner.h"
#include "fixtures/dtype.h"
#include "fixtures/extension.h"
#include "fixtures/family.h"
#include "fixtures/family_impls.h"
#include "fixtures/verify.h"
#include "model/config.h"
#include "ops/cross_entropy.h"

namespace gptbench {
namespace {

struct LossShape {
  int64_t rows, classes, cols;
};

// The loss and the gradient of 64 evenly spaced rows (and the last) against the float64
// reference: rows are independent, so a sample checks the kernel without a float64 copy of
// gigabytes of logits. Allowed relative error: the fp32 arithmetic (~1e-6) and, for bf16, the
// gradient's rounding to 8 significant bits (≤ 2⁻⁸ per element, ~2e-3 in norm): 1e-2 / 1e-4.
std::string verify_sample(const at::Tensor& logits, const at::Tensor& targets, int64_t classes,
                          const std::function<CrossEntropyFn>& fn, bool backward) {
  const int64_t rows = logits.size(0), n = std::min<int64_t>(rows, 64);
  std::set<int64_t> picked = {rows - 1};
  for (int64_t i = 0; i < n; ++i) picked.insert(i * (rows - 1) / std::max<int64_t>(n - 1, 1));
  auto idx = at::tensor(std::vector<int64_t>(picked.begin(), picked.end()), at::kLong)
                 .to(logits.device());
  auto x = logits.index_select(0, idx).detach().requires_grad_(backward);
  auto t = targets.index_select(0, idx);
  auto loss = fn(x, t, classes, -100);
  const auto ref = cross_entropy_reference(x, t, classes);
  auto why = check_close(loss.detach().reshape({1}), ref.loss.reshape({1}), 1e-4);
  if (!why.empty() || !backward) return why;
  loss.backward();
  return check_close(x.grad(), ref.grad, logits.scalar_type() == at::kFloat ? 1e-4 : 1e-2);
}

Case make_loss_case(const std::function<CrossEntropyFn>& fn, const DtypeSpec& spec,
                    bool backward, const LossShape& s, c10::Device device) {
  struct State {
    at::Tensor logits, targets, loss;
  };
  auto st = std::make_shared<State>();
  auto opts = at::TensorOptions().device(device);
  // Spread like a trained LM head's logits (std 3); targets uniform over the vocabulary.
  st->logits = (at::randn({s.rows, s.cols}, opts.dtype(at::kFloat)) * 3).to(spec.type);
  st->targets = at::randint(s.classes, {s.rows}, opts.dtype(at::kLong));
  if (backward) st->logits.requires_grad_(true);
  Case c;
  c.run = [st, fn, backward, classes = s.classes] {
    if (backward) st->logits.mutable_grad() = at::Tensor();  // a fresh gradient each call
    at::Tensor loss = fn(st->logits, st->targets, classes, -100);
    if (backward) loss.backward();
    st->loss = loss.detach();  // no autograd graph kept alive past the call
  };
  c.outputs = [st] { return std::vector<at::Tensor>{st->loss, st->logits.grad()}; };
  c.verify = [st, fn, backward, classes = s.classes] {
    return verify_sample(st->logits, st->targets, classes, fn, backward);
  };
  const double elem = static_cast<double>(at::elementSize(spec.type));
  const double counted = static_cast<double>(s.rows) * static_cast<double>(s.classes) * elem;
  c.cost.bytes = backward ? 2 * counted + static_cast<double>(s.rows) * s.cols * elem : counted;
  c.cost.peak = PeakKind::kCopy;
  return c;
}

}  // namespace

GPTBENCH_FAMILY(loss, const SuiteInputs& in) {
  const auto impls = family_impls(kCrossEntropy, {{"torch", torch_cross_entropy},
                                                  {"fused", fused_cross_entropy, {}, true}});
  std::set<std::pair<int64_t, int64_t>> seen;
  std::vector<LossShape> shapes;
  for (const GPT2Config& cfg : in.models) {
    if (seen.insert({cfg.vocab, cfg.padded_vocab()}).second)
      shapes.push_back({in.tokens(), cfg.vocab, cfg.padded_vocab()});
  }
  for (const DtypeSpec& dtype : in.dtypes_among({"fp32", "bf16"}))
    for (bool backward : {false, true})
      for (const auto& s : shapes)
        for (const auto& impl : impls) {
          if (!impl_takes(impl, dtype.name, backward)) continue;
          CaseSpec spec;
          spec.name = BenchName("loss", {impl.name, dtype.name, backward ? "fwd_bwd" : "fwd", "vocab"})
                          .axis("rows", s.rows).axis("classes", s.classes).axis("cols", s.cols);
          spec.graph_form = backward;  // autograd's host work between the two passes
          spec.make = [fn = impl.fn, dtype, backward, s, device = in.device] {
            return make_loss_case(fn, dtype, backward, s, device);
          };
          register_impl_case(impl, std::move(spec), in.device);
        }
}

}  // namespace gptbench
