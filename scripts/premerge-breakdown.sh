#!/usr/bin/env bash
# Where one invocation of a benchmark subset spends its wall time (docs/premerge.md): builds
# gptbench on a GPU host with the bundled packages (scripts/gpu-env.sh), runs the subset with
# --gptbench_phases=true, once with the correctness checks and once without, and lists the
# default suite. Logs go to $OUT.
#   scripts/premerge-breakdown.sh FILTER [MIN_TIME]
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
filter=${1:?usage: premerge-breakdown.sh FILTER [MIN_TIME]}
min_time=${2:-0.2}
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
t0=$(date +%s)
cmake -S "$ROOT" -B "$GPTBENCH_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix;$ROOT/.gpudeps/usr" > "$OUT/configure.log" 2>&1 \
  && cmake --build "$GPTBENCH_BUILD_DIR" --target ${GPTBENCH_TARGETS:-gptbench} > "$OUT/build.log" 2>&1 \
  || { tail -40 "$OUT/configure.log" "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
bin=$GPTBENCH_BUILD_DIR/gptbench
for verify in true false; do
  /usr/bin/time -f "wall %e s" "$bin" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
    --gptbench_verify=$verify --gptbench_phases=true \
    --benchmark_out="$OUT/breakdown-verify-$verify.json" --benchmark_out_format=json \
    > "$OUT/breakdown-verify-$verify.txt" 2> "$OUT/breakdown-verify-$verify.err"
  echo "== verify=$verify"; grep -v '^\*\*\*' "$OUT/breakdown-verify-$verify.err" | tail -16
done
