"""The table of scripts/dp-interference.sh: one line per setting, from OUT_DIR/<label>.json.

    python3 scripts/dp_interference_table.py [--mode ddp|zero1|fsdp] OUT_DIR SETTING...

A setting whose run wrote no row of the mode (default ddp) says why (no file, no row, the row's
error).
"""
import json
import os
import re
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


def main(argv):
    args = argv[1:]
    mode = "ddp"
    if args[:1] == ["--mode"]:
        mode, args = args[1], args[2:]
    out, settings = args[0], args[1:]
    print("%-34s %12s %10s %10s %10s %10s %10s %8s" % ("setting", "tokens/s", "scaling", "exposed %", "step ms",
                                                       "bwd ms", "ref bwd ms", "buckets"))
    for setting in settings:
        label = setting.replace(":", "_").replace(".", "_").replace("+", "_")
        row = row_of(os.path.join(out, label + ".json"), mode)
        if isinstance(row, str):
            print("%-34s %s" % (setting, row))
            continue
        values = [row.get(c) for c in COLUMNS]
        print("%-34s %12.0f %10.3f %10.2f %10.2f %10.2f %10.2f %8.0f" % tuple([setting] + [v if v is not None else float("nan") for v in values]))


if __name__ == "__main__":
    main(sys.argv)
