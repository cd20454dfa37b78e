// Memory family: what fits on a smaller GPU. For each configuration, the largest batch whose
// training step fits under --gptbench_memory_limit (a binary search over real steps seeded by
// the memory model), the measured peak there beside the model's prediction, and the step time
// at that batch (train/memory_case.h, model/memory.h, docs/memory.md).
//   names:    model/memory/<size>/<precision>/opt:<opt>/ckpt:<mode>/T:<t>
//   counters: max_batch, predicted_max_batch, peak_mem_bytes, predicted_peak_bytes,
//             pred_error_pct, probes, memory_limit_bytes, tokens/s, step_ms and the phases
// Default grid (GPU): small, medium, large, xl, 2.7B × T 512, 1024 × bf16, tf32 (fp32 weights
// and activations, TF32 matmuls; of those --gptbench_dtypes selects) × AdamW (LibTorch's fused
// kernel, as PyTorch's AdamW(fused=True)), 8-bit Adam (ours) × checkpointing none, every block.
// On a GPU the family is registered only under --gptbench_memory_limit (the default suite has
// no rows of it); the study's question is --gptbench_memory_limit=16GiB --benchmark_filter=^model/memory/.
// --gptbench_full=true adds fp32 without TF32, Adafactor and Lion, and probes configurations the
// model says cannot fit. On the CPU: the tiny model at the options' B×T, fp32, LibTorch's and
// our AdamW, both modes, the CPU allocator's peak beside the prediction (no search: nothing runs
// out of memory there).
#include <algorithm>
#include <string>
#include <vector>

#include "fixtures/family.h"
#include "train/memory_case.h"
#include "train/case.h"
#include "train/optim.h"
#include "model/config.h"

namespace gptbench {

GPTBENCH_FAMILY(memory, const SuiteInputs& in) {
  const bool cuda = in.on_cuda();
  if (cuda && in.memory_limit_bytes <= 0) return;  // what fits needs a cap to fit under
  std::vector<GPT2Config> sizes = {cpu_tiny_config()};
  std::vector<std::string> precisions = {"fp32"};
  std::vector<int64_t> seqs = {in.seq};
  if (cuda) {
    sizes.clear();
    for (const auto& name : preset_names()) sizes.push_back(model_config(name));
    seqs = {512, 1024};
    // tf32 stands for fp32 training: fp32 weights and activations (the same memory), TF32
    // matmuls; fp32 with TF32 off takes 3–7× longer per step and is in the full grid.
    precisions.clear();
    for (const char* p : {"bf16", "tf32", "fp32"})
      if (in.has_dtype(p) && (in.full || std::string(p) != "fp32")) precisions.push_back(p);
  }
  // The CPU runs 8-bit Adam's reference step, whose temporaries the model (written for the
  // fused kernels) leaves out: ours AdamW stands in for it there.
  std::vector<std::string> wanted = {"torch_fused", cuda ? "adam8bit" : "adamw"}, optimizers;
  if (in.full) wanted.insert(wanted.end(), {"adafactor", "lion"});
  const std::vector<std::string> have = train_optimizer_names();  // this build's
  for (const auto& name : wanted)
    if (std::find(have.begin(), have.end(), name) != have.end()) optimizers.push_back(name);
  // bf16 first: its steps are the fast ones, so a time-boxed run has every size's bf16 rows.
  for (const auto& prec : precisions)
    for (const auto& size : sizes)
      for (int64_t seq : seqs)
        for (const auto& opt : optimizers)
          for (const char* mode : {"none", "all"}) {
            MemoryCaseOptions mo;
            mo.cfg = train_config(size, prec, in.batch, seq, opt, mode);
            mo.limit_bytes = in.memory_limit_bytes;
            mo.probe_all = in.full;
            register_case({memory_case_name(mo),
                           [mo, device = in.device] { return make_memory_case(mo, device); },
                           /*needs_cuda_kernels=*/false, benchmark::kMillisecond});
          }
}

}  // namespace gptbench
