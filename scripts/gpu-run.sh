#!/usr/bin/env bash
# One run on a GPU host: build against the host's PyTorch with the bundled Debian
# packages (.gpudeps, made by scripts/bundle-deps.sh), run every test, then the given
# benchmark filters. Logs and JSON go to $OUT (default results/gpu).
#   scripts/gpu-run.sh [TEST_FILTER] [BENCH_ARGS...]
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
"$ROOT/gptbench.sh" build > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
filter=${1:-*}; shift || true
(cd "$GPTBENCH_BUILD_DIR" && ./gptbench_tests --gtest_filter="$filter" > "$OUT/tests.log" 2>&1)
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|tests? ran" "$OUT/tests.log" | tail -25
if [ $# -gt 0 ]; then
  "$GPTBENCH_BUILD_DIR/gptbench" --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
    "$@" > "$OUT/bench.txt" 2> "$OUT/bench.err"
  echo "bench rc=$?"; tail -5 "$OUT/bench.err"
fi
