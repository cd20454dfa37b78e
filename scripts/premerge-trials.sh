#!/usr/bin/env bash
# Repeats the pre-merge check to measure its error rates: A/A trials (same binary both sides)
# must report no regression; trials with a planted slowdown (--new-arg=--gptbench_slowdown=...)
# must report exactly the planted benchmark. One line per trial, then a summary.
#   scripts/premerge-trials.sh N LABEL OUT_DIR -- PREMERGE_ARGS...
# e.g. scripts/premerge-trials.sh 10 aa results/trials -- --base-bin build/gptbench --new-bin build/gptbench
set -uo pipefail
n=${1:?usage: premerge-trials.sh N LABEL OUT_DIR -- PREMERGE_ARGS...}
label=${2:?label}
out=${3:?out dir}
shift 3
[[ "${1:-}" == -- ]] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
summary="$out/$label-trials.txt"
: > "$summary"
for ((i = 1; i <= n; i++)); do
  dir="$out/$label-$i"
  start=$(date +%s%N)
  bash "$root/scripts/premerge.sh" --out "$dir" --seed "$i" "$@" > "$dir.stdout" 2> "$dir.stderr"
  code=$?
  wall=$(( ($(date +%s%N) - start) / 1000000 ))
  verdicts=$(python3 - "$dir/report.json" <<'PY'
import json, sys, collections
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("no report (%s)" % e); sys.exit()
rows = r.get("results", r.get("benchmarks", []))
count = collections.Counter(x.get("verdict", "?") for x in rows)
reg = [x["name"] for x in rows if x.get("verdict") in ("regression", "broken")]
print(" ".join("%s=%d" % kv for kv in sorted(count.items())), "| regressions:", ",".join(reg) or "-")
PY
)
  printf '%s %2d exit=%d wall=%d.%03ds %s\n' "$label" "$i" "$code" $((wall / 1000)) $((wall % 1000)) "$verdicts" \
    | tee -a "$summary"
done
