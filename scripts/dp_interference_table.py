"""The table of scripts/dp-interference.sh: one line per setting, from OUT_DIR/<label>.json.

    python3 scripts/dp_interference_table.py [--mode ddp|zero1|fsdp] [--rounds R] OUT_DIR SETTING...

The last column is the row's SM clock over its one-GPU reference's (sm_clock_mhz ÷
ref_sm_clock_mhz; "-" where NVML reads none, as on the CPU): on a power-capped GPU the power the
collectives draw lowers the clock the compute runs at.
With R > 1 each setting has R runs (<label>.r1.json ...): its line gives the medians over the
runs that wrote a row, then the range of their scaling efficiency and how many they were.
A setting whose runs wrote no row of the mode (default ddp) says why (no file, no row, the row's
error).
"""
import json
import os
import re
import statistics
import sys

COLUMNS = ("tokens/s", "scaling_efficiency", "exposed_comm_pct", "step_ms", "backward_ms", "ref_backward_ms", "buckets")


def row_of(path, mode):
    """The row of `mode` in a run file, or a string saying why there is none."""
    try:
        rows = json.load(open(path))["benchmarks"]
    except (OSError, ValueError, KeyError) as e:
        return "no run (%s)" % e
    rows = [r for r in rows if re.search("/mode:%s(/|$)" % mode, r.get("name", "")) and r.get("run_type", "iteration") == "iteration"]
    if not rows:
        return "no %s row" % mode
    if rows[0].get("error_occurred"):
        return "error: " + rows[0].get("error_message", "?")
    return rows[0]


def median_of(rows, column):
    values = [r[column] for r in rows if r.get(column) is not None]
    return statistics.median(values) if values else float("nan")


def clock_ratio(rows):
    """The median over the rows of sm_clock_mhz / ref_sm_clock_mhz, as text ("-": none read)."""
    ratios = [r["sm_clock_mhz"] / r["ref_sm_clock_mhz"] for r in rows
              if r.get("sm_clock_mhz") and r.get("ref_sm_clock_mhz")]
    return "%.3f" % statistics.median(ratios) if ratios else "-"


def main(argv):
    args = argv[1:]
    mode, rounds = "ddp", 1
    while args[:1] in (["--mode"], ["--rounds"]):
        if args[0] == "--mode":
            mode = args[1]
        else:
            rounds = int(args[1])
        args = args[2:]
    out, settings = args[0], args[1:]
    head = "%-34s %12s %10s %10s %10s %10s %10s %8s %10s" % ("setting", "tokens/s", "scaling", "exposed %", "step ms",
                                                             "bwd ms", "ref bwd ms", "buckets", "clock/ref")
    print(head + ("  scaling range (runs)" if rounds > 1 else ""))
    for setting in settings:
        label = setting.replace(":", "_").replace(".", "_").replace("+", "_")
        files = [label + ".json"] if rounds == 1 else ["%s.r%d.json" % (label, k) for k in range(1, rounds + 1)]
        found = [row_of(os.path.join(out, f), mode) for f in files]
        rows = [r for r in found if not isinstance(r, str)]
        if not rows:
            print("%-34s %s" % (setting, found[0]))
            continue
        line = "%-34s %12.0f %10.3f %10.2f %10.2f %10.2f %10.2f %8.0f" % tuple([setting] + [median_of(rows, c) for c in COLUMNS])
        line += " %10s" % clock_ratio(rows)
        if rounds > 1:
            scaling = [r["scaling_efficiency"] for r in rows if r.get("scaling_efficiency") is not None]
            line += "  %.3f-%.3f(%d)" % (min(scaling), max(scaling), len(rows)) if scaling else "  -(%d)" % len(rows)
        print(line)


if __name__ == "__main__":
    main(sys.argv)
