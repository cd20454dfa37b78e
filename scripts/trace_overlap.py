#!/usr/bin/env python3
"""What overlapping collectives cost the kernels they run beside: compares two traces of one
case (`gptbench --gptbench_profile=DIR`, each holding fixtures/trace.h's 3 calls), one from a run
of one rank and one rank's from a run of several (DIR/<case>.rank<k>.trace.json), kernel by
kernel.

  scripts/trace_overlap.py ONE_RANK.trace.json RANK.trace.json [--calls 3] [--json FILE]

The compute kernels (every kernel but the collectives', whose names hold "nccl", or "onerank"
for NCCL's one-rank copies) of the two traces are paired by name and order: the k-th run of a
kernel in one trace with its k-th run in the other (the order kernels of two streams interleave
in can differ between the traces); the runs of a kernel one trace has more of are left out. Each pair is put in a group by its class
(scripts/kernel_classes.py) and by how much of the several-rank kernel's time a collective
kernel ran beside it: alone (none), partly (up to half), mostly (more than half). The table
gives, per group, the kernels, their milliseconds per call on one rank and beside the
collectives, the ratio and the milliseconds added per call; then, for each trace, the
milliseconds per call the compute kernels kept the GPU busy (their union) and the trace's span
per call (first kernel's start to last kernel's end ÷ calls: busy plus idle), and the
collectives' kernels per call, their time and their CTAs.
Exit codes: 0, 2 (a file missing, not JSON, without trace events, or no kernel paired)."""
import argparse
import json
import os
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_classes import SystemExit2, kernel_class, load_events  # noqa: E402

GROUPS = ("alone", "partly", "mostly")


def is_collective(name):
    low = name.lower()
    return "nccl" in low or "onerank" in low


def kernels(path):
    return [e for e in load_events(path) if e.get("cat") == "kernel"]


def merged(intervals):
    """The union of [start, end) intervals, sorted and disjoint."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def overlapped_fraction(event, spans):
    """The fraction of `event`'s time inside `spans` (merged, sorted)."""
    a, b = float(event["ts"]), float(event["ts"]) + float(event["dur"])
    inside = sum(max(0.0, min(b, y) - max(a, x)) for x, y in spans if y > a and x < b)
    return inside / (b - a) if b > a else 0.0


def busy_and_span(events, calls):
    """Milliseconds per call: the union of the events' intervals, and first start to last end."""
    spans = merged((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events)
    if not spans:
        return 0.0, 0.0
    busy = sum(b - a for a, b in spans)
    return busy / 1e3 / calls, (spans[-1][1] - spans[0][0]) / 1e3 / calls


def group_of(fraction):
    return "alone" if fraction <= 0 else "partly" if fraction <= 0.5 else "mostly"


def compare(one, many, calls):
    """{(class, group): [n, one-rank µs, several-rank µs]}, paired and compute kernel counts,
    and the collectives' summary, from the two traces' kernel events."""
    c1 = [e for e in one if not is_collective(e["name"])]
    cn = [e for e in many if not is_collective(e["name"])]
    coll = [e for e in many if is_collective(e["name"])]
    spans = merged((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in coll)
    runs1, runsn = defaultdict(list), defaultdict(list)
    for e in sorted(c1, key=lambda e: float(e["ts"])):
        runs1[e["name"]].append(e)
    for e in sorted(cn, key=lambda e: float(e["ts"])):
        runsn[e["name"]].append(e)
    groups = defaultdict(lambda: [0, 0.0, 0.0])
    paired = 0
    for name, firsts in runs1.items():
        for e1, en in zip(firsts, runsn.get(name, [])):
            g = groups[(kernel_class(name), group_of(overlapped_fraction(en, spans)))]
            g[0] += 1
            g[1] += float(e1["dur"])
            g[2] += float(en["dur"])
            paired += 1
    ctas = Counter()
    for e in coll:
        grid = e.get("args", {}).get("grid") or [0]
        ctas[int(grid[0])] += 1
    collectives = {"kernels_per_call": len(coll) / calls,
                   "compute_busy_ms_per_call": [busy_and_span(c1, calls)[0], busy_and_span(cn, calls)[0]],
                   "span_ms_per_call": [busy_and_span(one, calls)[1], busy_and_span(many, calls)[1]],
                   "ms_per_call": sum(float(e["dur"]) for e in coll) / 1e3 / calls,
                   "ctas": dict(ctas)}
    return groups, paired, (len(c1), len(cn)), collectives


def table(groups, calls):
    out = ["| class | beside a collective | kernels per call | one rank, ms | several ranks, ms | ratio | added ms |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for (cls, grp), (n, t1, tn) in sorted(groups.items(), key=lambda kv: (kv[0][0], GROUPS.index(kv[0][1]))):
        out.append(f"| {cls} | {grp} | {n / calls:.3g} | {t1 / 1e3 / calls:.2f} | {tn / 1e3 / calls:.2f} | "
                   f"{tn / t1 if t1 else float('nan'):.3f} | {(tn - t1) / 1e3 / calls:+.2f} |")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("one_rank")
    ap.add_argument("rank")
    ap.add_argument("--calls", type=int, default=3, help="calls each trace holds (default 3)")
    ap.add_argument("--json", help="also write the groups and the collectives' summary here")
    a = ap.parse_args(argv)
    if a.calls < 1:
        print("trace_overlap: --calls must be ≥ 1", file=sys.stderr)
        return 2
    try:
        groups, paired, counts, coll = compare(kernels(a.one_rank), kernels(a.rank), a.calls)
    except SystemExit2 as e:
        print(f"trace_overlap: {e}", file=sys.stderr)
        return 2
    if not paired:
        print("trace_overlap: no kernel of the two traces pairs up: are they of one case?", file=sys.stderr)
        return 2
    lines = table(groups, a.calls)
    busy, span = coll["compute_busy_ms_per_call"], coll["span_ms_per_call"]
    lines += ["", f"- {paired} of {counts[0]} (one rank) and {counts[1]} (several) compute kernels paired.",
              f"- Compute kernels busy per call: {busy[0]:.2f} ms on one rank, {busy[1]:.2f} ms beside the "
              f"collectives; span per call {span[0]:.2f} and {span[1]:.2f} ms.",
              f"- Collectives: {coll['kernels_per_call']:g} kernels and {coll['ms_per_call']:.2f} ms per call; "
              "CTAs per kernel " + ", ".join(f"{k} ({v / a.calls:g} per call)" for k, v in sorted(coll["ctas"].items())) + "."]
    print("\n".join(lines))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"groups": [{"class": c, "beside": g, "kernels": n, "one_rank_us": t1, "rank_us": tn}
                                  for (c, g), (n, t1, tn) in sorted(groups.items())],
                       "paired": paired, "collectives": coll}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
