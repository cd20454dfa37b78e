"""The table of scripts/dp-interference.sh: one line per setting, from OUT_DIR/<label>.json.

    python3 scripts/dp_interference_table.py OUT_DIR SETTING...

A setting whose run wrote no ddp row says why (no file, no row, the row's error).
"""
import json
import os
import sys

COLUMNS = ("tokens/s", "scaling_efficiency", "exposed_comm_pct", "step_ms", "buckets")


def row_of(path):
    """The ddp row of a run file, or a string saying why there is none."""
    try:
        rows = json.load(open(path))["benchmarks"]
    except (OSError, ValueError, KeyError) as e:
        return "no run (%s)" % e
    rows = [r for r in rows if "/mode:ddp" in r.get("name", "") and r.get("run_type", "iteration") == "iteration"]
    if not rows:
        return "no ddp row"
    if rows[0].get("error_occurred"):
        return "error: " + rows[0].get("error_message", "?")
    return rows[0]


def main(argv):
    out, settings = argv[1], argv[2:]
    print("%-22s %12s %10s %10s %10s %8s" % ("setting", "tokens/s", "scaling", "exposed %", "step ms", "buckets"))
    for setting in settings:
        label = setting.replace(":", "_").replace(".", "_")
        row = row_of(os.path.join(out, label + ".json"))
        if isinstance(row, str):
            print("%-22s %s" % (setting, row))
            continue
        values = [row.get(c) for c in COLUMNS]
        print("%-22s %12.0f %10.3f %10.2f %10.2f %8.0f" % tuple([setting] + [v if v is not None else float("nan") for v in values]))


if __name__ == "__main__":
    main(sys.argv)
