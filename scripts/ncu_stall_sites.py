#!/usr/bin/env python3
"""The SASS instructions of one kernel with the most warp stall samples, from the CSV that
`ncu --import REP.ncu-rep --page source --csv --print-source sass` writes (a profile taken with
`--set full` or the SourceCounters section).

  scripts/ncu_stall_sites.py SOURCE.csv [--top N] [--title LINE]
"""
import argparse
import csv
import sys


def column(header, *names):
    for name in names:
        for i, h in enumerate(header):
            if h.strip().lower() == name.lower():
                return i
    for name in names:
        for i, h in enumerate(header):
            if name.lower() in h.strip().lower():
                return i
    return None


def number(text):
    try:
        return float(text.replace(",", "")) if text.strip() else 0.0
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--title", action="append", default=[])
    a = ap.parse_args()
    with open(a.csv, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    stall = "Warp Stall Sampling (All Samples)"
    start = next((i for i, r in enumerate(rows)
                  if column(r, "Source") is not None and column(r, stall) is not None), None)
    if start is None:
        sys.exit(f"{a.csv}: no 'Source' and '{stall}' columns (not a SASS source page?)")
    header, body = rows[start], rows[start + 1:]
    src = column(header, "Source")
    samples = column(header, stall)
    executed = column(header, "Warp Instructions Executed", "Instructions Executed")
    sites = [(number(r[samples]), number(r[executed]) if executed is not None else 0.0,
              r[src].strip()) for r in body if len(r) > max(src, samples)]
    total = sum(s for s, _, _ in sites)
    if total <= 0:
        sys.exit(f"{a.csv}: no stall samples")
    for line in a.title:
        print(f"# {line}")
    print(f"# warp stall samples in all: {total:.0f}; "
          f"the {a.top} instructions with the most samples:")
    print("# samples  share  executed  instruction")
    for s, e, text in sorted(sites, key=lambda x: -x[0])[:a.top]:
        print(f"{s:9.0f} {100 * s / total:5.1f}% {e:9.0f}  {text}")


if __name__ == "__main__":
    main()
