#!/usr/bin/env python3
"""Where a case's GPU time goes, by kernel class: reads the Chrome-format traces that
`gptbench --gptbench_profile=DIR` and `python3 -m peers --gptbench_profile=DIR` write (each
holds fixtures/trace.h's 3 calls of one case), sums the GPU kernels, copies and memsets of each
by class, and prints one markdown table with a column per trace (milliseconds per call), then
each trace's heaviest kernels.

  scripts/kernel_classes.py OURS.trace.json PEER.trace.json [--names ours,peer] [--calls 3]
                            [--top 12] [--json FILE]

A kernel's class is the first of CLASSES whose pattern its lower-cased name matches; the
patterns cover cuBLAS/cuBLASLt (nvjet, xmma, cutlass), cuDNN and flash attention, ours
(ops/), ATen's and Inductor's generated Triton kernels (triton_poi/per/red_fused_<ops>).
Exit codes: 0, 2 (a file missing, not JSON, or without trace events)."""
import argparse
import json
import re
import sys
from collections import defaultdict

CLASSES = [
    ("attention", r"flash|fmha|attention|attn|sdpa|dot_do_o|convert_dq"),
    ("GEMM", r"gemm|nvjet|xmma|cutlass|cublas|triton_tem_fused_.*mm|splitk"),
    ("LayerNorm", r"layer_?norm|layernorm|(^|::)ln_"),
    ("cross-entropy", r"cross_entropy|log_softmax|nll_loss|softmax|(^|::)ce_"),
    ("optimizer", r"adam|lion|adafactor|multi_tensor|optim"),
    ("GELU / bias", r"gelu|bias"),
    ("reduction", r"reduce|_red_fused|sum_|column_sum"),
    ("cast / copy / fill", r"copy|memcpy|memset|cast|convert|fill|zero"),
    ("other elementwise", r"elementwise|vectorized|unrolled|triton_poi|triton_per|add|mul"),
]
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


class SystemExit2(Exception):
    """A trace that cannot be read: printed as one line, exit code 2."""


def kernel_class(name):
    low = name.lower()
    for cls, pattern in CLASSES:
        if re.search(pattern, low):
            return cls
    return "other"


def load_events(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit2(f"{path}: {e}")
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise SystemExit2(f"{path}: no traceEvents")
    return [e for e in events if e.get("cat") in GPU_CATEGORIES and "dur" in e]


def summarise(events, calls):
    """{class: ms per call}, {kernel name: (ms per call, launches per call)}, kernels per call."""
    by_class, by_kernel, launches = defaultdict(float), defaultdict(float), defaultdict(int)
    for e in events:
        ms = float(e["dur"]) / 1e3 / calls  # Chrome traces count microseconds
        by_class[kernel_class(e["name"])] += ms
        by_kernel[e["name"]] += ms
        launches[e["name"]] += 1
    kernels = {k: (v, launches[k] / calls) for k, v in by_kernel.items()}
    return dict(by_class), kernels, len(events) / calls


def table(names, summaries):
    out = ["| class | " + " | ".join(f"`{n}` ms" for n in names) + " |",
           "|---|" + "---:|" * len(names)]
    order = [c for c, _ in CLASSES] + ["other"]
    for cls in order:
        if any(cls in s[0] for s in summaries):
            out.append(f"| {cls} | " + " | ".join(f"{s[0].get(cls, 0.0):.2f}" for s in summaries) + " |")
    out.append("| **GPU total** | " + " | ".join(f"**{sum(s[0].values()):.2f}**" for s in summaries) + " |")
    out.append("| kernels per call | " + " | ".join(f"{s[2]:.0f}" for s in summaries) + " |")
    return out


def heaviest(path, kernels, top):
    out = [f"", f"Heaviest kernels of `{path}` (ms per call, launches per call):", ""]
    for name, (ms, n) in sorted(kernels.items(), key=lambda kv: -kv[1][0])[:top]:
        short = name if len(name) <= 110 else name[:107] + "..."
        out.append(f"- {ms:.3f} ms, {n:g}× [{kernel_class(name)}] `{short}`")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--calls", type=int, default=3, help="calls each trace holds (default 3)")
    ap.add_argument("--top", type=int, default=12, help="heaviest kernels listed per trace")
    ap.add_argument("--json", help="also write {trace: {class: ms}} here")
    ap.add_argument("--names", help="column titles, comma-separated (default: the files' names)")
    a = ap.parse_args(argv)
    names = [p.rsplit("/", 1)[-1].replace(".trace.json", "") for p in a.traces]
    if a.names:
        names = a.names.split(",")
        if len(names) != len(a.traces):
            print("kernel_classes: --names needs one title per trace", file=sys.stderr)
            return 2
    if a.calls < 1:
        print("kernel_classes: --calls must be ≥ 1", file=sys.stderr)
        return 2
    try:
        summaries = [summarise(load_events(p), a.calls) for p in a.traces]
    except SystemExit2 as e:
        print(f"kernel_classes: {e}", file=sys.stderr)
        return 2
    lines = table(names, summaries)
    for p, s in zip(a.traces, summaries):
        lines += heaviest(p, s[1], a.top)
    print("\n".join(lines))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({p: s[0] for p, s in zip(a.traces, summaries)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
