"""Draws the benchmarks a planted pre-merge trial slows down (scripts/premerge-trials.sh --plant).

    python3 scripts/plant_pick.py K:PCT:RUN.json SEED OUT_FILE

Eligible: every benchmark of RUN.json (Google Benchmark JSON of the same subset) whose median
real time is at least 20 us and that is not an informational eager row (a `launch:eager` row
whose `launch:graph` sibling is in the run). Prints the --gptbench_slowdown value
(`^(name|name...)$:PCT`, names escaped for POSIX extended regexes) and writes the names, one a
line, to OUT_FILE. Exit 2 with a message on bad input.
"""
import json
import random
import re
import statistics
import sys

MIN_SECONDS = 20e-6
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def eligible(run):
    times = {}
    for b in run.get("benchmarks", []):
        if b.get("error_occurred") or b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("run_name", b["name"]).removesuffix("/manual_time")
        times.setdefault(name, []).append(b["real_time"] * UNIT[b.get("time_unit", "ns")])
    names = set(times)
    def informational(name):
        return "/launch:eager" in name and name.replace("/launch:eager", "/launch:graph") in names
    return sorted(n for n, t in times.items()
                  if statistics.median(t) >= MIN_SECONDS and not informational(n))


def main(argv):
    try:
        k, pct, path = argv[1].split(":", 2)
        k, pct, seed = int(k), float(pct), int(argv[2])
        run = json.load(open(path))
    except (IndexError, ValueError, OSError) as e:
        sys.exit("plant_pick: usage: K:PCT:RUN.json SEED OUT_FILE (%s)" % e)
    names = eligible(run)
    if len(names) < k:
        print("plant_pick: %d eligible benchmarks in %s, %d asked" % (len(names), path, k), file=sys.stderr)
        sys.exit(2)
    picked = sorted(random.Random(seed).sample(names, k))
    with open(argv[3], "w") as f:
        f.write("".join(n + "\n" for n in picked))
    print("^(%s)$:%g" % ("|".join(re.sub(r"([.^$|()\[\]*+?{}\\])", r"\\\1", n) for n in picked), pct))


if __name__ == "__main__":
    main(sys.argv)
