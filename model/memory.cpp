#include "model/memory.h"

#include <algorithm>
#include <stdexcept>

#include "ops/optim/quant_map.h"

namespace gptbench {
namespace {

// LibTorch's CUDA caching allocator hands out multiples of 512 bytes (kMinBlockSize): a tensor of
// 3 floats holds 512. Applied to the many small tensors (parameters, gradients, state); the
// activations are large enough that it does not matter.
double allocation(double bytes) { return bytes <= 0 ? 0 : 512.0 * static_cast<int64_t>((bytes + 511) / 512); }

double numel(const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t s : shape) n *= static_cast<double>(s);
  return n;
}

// Sum of f(shape) over the parameters, each rounded to the allocator's granularity.
template <typename F>
double per_tensor(const GPT2Config& model, F bytes_of) {
  double total = 0;
  for (const auto& shape : parameter_shapes(model)) total += allocation(bytes_of(shape));
  return total;
}

}  // namespace

double MemoryEstimate::total() const {
  return params + grads + state + inputs + workspace + saved + weights + transient;
}

std::vector<std::vector<int64_t>> parameter_shapes(const GPT2Config& m) {
  const int64_t C = m.d_model, F = m.d_ff;
  std::vector<std::vector<int64_t>> s = {{m.embedding_rows(), C}, {m.n_ctx, C}};  // wte, wpe
  for (int64_t l = 0; l < m.n_layer; ++l) {
    const std::vector<std::vector<int64_t>> block = {
        {C}, {C},                 // ln_1
        {3 * C, C}, {3 * C},      // attn.c_attn
        {C, C}, {C},              // attn.c_proj
        {C}, {C},                 // ln_2
        {F, C}, {F},              // mlp.c_fc
        {C, F}, {C}};             // mlp.c_proj
    s.insert(s.end(), block.begin(), block.end());
  }
  s.push_back({C});  // ln_f
  s.push_back({C});
  return s;
}

bool optimizer_keeps_grads(const std::string& optimizer) {
  // LibTorch's optimizers set gradients to none after the step; ours zero them in place (their
  // launch tables hold the gradients' addresses) — train/optim.h.
  return optimizer != "torch" && optimizer != "torch_fused";
}

double optimizer_state_bytes(const std::string& opt, const GPT2Config& model) {
  // AdamW (LibTorch's and ours): two fp32 moments, 8 B/param.
  if (opt == "torch" || opt == "torch_fused" || opt == "adamw")
    return 2 * per_tensor(model, [](const auto& s) { return 4 * numel(s); });
  // Lion: one fp32 moment, 4 B/param.
  if (opt == "lion") return per_tensor(model, [](const auto& s) { return 4 * numel(s); });
  // 8-bit Adam (ops/optim/adam8bit.h): tensors of n ≥ 4,096 elements keep two uint8 codes per
  // element and two fp32 absmax per block of 256 (2·n + 8·⌈n/256⌉ bytes, as four tensors);
  // smaller ones two fp32 moments (8·n).
  if (opt == "adam8bit") {
    double total = 0;
    for (const auto& shape : parameter_shapes(model)) {
      const double n = numel(shape);
      if (n >= optim::kMinQuantNumel) {
        const double blocks = static_cast<double>((static_cast<int64_t>(n) + optim::kQuantBlock - 1) /
                                                  optim::kQuantBlock);
        total += 2 * allocation(n) + 2 * allocation(4 * blocks);
      } else {
        total += 2 * allocation(4 * n);
      }
    }
    return total;
  }
  // Adafactor (ops/optim/adafactor.h): a matrix (r, c) keeps fp32 row and column factors,
  // 4·r + 4·c bytes; a vector of n its fp32 second moment, 4·n.
  if (opt == "adafactor") {
    double total = 0;
    for (const auto& shape : parameter_shapes(model))
      total += shape.size() > 1 ? allocation(4.0 * static_cast<double>(shape[0])) +
                                      allocation(4.0 * static_cast<double>(shape[1]))
                                : allocation(4 * numel(shape));
    return total;
  }
  throw std::invalid_argument("memory model: unknown optimizer '" + opt +
                              "'; valid: torch, torch_fused, adamw, adam8bit, adafactor, lion");
}

