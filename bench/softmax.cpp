// Softmax family: softmax over the last dimension of a (rows, cols) tensor, forward and backward.
//   impls:  naive (max, subtract, exp, sum, divide as five LibTorch ops; backward: multiply,
//           sum, subtract, multiply), torch (at::softmax / at::_softmax_backward_data),
//           fused (our CUDA kernels, ops/softmax.cu; needs a GPU), and those registered at
//           kSoftmaxFwd / kSoftmaxBwd (fixtures/extension.h).
//   dtypes: fp32, bf16 (of those selected with --gptbench_dtypes); fp32 arithmetic inside.
//   shapes: attn.<model>: GPT-2 attention scores, B·H·T rows × T cols, T in {128..1024} up to
//           --gptbench_seq, H from each selected model, B = --gptbench_batch;
//           attn.small.B64 (GPU): 786,432 × 1,024, GPT-2 small's scores at B = 64 — the shape
//           of docs/design.md §7's peers and of its performance target;
//           vocab: B·T rows × the padded vocabulary (50,304) — the LM-head logits;
//           sweep: cols 32..65,536 with rows·cols = 2²⁸ on the GPU (512 MB of bf16, 1 GB of
//           fp32 each way), 2¹⁵ on the CPU (a few points; every power of two with
//           --gptbench_full=true). The CPU runs the tiny model and small sweeps.
//   cost:   bytes = one read and one write per element forward (2·rows·cols·size), two reads
//           and one write backward (3·rows·cols·size); %peak of the measured copy bandwidth.
//   names:  softmax/<impl>/<dtype>/<fwd|bwd>/<shape label>/rows:R/cols:C
#include <ATen/ATen.h>

#include <algorithm>
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
#include "ops/softmax.h"

