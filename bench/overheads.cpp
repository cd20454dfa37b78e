// Overhead studies: what a training loop loses outside the model's kernels
// (train/overheads.h), after the profiles of the seed studies.
//   data_loader  the training step of bench/train_step.cpp fed by 0, 1 or 2 loader threads,
//                each batch costing 1.5× the measured step of host work (a tokeniser/collator
//                stand-in): stall_ms (the step's wait for data), stall_pct, tokens/s.
//                names: overheads/data_loader/<size>/<precision>/B:<b>/T:<t>/prep:1.5x/workers:<n>
//   h2d          one host-to-device copy of a B×T int64 token batch and of 64 MiB, from pinned
//                (non-blocking) or pageable memory; bytes/s.
//                names: overheads/h2d/<pinned|pageable>/bytes:<n>
//   sync         10 steps (3 on the CPU) back to back, one synchronisation at the end, with or
//                without reading the loss on the host (.item()) after every step; step_ms,
//                tokens/s (host clock).
//                names: overheads/sync/<item|none>/<size>/<precision>/B:<b>/T:<t>/steps:<n>
//   launch       1000 tiny in-place additions (1024 floats) launched one by one, or replayed
//                from a CUDA graph; us_per_kernel (host clock, launch and execution).
//                names: overheads/launch/<eager|graph>/kernels:1000/numel:1024
// Default: the first --gptbench_models size at B×T of the options (and B:1 for sync), bf16 on
// a GPU, fp32 on the CPU (where the loader's host work is capped at 20 ms per batch, and the
// loader threads compete with the step for the cores: a smoke test, not a study).
// --gptbench_full=true adds 4 loader workers and prep 0.5×.
#include <algorithm>
#include <sstream>

#include "fixtures/bench_name.h"
#include "fixtures/family.h"
#include "fixtures/case_runner.h"
#include "train/overheads.h"

namespace gptbench {

GPTBENCH_FAMILY(overheads, const SuiteInputs& in) {
  const c10::Device device = in.device;
  TrainConfig base;
  base.model = in.models.front();
  base.precision = in.on_cuda() ? Precision::kBf16 : Precision::kFp32;
  base.batch = in.batch;
  base.seq = in.seq;
  base.optimizer = "torch_fused";
  // A study of the step `c`: <study>[/<segment>]/<size>/<precision>/B:<b>/T:<t>, then its axes.
  auto of_step = [](BenchName name, const TrainConfig& c) {
    return name.segment(c.model.name).segment(precision_name(c.precision)).axis("B", c.batch)
        .axis("T", c.seq);
  };
  auto add = [](const BenchName& name, std::function<Case()> make) {
    CaseSpec spec;
    spec.name = name;
    spec.unit = benchmark::kMillisecond;
    spec.make = std::move(make);
    register_case(std::move(spec));
  };

  std::vector<int> workers = {0, 1, 2};
  std::vector<double> preps = {1.5};
  if (in.full) {
    workers.push_back(4);
    preps.push_back(0.5);
  }
  for (double prep : preps)
    for (int w : workers) {
      DataLoaderCase dl{base, w, prep, in.on_cuda() ? 1.0 : 0.02};
      std::ostringstream per_step;  // 1.5x: host work per batch in steps
      per_step << prep << "x";
      add(of_step(BenchName("overheads/data_loader"), base).axis("prep", per_step.str()).axis("workers", w),
          [dl, device] { return make_data_loader_case(dl, device); });
    }

  for (int64_t bytes : {in.tokens() * int64_t{8}, int64_t{64} << 20})
    for (bool pinned : {true, false}) {
      CaseSpec spec;
      spec.name = BenchName("overheads/h2d", {pinned ? "pinned" : "pageable"}).axis("bytes", bytes);
      spec.make = [pinned, bytes, device] { return make_h2d_case(pinned, bytes, device); };
      register_case(std::move(spec));
    }

  std::vector<TrainConfig> sync_cfgs = {base};
  if (in.on_cuda() && in.batch != 1) {
    TrainConfig one = base;
    one.batch = 1;
    sync_cfgs.push_back(one);
  }
  const int sync_steps = in.on_cuda() ? 10 : 3;  // the CPU family stays short
  for (const auto& cfg : sync_cfgs)
    for (bool item : {false, true}) {
      SyncCase sc{cfg, item, sync_steps};
      add(of_step(BenchName("overheads/sync", {item ? "item" : "none"}), cfg).axis("steps", sync_steps),
          [sc, device] { return make_sync_case(sc, device); });
    }

  for (bool graph : {false, true}) {
    CaseSpec spec;
    constexpr int kKernels = 1000;
    constexpr int64_t kNumel = 1024;
    spec.name = BenchName("overheads/launch", {graph ? "graph" : "eager"})
                    .axis("kernels", kKernels).axis("numel", kNumel);
    spec.make = [graph, device] { return make_launch_case(graph, kKernels, kNumel, device); };
    register_case(std::move(spec));
  }
}

}  // namespace gptbench