double block_saved_bytes(const MemoryConfig& cfg) {
  const double N = static_cast<double>(cfg.batch * cfg.seq), C = static_cast<double>(cfg.model.d_model),
               F = static_cast<double>(cfg.model.d_ff), a = cfg.bf16 ? 2 : 4;
  // SDPA's log-sum-exp, fp32 (B, H, T): FlashAttention-2 (bf16 on CUDA) and the CPU's flash
  // kernel keep T rows; the memory-efficient kernel (fp32 on CUDA) rounds T up to 32.
  const int64_t lse_rows = cfg.cuda && !cfg.bf16 ? (cfg.seq + 31) / 32 * 32 : cfg.seq;
  const double lse = 4.0 * static_cast<double>(cfg.batch * cfg.model.n_head * lse_rows);
  // x and h (the fp32 residual stream, inputs of ln_1 and ln_2): 8NC; the Linear inputs ln_1(x)
  // and ln_2(h) (bf16 copies under autocast, the fp32 outputs otherwise): 2aNC; QKV 3aNC and
  // the attention output aNC (c_proj's input); c_fc's output and GELU's output 2aNF; mean and
  // rstd of both LayerNorms, fp32 per token: 16N.
  return 8 * N * C + 2 * a * N * C + 4 * a * N * C + 2 * a * N * F + 16 * N + lse;
}

