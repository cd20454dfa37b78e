"""One pre-merge trial's line for scripts/premerge-trials.sh: verdict counts, the regressions,
and with a planted-names file, how many planted benchmarks were caught and what else was reported;
then the gated unreliable benchmarks, and the extra epochs of premerge.json beside the report.

    python3 scripts/trial_verdicts.py REPORT.json [PLANTED_FILE]
"""
import collections
import json
import os
import sys


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
    print(line)


if __name__ == "__main__":
    main(sys.argv)
