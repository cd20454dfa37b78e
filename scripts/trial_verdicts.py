"""One pre-merge trial's line for scripts/premerge-trials.sh: verdict counts, the regressions,
and with a planted-names file, how many planted benchmarks were caught and what else was reported;
then the gated unreliable benchmarks, the extra epochs of premerge.json beside the report, and
the spread of the device rows that replaced host-timed ones (DEVICE_ROWS: the launch:graph rows
of backward/, layernorm fwd_bwd, attention fwd_bwd and LibTorch's optimizers): their largest
robust CV (1.4826 MAD / median of a side's samples) and largest process spread ((max - min) /
median of a side's process medians), with the rows above 1%; and the largest spread of the
per-epoch changes (new / base of the processes that ran side by side, which is what the paired
gate judges: an offset both sides of an epoch share cancels there).

    python3 scripts/trial_verdicts.py REPORT.json [PLANTED_FILE]
"""
import collections
import json
import os
import re
import statistics
import sys

DEVICE_ROWS = re.compile(r"^(backward/.*|layernorm/.*/fwd_bwd/.*|attention/.*/fwd_bwd/.*|optim/torch_.*)/launch:graph$")


def robust_cv(samples):
    m = statistics.median(samples)
    return 1.4826 * statistics.median(abs(x - m) for x in samples) / m if m else 0.0


def spread(medians):
    return (max(medians) - min(medians)) / statistics.median(medians) if medians else 0.0


def device_rows(rows):
    """'device rows N: robust CV <= a% (worst), process spread <= b% (worst); over 1%: ...'."""
    cvs, spreads, paired = [], [], []
    for x in rows:
        name = x["name"].removesuffix("/manual_time")
        if not DEVICE_ROWS.match(name):
            continue
        for side in ("base", "new"):
            t = (x.get("time") or {}).get(side) or {}
            if t.get("samples"):
                cvs.append((robust_cv(t["samples"]), name))
            if t.get("process_medians"):
                spreads.append((spread(t["process_medians"]), name))
        b, n = (((x.get("time") or {}).get(side) or {}).get("process_medians") or [] for side in ("base", "new"))
        if len(b) == len(n) > 1 and all(v > 0 for v in b + n):
            changes = [y / x for x, y in zip(b, n)]
            paired.append((max(changes) - min(changes), name))
    if not cvs:
        return ""
    over = sorted({n for v, n in cvs + spreads if v > 0.01})
    cv, spr, pair = max(cvs), max(spreads, default=(0.0, "-")), max(paired, default=(0.0, "-"))
    return (" | device rows %d: robust CV <= %.2f%% (%s), process spread <= %.2f%% (%s), "
            "per-epoch change spread <= %.2f%% (%s); over 1%%: %s") % (
        len({n for _, n in cvs}), 100 * cv[0], cv[1], 100 * spr[0], spr[1], 100 * pair[0], pair[1],
        ",".join(over) or "-")


def main(argv):
    try:
        report = json.load(open(argv[1]))
    except Exception as e:  # a missing or broken report is the trial's result, not a crash
        print("no report (%s)" % e)
        return
    rows = report.get("results", report.get("benchmarks", []))
    gated = [x for x in rows if not x.get("informational")]
    count = collections.Counter(x.get("verdict", "?") for x in gated)
    informational = collections.Counter(x.get("verdict", "?") for x in rows if x.get("informational"))
    # Informational rows (launch:eager beside a graph sibling) are reported, never gated.
    reg = [x["name"].removesuffix("/manual_time") for x in rows
           if x.get("verdict") in ("regression", "broken") and not x.get("informational")]
    line = "gated: " + " ".join("%s=%d" % kv for kv in sorted(count.items()))
    if informational:
        line += " informational: " + " ".join("%s=%d" % kv for kv in sorted(informational.items()))
    if len(argv) > 2 and argv[2]:
        planted = set(open(argv[2]).read().split())
        caught = [n for n in reg if n in planted]
        other = [n for n in reg if n not in planted]
        line += " | planted caught %d/%d | other regressions: %s" % (
            len(caught), len(planted), ",".join(other) or "-")
    else:
        line += " | regressions: " + (",".join(reg) or "-")
    unreliable = [x["name"].removesuffix("/manual_time") for x in gated if x.get("verdict") == "unreliable"]
    line += " | unreliable: " + (",".join(unreliable) or "-")
    try:
        totals = json.load(open(os.path.join(os.path.dirname(argv[1]), "premerge.json")))["totals"]
        line += " | extra epochs %d (%.0f s)" % (totals.get("extra_epochs", 0), totals.get("extra_s", 0))
    except Exception:  # process rounds, or an older gptbench-premerge: nothing to add
        pass
    print(line + device_rows(rows))


if __name__ == "__main__":
    main(sys.argv)