MemoryEstimate estimate_memory(const MemoryConfig& cfg) {
  const GPT2Config& m = cfg.model;
  const double N = static_cast<double>(cfg.batch * cfg.seq), C = static_cast<double>(m.d_model),
               F = static_cast<double>(m.d_ff), V = static_cast<double>(m.embedding_rows()),
               L = static_cast<double>(m.n_layer), a = cfg.bf16 ? 2 : 4;
  MemoryEstimate e;
  e.params = per_tensor(m, [](const auto& s) { return 4 * numel(s); });
  const bool keeps = optimizer_keeps_grads(cfg.optimizer);
  e.grads = keeps ? e.params : 0;
  e.state = optimizer_state_bytes(cfg.optimizer, m);
  // idx and targets, int64 (B, T), on the device; on the CPU the host buffers (the drawn tokens
  // (B, T+1) and the host idx and targets) are allocated by the same allocator: 40N + 8B.
  e.inputs = cfg.cuda ? 2 * allocation(8 * N) : 40 * N + 8.0 * static_cast<double>(cfg.batch);
  e.workspace = cfg.cuda ? kGemmWorkspaceBytes : 0;
  double largest = 0;  // elements of the largest parameter (wte)
  for (const auto& shape : parameter_shapes(m)) largest = std::max(largest, numel(shape));

  // Saved activations: per block (full, recomputed whole, or attention half recomputed), then
  // ln_f's input 4NC and statistics 8N, and the LM head's input aNC; the position indices 8T.
  const double full = block_saved_bytes(cfg);
  const double whole_ckpt = 4 * N * C;  // the checkpoint keeps the block's input
  const double attn_ckpt = 4 * N * C + 4 * N * C + 8 * N + a * N * C + 2 * a * N * F;
  double saved = 0, kept_blocks = 0;
  for (int64_t l = 0; l < m.n_layer; ++l) {
    const bool whole = cfg.recompute.every > 0 && l % cfg.recompute.every == 0;
    if (whole) {
      saved += whole_ckpt;
    } else if (cfg.recompute.attention_only) {
      saved += attn_ckpt;
    } else {
      saved += full;
      kept_blocks += 1;
    }
  }
  saved += 4 * N * C + 8 * N + a * N * C + 8.0 * static_cast<double>(cfg.seq);
  e.saved = saved;

  // bf16 weight copies: autocast casts each Linear weight and bias to bf16 for its GEMM; the copy
  // lives as long as autograd saves it — the weights of the blocks that are not recomputed
  // (2·(4C² + 2CF) each; the MLP half, 2·2CF, with attention-only recomputation) and the tied LM
  // head's 2VC, from their forward to their backward. Biases are not saved, and checkpointed
  // blocks run their forward without autograd, so theirs are freed at once (measured on the CPU:
  // autocast's cast cache keeps none of our modules' copies alive).
  const double lin_w = 4 * C * C + 2 * C * F;
  const double w_saved = !cfg.bf16 ? 0
                         : 2 * kept_blocks * lin_w +
                               (cfg.recompute.attention_only ? 2 * (L - kept_blocks) * 2 * C * F : 0) +
                               2 * V * C;

  // Parameter gradients during a block's backward. Kept gradients are accumulated in place
  // through a temporary of the weight's size — the largest, max(3C², FC) elements, bf16 from the
  // GEMM and then fp32 (6 B) or fp32 (4 B). Gradients set to none are created as the backward
  // goes: by then wte's 4VC (from the LM head) and the block's MLP weights' 4·2CF (the first
  // of its gradients; on the CPU this lands within 2% of the measured peak of this moment).
  const double block_grads = keeps ? (cfg.bf16 ? 6 : 4) * std::max(3 * C * C, F * C)
                                   : 4 * V * C + 4 * 2 * C * F;
  struct Moment {
    const char* name;
    double weights, transient;
  };
  std::vector<Moment> moments = {
      // log_softmax's forward: the logits aNV, their fp32 copy 4NV (bf16 only) and the
      // log-probabilities 4NV.
      {"loss", w_saved, a * N * V + (cfg.bf16 ? 4 * N * V : 0) + 4 * N * V},
      // log_softmax's backward: the log-probabilities, nll_loss's gradient and the input
      // gradient, fp32: 12NV.
      {"softmax", w_saved, 12 * N * V},
      // The LM head's GEMM backward: the logits' gradient aNV, the gradients of its input aNC
      // and of wte aVC.
      {"head", w_saved, a * N * V + a * N * C + a * V * C},
      // A block's backward: its gradients in flight (≈ the residual stream's gradient 4NC in and
      // out, the branch gradients 4NC, FlashAttention's fp32 dQ accumulator 4NC before the
      // inputs' gradients, the MLP's two aNF), the parameter gradients (below) and, when it is
      // recomputed, its activations and its bf16 weight copies again.
      {"block", w_saved,
       12 * N * C + 2 * a * N * F + block_grads +
           (cfg.recompute.every > 0 ? full + (cfg.bf16 ? 2 * lin_w : 0) : 0)},
  };
  // bf16: then wte's gradient goes from bf16 to fp32 (2VC + 4VC) while the input gradient 2NC
  // waits; the logits' gradient, the head's input aNC and wte's bf16 copy 2VC are freed.
  if (cfg.bf16) moments.push_back({"head_fp32", w_saved - 2 * V * C, 2 * N * C + 6 * V * C - a * N * C});
  for (const Moment& mo : moments) {
    if (mo.weights + mo.transient + saved > e.weights + e.transient + e.saved || e.moment.empty()) {
      e.moment = mo.name;
      e.weights = mo.weights;
      e.transient = mo.transient;
      e.saved = saved;
    }
  }
  // The optimizer step: activations are gone; every gradient exists (set to none: allocated in
  // this step), the embedding's dense gradient 4VC has just been added. The fused optimizers
  // allocate nothing; LibTorch's per-parameter AdamW two temporaries of the largest tensor.
  const double update = (keeps ? 0 : e.params) + 4 * V * C + (cfg.optimizer == "torch" ? 2 * 4 * largest : 0);
  if (update > e.weights + e.transient + e.saved) {
    e.moment = "update";
    e.saved = 0;
    e.weights = 0;
    e.transient = update;
  }
  return e;
}

int64_t predicted_max_batch(MemoryConfig cfg, double limit_bytes, int64_t cap) {
  auto fits = [&](int64_t b) {
    cfg.batch = b;
    return estimate_memory(cfg).total() <= limit_bytes;
  };
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = cap + 1;  // fits(lo), !fits(hi) (hi = cap + 1: not tried)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace gptbench
