#!/usr/bin/env python3
"""Markdown table of the memory family (docs/memory.md) from one or more gptbench JSON files:
a row per size and T, a column per precision × optimizer × checkpointing; each cell the largest
batch found, the model's prediction in brackets and its peak error, or why the case did not run.
A later file's row replaces an earlier one's of the same name.

  python3 scripts/memory_table.py [--precision bf16] memory-16GiB.json [more.json ...]
"""
import json
import re
import sys

NAME = re.compile(r"^model/memory/([^/]+)/([^/]+)/opt:([^/]+)/ckpt:([^/]+)/T:(\d+)")
SIZES = ["tiny", "small", "medium", "large", "xl", "2.7B"]
OPTS = {"torch_fused": "AdamW", "adam8bit": "8-bit Adam", "adafactor": "Adafactor", "lion": "Lion",
        "adamw": "AdamW (ours)"}


def cell(row):
    if row.get("error_occurred"):
        msg = row.get("error_message", "")
        if "does not fit" in msg:
            m = re.search(r"predicted peak ([0-9.]+) (\w+)", msg)
            return f"— (needs {float(m.group(1)):.1f} {m.group(2)})" if m else "—"
        if "out of memory at batch 1" in msg:
            m = re.search(r"needs ([0-9.]+) (\w+) \(measured without the cap; predicted [0-9.]+ \w+, ([+-][0-9.]+%)", msg)
            return f"— (needs {float(m.group(1)):.1f} {m.group(2)}, model {m.group(3)})" if m else "— (OOM at B=1)"
        return "— (" + msg[:60] + ")"
    pred = row.get("predicted_max_batch")
    p = f" ({pred:.0f})" if pred is not None else ""
    return f"{row['max_batch']:.0f}{p}, {row['pred_error_pct']:+.1f}%"


def main(args):
    precision = None
    if args[:1] == ["--precision"]:
        if len(args) < 3:
            sys.exit(__doc__)
        precision, args = args[1], args[2:]
    paths = args
    rows = {}
    for path in paths:
        try:
            with open(path) as f:
                benchmarks = json.load(f)["benchmarks"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"memory_table.py: {path}: not a gptbench JSON run ({e})")
        for r in benchmarks:
            m = NAME.match(r["name"])
            if m and r.get("run_type", "iteration") == "iteration" and precision in (None, m.group(2)):
                rows[m.groups()] = r
    if not rows:
        sys.exit("memory_table.py: no model/memory rows in " + ", ".join(paths))
    cols = sorted({(p, o, c) for (_, p, o, c, _) in rows},
                  key=lambda k: (k[0] != "bf16", list(OPTS).index(k[1]) if k[1] in OPTS else 99, k[2] != "none"))
    head = [f"{p} {OPTS.get(o, o)}{' ckpt' if c != 'none' else ''}" for p, o, c in cols]
    print("| size | T | " + " | ".join(head) + " |")
    print("|---|---|" + "---|" * len(cols))
    keys = sorted({(s, int(t)) for (s, _, _, _, t) in rows}, key=lambda k: (SIZES.index(k[0]) if k[0] in SIZES else 99, k[1]))
    for size, t in keys:
        cells = [cell(rows[(size, p, o, c, str(t))]) if (size, p, o, c, str(t)) in rows else "" for p, o, c in cols]
        print(f"| {size} | {t} | " + " | ".join(cells) + " |")
    ran = [r for r in rows.values() if "pred_error_pct" in r and not r.get("error_occurred")]
    if ran:
        worst = max(ran, key=lambda r: abs(r["pred_error_pct"]))
        print(f"\nworst prediction error {worst['pred_error_pct']:+.1f}% at {worst['name'].split('/manual_time')[0]};"
              f" {len(ran)} of {len(rows)} configurations ran")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