namespace gptbench {
namespace {

struct SoftmaxShape {
  std::string label;  // attn.<model>, vocab, sweep
  int64_t rows, cols;
};

// Relative Frobenius error allowed against the float64 reference.
//   fp32: a few ulps per element (exp, one division, the fp32 row sum): ~1e-7; 2e-5 is loose.
//   bf16 torch/fused: fp32 arithmetic, one rounding of the output to 8 significant bits
//     (≤ 2⁻⁸ = 3.9e-3 per element, ~2e-3 in norm): 1e-2.
//   bf16 naive: every intermediate (x − max, exp, sum, quotient) is rounded to bf16, and the
//     rounding of x − max is amplified by exp: a few 1e-3 per step; 3e-2.
double softmax_tolerance(const std::string& impl, const std::string& dtype) {
  if (dtype == "fp32") return 2e-5;
  return impl == "naive" ? 3e-2 : 1e-2;
}

// Up to 64 evenly spaced rows and the last one: every row is independent, so a sample of rows
// checks the kernel without a float64 copy of a 3 GB tensor.
at::Tensor sample_rows(int64_t rows) {
  const int64_t n = std::min<int64_t>(rows, 64);
  std::set<int64_t> picked = {rows - 1};
  for (int64_t i = 0; i < n; ++i) picked.insert(i * (rows - 1) / std::max<int64_t>(n - 1, 1));
  return at::tensor(std::vector<int64_t>(picked.begin(), picked.end()), at::kLong);
}

// One of `fwd` (forward rows) and `bwd` (backward rows) is set.
Case make_softmax_case(const std::string& impl, const std::function<SoftmaxFwdFn>& fwd,
                       const std::function<SoftmaxBwdFn>& bwd, const DtypeSpec& spec,
                       const SoftmaxShape& s, c10::Device device) {
  const bool backward = static_cast<bool>(bwd);
  auto opts = at::TensorOptions().device(device).dtype(spec.type);
  struct State {
    at::Tensor x, y, dy, out;  // (rows, cols)
  };
  auto st = std::make_shared<State>();
  // Fresh random inputs, spread like attention scores (std 3: a few dominant entries per row).
  st->x = (at::randn({s.rows, s.cols}, opts.dtype(at::kFloat)) * 3).to(spec.type);
  if (backward) {
    st->y = at::softmax(st->x, -1);  // (rows, cols), rows sum to one
    st->dy = at::randn({s.rows, s.cols}, opts);
  }
  Case c;
  if (!backward)
    c.run = [st, fwd] { st->out = fwd(st->x); };
  else
    c.run = [st, bwd] { st->out = bwd(st->y, st->dy); };
  const double tol = softmax_tolerance(impl, spec.name);
  c.verify = [st, run = c.run, backward, tol, rows = s.rows]() {
    run();
    auto idx = sample_rows(rows).to(st->x.device());
    at::Tensor ref;
    if (!backward)
      ref = softmax_reference(st->x.index_select(0, idx));
    else
      ref = softmax_backward_reference(st->y.index_select(0, idx), st->dy.index_select(0, idx));
    return check_close(st->out.index_select(0, idx), ref, tol);
  };
  const int64_t elem = static_cast<int64_t>(at::elementSize(spec.type));
  c.cost.bytes = backward ? 1.5 * softmax_bytes(s.rows, s.cols, elem)  // read y, dy; write dx
                          : softmax_bytes(s.rows, s.cols, elem);
  c.cost.peak = PeakKind::kCopy;
  return c;
}

std::vector<SoftmaxShape> softmax_shapes(const SuiteInputs& in) {
  std::vector<SoftmaxShape> shapes;
  const bool gpu = in.on_cuda();
  const std::vector<int64_t> seqs = gpu ? std::vector<int64_t>{128, 256, 512, 1024}
                                        : std::vector<int64_t>{16, 32, 64};
  std::set<std::pair<int64_t, int64_t>> vocab_seen;
  for (const GPT2Config& cfg : in.models) {
    for (int64_t t : seqs)
      if (t <= in.seq) shapes.push_back({"attn." + cfg.name, in.batch * cfg.n_head * t, t});
    if (vocab_seen.insert({in.tokens(), cfg.padded_vocab()}).second)
      shapes.push_back({"vocab", in.tokens(), cfg.padded_vocab()});
  }
  // The peers' shape of docs/design.md §7 and the performance target's: GPT-2 small's scores at B = 64,
  // T = 1024 (786,432 × 1,024), whatever the selected batch.
  if (gpu) {
    const GPT2Config small = model_config("small");
    const SoftmaxShape peer{"attn.small.B64", 64 * small.n_head * 1024, 1024};
    bool have = false;
    for (const auto& sh : shapes) have |= sh.rows == peer.rows && sh.cols == peer.cols;
    if (!have) shapes.push_back(peer);
  }
  std::vector<int64_t> sweep;
  if (gpu && in.full)
    for (int64_t c = 32; c <= 65536; c *= 2) sweep.push_back(c);
  else if (gpu)
    sweep = {32, 1024, 8192, 65536};
  else
    sweep = in.full ? std::vector<int64_t>{32, 128, 1024, 4096} : std::vector<int64_t>{32, 1024};
  // 2²⁸ elements on the GPU: at 2²⁶ (128 MB of bf16 each way) even a plain copy reached only
  // 91-92% of the copy rate measured at 1 GiB (H200, 2026-11-22: 128 MB 3.83-3.90 TB/s, 512 MB
  // 4.12-4.15, 1 GiB 4.21-4.22), so the sweep measured launch ramp and tail as much as the
  // kernel.
  const int64_t elements = gpu ? (int64_t{1} << 28) : (int64_t{1} << 15);
  for (int64_t c : sweep) shapes.push_back({"sweep", std::max<int64_t>(1, elements / c), c});
  return shapes;
}

}  // namespace

GPTBENCH_FAMILY(softmax, const SuiteInputs& in) {
  const auto fwd = family_impls(kSoftmaxFwd, {{"naive", softmax_naive},
                                              {"torch", softmax_torch},
                                              {"fused", softmax_fused, {}, true}});
  const auto bwd = family_impls(kSoftmaxBwd, {{"naive", softmax_backward_naive},
                                              {"torch", softmax_backward_torch},
                                              {"fused", softmax_backward_fused, {}, true}});
  for (const DtypeSpec& dtype : in.dtypes_among({"fp32", "bf16"}))
    for (bool backward : {false, true})
      for (const auto& shape : softmax_shapes(in)) {
        auto add = [&](const auto& impl, std::function<SoftmaxFwdFn> f, std::function<SoftmaxBwdFn> b) {
          if (!impl_takes(impl, dtype.name)) return;
          CaseSpec spec;
          spec.name = BenchName("softmax", {impl.name, dtype.name, backward ? "bwd" : "fwd", shape.label})
                          .axis("rows", shape.rows).axis("cols", shape.cols);
          spec.make = [name = impl.name, f, b, dtype, shape, device = in.device] {
            return make_softmax_case(name, f, b, dtype, shape, device);
          };
          register_impl_case(impl, std::move(spec), in.device);
        };
        if (!backward)
          for (const auto& i : fwd) add(i, i.fn, nullptr);
        else
          for (const auto& i : bwd) add(i, nullptr, i.fn);
      }
}

}  // namespace gptbench
