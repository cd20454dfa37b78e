"""PyTorch's data-parallel stacks beside gptbench's model/train_step_dp (docs/multigpu.md):
DistributedDataParallel, ZeroRedundancyOptimizer and FSDP2 under torch.compile, every rank one
process, written as Google Benchmark JSON with the family's names and counters.

  torchrun --nproc-per-node N -m peers.dp [--benchmark_filter=REGEX] [--benchmark_out=FILE]
           [--benchmark_repetitions=N] [--benchmark_list_tests] [--gptbench_device=auto|cpu|cuda]
           [--gptbench_models=medium,...] [--gptbench_batch=B] [--gptbench_seq=T]
           [--gptbench_compile_backend=inductor|eager]
  python3 -m peers.dp ...     (one process: ranks:1)
B is the per-GPU batch. Only rank 0 prints and writes --benchmark_out. The number of steps is
fixed (as gptbench's family), so --benchmark_min_time, --gptbench_dtypes and --gptbench_full are
accepted and have no effect; gptbench's other flags are ignored with a note.
Exit codes: 0 every benchmark reported (skipped ones with their reason), 1 no benchmark matches
the filter, 2 usage error (under torchrun the first rank to read the flags exits 2 with the reason in
its log, and torchrun stops the others and reports the failure).
"""
import sys

from peers import gb_json
from peers.cli import SUFFIX, parse_argv, selected

PROG = "gptbench-dp-peers"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv

    def rank_env():
        from peers.dp.ranks import rank_env as read

        return read()

    o, env, code = parse_argv(argv, __doc__, PROG, rank_env)
    if o is None:
        return code
    from peers.dp import case

    specs = selected(case.specs(o, env.world), o.filter)
    lead = env.rank == 0
    if o.list_only:
        if lead:
            for s in specs:
                print(s.name + SUFFIX)
        return 0 if specs else 1
    if not specs:
        if lead:
            print(f"{PROG}: no benchmark matches the filter '{o.filter}'", file=sys.stderr)
        return 1
    return run(specs, o, env)


def run(specs, o, env):
    import torch

    from peers.case import GEMM_BF16
    from peers.device_info import measure_peaks, run_context
    from peers.dp.case import run_case
    from peers.dp.ranks import Ranks

    torch._dynamo.config.cache_size_limit = 64  # one compiled graph per shape, never eager fallback
    ranks = Ranks(env, o.cuda)
    try:
        lead = ranks.rank == 0
        peaks = measure_peaks(ranks.device) if lead else {}
        ranks.barrier()  # the one-GPU references run on every rank at once
        writer = None
        if lead:
            ctx = run_context(o, peaks)
            ctx.update(peer="torch.distributed", gptbench_ranks=str(ranks.world),
                       dist_backend=torch.distributed.get_backend())
            writer = gb_json.Writer(o.out, gb_json.context(ctx))
        for index, spec in enumerate(specs):
            rows = run_case(spec, ranks, o, peaks.get(GEMM_BF16, 0.0), index)
            if lead:
                writer.add(rows)
                for r in rows:
                    if r.get("run_type") == "iteration":
                        what = r.get("error_message") or f"{r['real_time']:.3f} {r['time_unit']}"
                        print(f"{r['name']:<110} {what}", flush=True)
        if writer:
            writer.close()
    finally:
        ranks.close()
    return 0
