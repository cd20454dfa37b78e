#!/usr/bin/env python3
"""Markdown phase-breakdown table of the training-step benchmarks in a gptbench JSON run.

    scripts/phase_table.py RUN.json [--filter REGEX]

One row per model/train_step benchmark that ran: the time of each phase (CUDA events between
phases, so the phases add up to the step), the step time, tokens/s, MFU and peak memory.
Standard library only, so it runs wherever the JSON is.
"""
import argparse
import json
import re
import sys

PHASES = ["data", "h2d", "forward", "loss", "backward", "optimizer", "zero_grad", "sync", "graph"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--filter", default="^model/train_step/")
    args = parser.parse_args()
    try:
        with open(args.run) as f:
            run = json.load(f)
        pattern = re.compile(args.filter)
    except (OSError, ValueError, re.error) as e:
        print(f"phase_table: {args.run}: {e}", file=sys.stderr)
        return 2
    rows = [b for b in run.get("benchmarks", [])
            if pattern.search(b.get("name", "")) and "step_ms" in b and not b.get("error_occurred")]
    if not rows:
        print(f"phase_table: {args.run}: no training-step rows match {args.filter!r}", file=sys.stderr)
        return 2
    phases = [p for p in PHASES if any(b.get(f"{p}_ms", 0) > 0 for b in rows)]
    ctx = run.get("context", {})
    print(f"{ctx.get('gpu_name', '?')}, {ctx.get('date', '?')[:10]}; times in ms\n")
    print("| configuration | " + " | ".join(phases) + " | step | tokens/s | MFU % | peak GB |")
    print("|---|" + "---:|" * (len(phases) + 4))
    for b in rows:
        name = b["name"].removeprefix("model/train_step/").removesuffix("/manual_time")
        cells = [f"{b.get(f'{p}_ms', 0):.2f}" for p in phases]
        print(f"| {name} | " + " | ".join(cells) +
              f" | {b['step_ms']:.2f} | {b.get('tokens/s', 0):,.0f} | {b.get('mfu_pct', 0):.1f}"
              f" | {b.get('peak_mem_bytes', 0) / 1e9:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
