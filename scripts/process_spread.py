"""How far a row's level moves from one process to the next, for runs grouped by a label:
per row and label, the spread of the process medians ((max - min) / median of each process's
median over its repetitions) and the largest spread within one process. Files are named
LABEL-N.json (scripts/gpu-device-time.sh copies: copies-K-N.json).

    python3 scripts/process_spread.py RUN.json...
"""
import collections
import json
import os
import re
import statistics
import sys


def main(paths):
    # (row, label) -> one list of repetition times per process
    runs = collections.defaultdict(list)
    for path in paths:
        label = re.sub(r"-\d+\.json$", "", os.path.basename(path))
        try:
            rows = json.load(open(path))["benchmarks"]
        except Exception as e:  # a process that died is a gap in the table, not a crash
            print("%s: unreadable (%s)" % (path, e))
            continue
        times = collections.defaultdict(list)
        for r in rows:
            if r.get("run_type", "iteration") == "iteration" and not r.get("error_occurred"):
                times[r["name"].removesuffix("/manual_time")].append(r["real_time"])
        for name, t in times.items():
            runs[(name, label)].append(t)
    print("%-70s %-10s %5s %9s %9s" % ("row", "label", "procs", "spread%", "within%"))
    for (name, label), procs in sorted(runs.items()):
        medians = [statistics.median(t) for t in procs]
        m = statistics.median(medians)
        spread = 100 * (max(medians) - min(medians)) / m
        within = max(100 * (max(t) - min(t)) / statistics.median(t) for t in procs)
        print("%-70s %-10s %5d %9.2f %9.2f" % (name[:70], label, len(procs), spread, within))


if __name__ == "__main__":
    main(sys.argv[1:])
