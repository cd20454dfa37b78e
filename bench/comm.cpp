// Communication family: c10d collectives over every rank of the run (fixtures/comm_case.h) —
// all-reduce, reduce-scatter, all-gather, broadcast and all-to-all through ProcessGroupNCCL on
// GPUs, ProcessGroupGloo on the CPU.
//   names:    comm/<collective>/<dtype>/bytes:<N>/ranks:<R>
//   counters: time_us, algbw_GBps, busbw_GBps (nccl-tests' formulas), pct_p2p_peak (busbw over
//             the measured copy bandwidth to the next GPU), collectives_per_call, ranks
// Default (GPU): all-reduce in bf16 at 64 KiB, 1, 16, 64, 256 MiB and 1 GiB; the other
// collectives in bf16 at 1 and 256 MiB; and for each --gptbench_models size the buckets of its
// data-parallel step in fp32 (the gradients' type): all-reduce of a 25 MiB bucket (DDP's
// default) and of the whole flat gradient, reduce-scatter and all-gather of the flat gradient
// (ZeRO-1's two collectives). --gptbench_full=true: every power of two from 1 KiB to 4 GiB for
// every collective in bf16 and fp32.
// CPU (Gloo): fp32 at 4 KiB and 256 KiB for every collective, and the tiny model's flat gradient.
// Run with gptbench-run --ranks N for R = N; plain gptbench runs them with ranks:1. Every case
// runs a fixed number of calls (the same on every rank): 50 timed regions on a GPU.
#include <set>

#include "fixtures/comm_case.h"
#include "fixtures/family.h"
#include "fixtures/case_runner.h"
#include "model/config.h"

namespace gptbench {

GPTBENCH_FAMILY(comm, const SuiteInputs& in) {
  std::set<std::string> seen;
  auto add = [&](Collective op, const std::string& dtype, int64_t bytes) {
    CommCaseOptions cc{op, dtype, bytes, in.ranks};
    CaseSpec spec;
    spec.name = comm_name(cc);
    if (!seen.insert(spec.name).second) return;
    spec.iterations = in.on_cuda() ? 50 : 5;
    spec.make = [cc, device = in.device] { return make_comm_case(cc, device); };
    register_case(std::move(spec));
  };
  const std::vector<Collective> all = {Collective::kAllReduce, Collective::kReduceScatter,
                                       Collective::kAllGather, Collective::kBroadcast,
                                       Collective::kAllToAll};
  constexpr int64_t KiB = 1024, MiB = KiB * KiB;
  if (!in.on_cuda()) {
    for (Collective op : all)
      for (int64_t b : {4 * KiB, 256 * KiB}) add(op, "fp32", b);
  } else if (in.full) {
    for (const std::string dtype : {"bf16", "fp32"})
      for (Collective op : all)
        for (int64_t b = KiB; b <= 4 * KiB * MiB; b *= 2) add(op, dtype, b);
  } else {
    for (int64_t b : {64 * KiB, MiB, 16 * MiB, 64 * MiB, 256 * MiB, KiB * MiB})
      add(Collective::kAllReduce, "bf16", b);
    for (Collective op : all)
      for (int64_t b : {MiB, 256 * MiB}) add(op, "bf16", b);
  }
  // The data-parallel step's buckets (fp32 gradients).
  for (const GPT2Config& model : in.models) {
    const int64_t flat = 4 * param_count(model);
    if (in.on_cuda()) add(Collective::kAllReduce, "fp32", 25 * MiB);
    for (Collective op : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather})
      add(op, "fp32", flat);
  }
}

}  // namespace gptbench
