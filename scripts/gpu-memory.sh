#!/usr/bin/env bash
# The memory family on a GPU host (docs/memory.md): builds gptbench and gptbench_tests, runs the
# tests of the memory cap, model and search (the GPU ones included), then the family's default
# grid under each cap, one process per cap.
#   scripts/gpu-memory.sh [CAP ...]          caps as --gptbench_memory_limit takes them
#                                            (default: 16GiB 24GiB)
# Writes to $OUT (default results/gpu): log.txt (summary: per cap the rows that ran, the skips,
# the worst prediction error), gpu.txt, build.log, tests.log, and per cap memory-<CAP>.json
# (Google Benchmark JSON), memory-<CAP>.txt (console table: the rows finished so far survive a
# time-out) and memory-<CAP>.err.
# Time-boxed: MEMORY_TIMEOUT seconds per cap (default 120), TESTS_TIMEOUT (default 60);
# MEMORY_FILTER narrows the grid (default ^model/memory/).
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
B=$GPTBENCH_BUILD_DIR
say() { echo "$*" | tee -a "$OUT/log.txt"; }
caps=("$@")
[ ${#caps[@]} -gt 0 ] || caps=(16GiB 24GiB)
filter=${MEMORY_FILTER:-^model/memory/}

say "gpu-memory.sh $(date -u +%FT%TZ): caps ${caps[*]}, filter $filter"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1 ||
  echo "no nvidia-smi: the family runs its CPU cases" >> "$OUT/gpu.txt"
tee -a "$OUT/log.txt" < "$OUT/gpu.txt"

t0=$(date +%s)
GPTBENCH_TARGETS="gptbench gptbench_tests" "$ROOT/gptbench.sh" build > "$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; say "build failed"; exit 1; }
say "build: $(( $(date +%s) - t0 )) s"

t0=$(date +%s)
tests='MemoryLimitGpu.*:MemoryCase.*:MemoryModel.*:ByteSize.*:Options.MemoryLimit*:TrainStep.MaxBatch*:TrainCase.*'
(cd "$B" && timeout "${TESTS_TIMEOUT:-60}" ./gptbench_tests --gtest_filter="$tests" > "$OUT/tests.log" 2>&1)
say "tests rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]" "$OUT/tests.log" | head -20 | tee -a "$OUT/log.txt"

for cap in "${caps[@]}"; do
  t0=$(date +%s)
  timeout "${MEMORY_TIMEOUT:-120}" "$B/gptbench" --gptbench_memory_limit="$cap" --benchmark_filter="$filter" \
    --benchmark_min_time=0.01 --benchmark_out="$OUT/memory-$cap.json" --benchmark_out_format=json \
    > "$OUT/memory-$cap.txt" 2> "$OUT/memory-$cap.err"
  rc=$?
  say "memory $cap rc=$rc in $(( $(date +%s) - t0 )) s: $(grep -c manual_time "$OUT/memory-$cap.txt") rows, $(grep -c 'ERROR OCCURRED' "$OUT/memory-$cap.txt") skipped"
  [ -s "$OUT/memory-$cap.json" ] && python3 - "$OUT/memory-$cap.json" <<'PY' | tee -a "$OUT/log.txt"
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
ran = [r for r in rows if "pred_error_pct" in r]
for r in ran:
    print(f"  {r['name'].replace('/manual_time', '')}: B={r['max_batch']:.0f} (predicted {r.get('predicted_max_batch', -1):.0f})"
          f" peak {r.get('peak_mem_bytes', 0) / 2**30:.2f} GiB, predicted {r['predicted_peak_bytes'] / 2**30:.2f} GiB"
          f" ({r['pred_error_pct']:+.1f}%), {r.get('step_ms', 0):.0f} ms")
for r in rows:
    if r.get("error_occurred"):
        print(f"  {r['name'].replace('/manual_time', '')}: {r.get('error_message', '')}")
if ran:
    worst = max(ran, key=lambda r: abs(r["pred_error_pct"]))
    print(f"  worst prediction error {worst['pred_error_pct']:+.1f}% at {worst['name'].replace('/manual_time', '')}")
PY
done
