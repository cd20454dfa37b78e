"""Why a GEMM row differs between processes: per benchmark, each process's median time and the
kernels its trace ran (scripts/gpu-device-time.sh gemm N).

    python3 scripts/gemm_processes.py DIR...    (each DIR holds run.json and trace/*.json)

Prints one block per benchmark: the spread of the process medians (max/min - 1) and, per
process, its median and the GPU kernels of its traced calls; `kernels differ` where the
processes did not run the same kernels.
"""
import collections
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from kernel_classes import load_events  # noqa: E402


def medians(path):
    out = collections.defaultdict(list)
    for b in json.load(open(path)).get("benchmarks", []):
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            out[b["run_name"].removesuffix("/manual_time")].append(b["real_time"])
    return {k: statistics.median(v) for k, v in out.items()}


def kernels(trace_dir):
    out = {}
    for path in glob.glob(os.path.join(trace_dir, "**", "*.json"), recursive=True):
        names = sorted({e["name"] for e in load_events(path) if e.get("cat") == "kernel"})
        out[os.path.basename(path)] = names
    return out


def main(dirs):
    runs = [(d, medians(os.path.join(d, "run.json")), kernels(os.path.join(d, "trace"))) for d in dirs]
    names = sorted(set().union(*(m.keys() for _, m, _ in runs)))
    for name in names:
        times = [m[name] for _, m, _ in runs if name in m]
        spread = max(times) / min(times) - 1 if times else float("nan")
        trace_file = re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".trace.json"  # fixtures/trace_files.cpp
        ks = [tuple(k.get(trace_file, ())) for _, _, k in runs]
        same = len(set(ks)) <= 1
        print(f"{name}: process spread {100 * spread:.1f}%{'' if same else '  KERNELS DIFFER'}")
        for (d, m, _), kk in zip(runs, ks):
            print(f"  {os.path.basename(d)}: {m.get(name, float('nan')):.2f} us  {' + '.join(k[:80] for k in kk)}")


if __name__ == "__main__":
    main(sys.argv[1:])
