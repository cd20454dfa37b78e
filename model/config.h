#pragma once
// GPT-2 size presets (docs/design.md §6) and custom sizes.
#include <cstdint>
#include <string>
#include <vector>

namespace gptbench {

struct GPT2Config {
  std::string name;         // "small", ..., or "custom:L=2:d=128:h=4"
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t d_model = 768;
  int64_t d_ff = 3072;
  int64_t vocab = 50257;    // the model's vocabulary (parameter counts use this)
  int64_t n_ctx = 1024;     // context length (position embeddings)
  // The token embedding (and so the tied LM head) gets padded_vocab() rows instead of vocab:
  // the LM-head GEMMs then run on 64-aligned shapes (on the H200, 50257 columns ran at 95-148
  // TFLOP/s and 50304 at 710-750). The padding rows start at zero, no token selects them and
  // the loss ignores their logits, so the model computes the same function.
  bool pad_vocab = false;

  int64_t head_dim() const { return d_model / n_head; }
  // Vocabulary padded to a multiple of 64 for the LM-head GEMM (50257 -> 50304).
  int64_t padded_vocab() const { return (vocab + 63) / 64 * 64; }
  int64_t embedding_rows() const { return pad_vocab ? padded_vocab() : vocab; }
};

// Names of the presets, in size order: small, medium, large, xl, 2.7B.
const std::vector<std::string>& preset_names();

// A preset by name, or a custom size "custom:L=<layers>:d=<d_model>:h=<heads>[:ff=<d_ff>]
// [:V=<vocab>][:T=<n_ctx>]" (',' between fields is accepted too; the returned name has ':').
// Each field is a whole number from 1 to 2^31 - 1. Throws std::invalid_argument naming the
// valid choices.
GPT2Config model_config(const std::string& name);

// The tiny size the CPU runs by default: big enough to exercise every module, small enough
// that a forward+backward step takes milliseconds on two cores.
GPT2Config cpu_tiny_config();

// Exact parameter count (LM head tied to the token embedding, biases on every Linear).
int64_t param_count(const GPT2Config& cfg);
// The same in floating point, for sizes whose count would overflow int64_t (size checks).
double param_count_approx(const GPT2Config& cfg);

}  // namespace gptbench
