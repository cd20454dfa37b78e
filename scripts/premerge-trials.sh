#!/usr/bin/env bash
# Repeats the pre-merge check to measure its error rates: A/A trials (same binary both sides)
# must report no regression; trials with a planted slowdown (--new-arg=--gptbench_slowdown=...)
# must report exactly the planted benchmarks. One line per trial, then a summary.
#   scripts/premerge-trials.sh N LABEL OUT_DIR -- PREMERGE_ARGS...
#   scripts/premerge-trials.sh N LABEL OUT_DIR --plant K:PCT:RUN.json -- PREMERGE_ARGS...
# e.g. scripts/premerge-trials.sh 3 aa results/trials -- --base-bin build/gptbench --new-bin build/gptbench
# --plant: trial i plants PCT % on K benchmarks drawn at random (seed i) from those of RUN.json
# (an earlier run of the same subset, e.g. an A/A trial's base.json) that took >= 20 us and are
# not informational eager rows; the line says how many of the K were caught and what else was
# reported. Planted names go to OUT_DIR/LABEL-i.planted. FIRST_TRIAL (1) numbers the first trial,
# so checks split over several runs keep distinct seeds (e.g. FIRST_TRIAL=3 for trials 3, 4, ...).
set -uo pipefail
n=${1:?usage: premerge-trials.sh N LABEL OUT_DIR [--plant K:PCT:RUN.json] -- PREMERGE_ARGS...}
label=${2:?label}
out=${3:?out dir}
shift 3
plant=''
if [[ "${1:-}" == --plant ]]; then plant=${2:?--plant K:PCT:RUN.json}; shift 2; fi
[[ "${1:-}" == -- ]] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
summary="$out/$label-trials.txt"
: > "$summary"
first=${FIRST_TRIAL:-1}
[[ "$first" =~ ^[1-9][0-9]*$ ]] || { echo "premerge-trials.sh: FIRST_TRIAL must be a positive whole number, not '$first'" >&2; exit 2; }
for ((i = first; i < first + n; i++)); do
  dir="$out/$label-$i"
  extra=()
  if [[ -n "$plant" ]]; then
    regex=$(python3 "$root/scripts/plant_pick.py" "$plant" "$i" "$dir.planted") || exit 2
    extra=(--new-arg="--gptbench_slowdown=$regex")
  fi
  start=$(date +%s%N)
  bash "$root/scripts/premerge.sh" --out "$dir" --seed "$i" "${extra[@]}" "$@" > "$dir.stdout" 2> "$dir.stderr"
  code=$?
  wall=$(( ($(date +%s%N) - start) / 1000000 ))
  verdicts=$(python3 "$root/scripts/trial_verdicts.py" "$dir/report.json" "${plant:+$dir.planted}")
  printf '%s %2d exit=%d wall=%d.%03ds %s\n' "$label" "$i" "$code" $((wall / 1000)) $((wall % 1000)) "$verdicts" \
    | tee -a "$summary"
done
