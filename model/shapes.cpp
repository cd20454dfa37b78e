#include "model/shapes.h"

namespace gptbench {

std::vector<GemmShape> training_gemms(const GPT2Config& cfg, int64_t tokens) {
  struct Layer {
    const char* name;
    int64_t in, out;
  };
  const int64_t C = cfg.d_model;
  const Layer layers[] = {{"qkv", C, 3 * C},
                          {"attn_proj", C, C},
                          {"mlp_up", C, cfg.d_ff},
                          {"mlp_down", cfg.d_ff, C},
                          {"lm_head", C, cfg.padded_vocab()}};
  std::vector<GemmShape> shapes;
  for (const auto& l : layers) {
    const std::string n = l.name;
    // Y (tokens, out) = X (tokens, in) · Wᵀ, W stored (out, in).
    shapes.push_back({n + ".fwd", tokens, l.out, l.in, false, true});
    // dX (tokens, in) = dY (tokens, out) · W (out, in).
    shapes.push_back({n + ".dgrad", tokens, l.in, l.out, false, false});
    // dW (out, in) = dYᵀ · X, dY stored (tokens, out).
    shapes.push_back({n + ".wgrad", l.out, l.in, tokens, true, false});
  }
  return shapes;
}

std::vector<GemmShape> square_gemms(int64_t lo, int64_t hi) {
  std::vector<GemmShape> shapes;
  for (int64_t n = lo; n <= hi; n *= 2) shapes.push_back({"square", n, n, n, false, false});
  return shapes;
}

}  // namespace gptbench
