#!/usr/bin/env python3
"""The multi-GPU results as two short tables: comm/all_reduce bf16 bus bandwidth against the
PyTorch peer, and the data-parallel training steps.
  python3 scripts/multigpu_table.py multigpu.json multigpu-1gpu.json peer-allreduce.json
Missing files are reported and skipped."""
import json
import re
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"({path}: {e})")
        return None


def rows(doc):
    for b in (doc or {}).get("benchmarks", []):
        if b.get("run_type", "iteration") == "iteration":
            yield b


def ran(docs, pattern, first, ranks, width):
    """Yields (match, row) for the rows of `docs` whose name matches `pattern` and that ran; a
    row that did not run is printed with its error (`first` and `ranks`: its match's groups)."""
    for doc in docs:
        for b in rows(doc):
            m = re.match(pattern, b["name"])
            if not m:
                continue
            if b.get("error_occurred"):
                print(f"{m.group(first):>{width}} {m.group(ranks):>5}  {b.get('error_message', 'error')}")
                continue
            yield m, b


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    multi, one, peer = (load(p) for p in sys.argv[1:])
    peer_bw = {r["bytes"]: r["busbw_GBps"] for r in (peer or {}).get("rows", [])}
    print("\ncomm/all_reduce bf16 (busbw GB/s)")
    print(f"{'bytes':>12} {'ranks':>5} {'gptbench':>9} {'peer':>8} {'ratio':>6} {'%p2p':>6}")
    for m, b in ran([multi], r"comm/all_reduce/bf16/bytes:(\d+)/ranks:(\d+)", 1, 2, 12):
        nbytes, ours = int(m.group(1)), b.get("busbw_GBps", 0)
        p = peer_bw.get(nbytes)
        ratio = f"{ours / p:6.3f}" if p else "     -"
        pct = b.get("pct_p2p_peak")
        print(f"{nbytes:>12} {m.group(2):>5} {ours:9.1f} {p if p else float('nan'):8.1f} {ratio} "
              f"{pct if pct is not None else float('nan'):6.1f}")
    print("\nmodel/train_step_dp (GPT-2 per-GPU batch as named)")
    print(f"{'mode':>6} {'ranks':>5} {'tokens/s':>10} {'per GPU':>9} {'step ms':>8} {'slowest':>8} "
          f"{'ref ms':>7} {'eff':>6} {'comm %':>7} {'state':>6} {'params':>6} {'peak GiB':>8}")
    for m, b in ran([one, multi], r"model/train_step_dp/.*/ranks:(\d+)/mode:(\w+)", 2, 1, 6):
        g = b.get
        print(f"{m.group(2):>6} {m.group(1):>5} {g('tokens/s', 0):10.0f} {g('tokens_per_s_per_gpu', 0):9.0f} "
              f"{g('step_ms', 0):8.1f} {g('slowest_rank_step_ms', 0):8.1f} {g('ref_step_ms', 0):7.1f} "
              f"{g('scaling_efficiency', 0):6.3f} {g('exposed_comm_pct', 0):7.1f} {g('state_ratio', 0):6.3f} "
              f"{g('param_ratio', 0):6.3f} {g('peak_mem_max_rank_bytes', 0) / 2**30:8.2f}")


if __name__ == "__main__":
    main()
