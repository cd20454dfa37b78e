#!/usr/bin/env bash
# The memory family on a GPU host (docs/memory.md): builds gptbench and gptbench_tests, runs the
# tests of the memory cap, model and search (the GPU ones included), then the family's default
# grid under each cap: one process per cap and precision (bf16, then tf32), so a time-out loses
# one part only; the parts are merged into one JSON per cap.
#   scripts/gpu-memory.sh [CAP ...]          caps as --gptbench_memory_limit takes them
#                                            (default: 16GiB 24GiB)
# Writes to $OUT (default results/gpu): log.txt (summary: per cap the rows that ran with their
# prediction errors, the skips, the worst error), gpu.txt, build.log, tests.log, and per cap
# memory-<CAP>.json (Google Benchmark JSON of both parts), memory-<CAP>-<PREC>.txt (console
# table: the rows finished survive a time-out) and memory-<CAP>-<PREC>.err.
# Expected on one H100 (from the model's predicted batches): 16 GiB ≈ 1.5 min, 24 GiB ≈ 2.5 min
# (larger batches, and xl fits). Time-boxed: MEMORY_TIMEOUT seconds per part (default 100),
# TESTS_TIMEOUT (default 60); SKIP_TESTS=1 skips the tests (a second call for another cap);
# SKIP_BUILD=1 uses the build as it is (one run per GPU in parallel: CUDA_VISIBLE_DEVICES);
# MEMORY_FILTER narrows the grid (default ^model/memory/); MEMORY_PRECISIONS the parts (default
# "bf16 tf32").
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
B=$GPTBENCH_BUILD_DIR
say() { echo "$*" | tee -a "$OUT/log.txt"; }
caps=("$@")
[ ${#caps[@]} -gt 0 ] || caps=(16GiB 24GiB)
filter=${MEMORY_FILTER:-^model/memory/}

say "gpu-memory.sh $(date -u +%FT%TZ): caps ${caps[*]}, filter $filter"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2> /dev/null ||
  echo "no nvidia-smi: the family runs its CPU cases" >> "$OUT/gpu.txt"
tee -a "$OUT/log.txt" < "$OUT/gpu.txt"

if [ "${SKIP_BUILD:-0}" != 1 ]; then  # SKIP_BUILD=1: the build is there (parallel runs, one per GPU)
  t0=$(date +%s)
  GPTBENCH_TARGETS="gptbench gptbench_tests" "$ROOT/gptbench.sh" build > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; say "build failed"; exit 1; }
  say "build: $(( $(date +%s) - t0 )) s"
fi

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  t0=$(date +%s)
  tests='MemoryLimitGpu.*:MemoryCase.*:MemoryModel.*:ByteSize.*:Options.MemoryLimit*'
  (cd "$B" && timeout "${TESTS_TIMEOUT:-60}" ./gptbench_tests --gtest_filter="$tests" > "$OUT/tests.log" 2>&1)
  say "tests rc=$? in $(( $(date +%s) - t0 )) s"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \] [A-Za-z]" "$OUT/tests.log" | head -20 | tee -a "$OUT/log.txt"
fi

for cap in "${caps[@]}"; do
  for prec in ${MEMORY_PRECISIONS:-bf16 tf32}; do
    [ "$prec" = tf32 ] && ! command -v nvidia-smi > /dev/null && continue  # the CPU runs one grid
    t0=$(date +%s)
    part="$OUT/memory-$cap-$prec"
    timeout "${MEMORY_TIMEOUT:-100}" "$B/gptbench" --gptbench_memory_limit="$cap" --gptbench_dtypes="$prec" \
      --benchmark_filter="$filter" --benchmark_min_time=0.01 --benchmark_out="$part.json" \
      --benchmark_out_format=json > "$part.txt" 2> "$part.err"
    say "memory $cap $prec rc=$? in $(( $(date +%s) - t0 )) s: $(grep -c manual_time "$part.txt") rows, $(grep -c 'ERROR OCCURRED' "$part.txt") skipped"
  done
  python3 - "$OUT/memory-$cap.json" "$OUT/memory-$cap"-*.json <<'PY'
import json, sys
merged = None
for path in sys.argv[2:]:
    try:
        run = json.load(open(path))
    except (OSError, ValueError):
        continue
    if merged is None:
        merged = run
    else:
        merged["benchmarks"] += run["benchmarks"]
if merged is not None:
    json.dump(merged, open(sys.argv[1], "w"), indent=1)
PY
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
