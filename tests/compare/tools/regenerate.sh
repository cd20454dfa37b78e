#!/usr/bin/env bash
# Regenerates the realistic Google Benchmark 1.7.1 fixtures in tests/compare/data/.
#   usage: tests/compare/tools/regenerate.sh [path/to/gptbench-compare]
# Three variants of the fixture benchmarks run INTERLEAVED, one repetition per
# invocation, 10 rounds (A, B, C, A, B, C, ...), exactly as scripts/premerge.sh
# does, then each side is merged with `gptbench-compare merge`:
#   gb171_aa_base.json, gb171_aa_new.json  the same build twice (A/A)
#   gb171_slow_new.json                    softmax/fused/fp32/rows:64/cols:1024 doing
#                                          1.30x the work (planted slowdown)
# plus gb171_raw_reps.json: one plain run with --benchmark_repetitions=10
# (iteration and aggregate rows, as Google Benchmark writes them).
# Running A and B one after the other instead lets machine drift between the
# two runs show up as "regressions" on a shared box; interleaving cancels it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../data"
compare="${1:-$here/../../../build/compare/gptbench-compare}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin="$work/fixture_bench"
g++ -O2 -std=c++17 "$here/fixture_bench.cpp" -o "$bin" -lbenchmark -lpthread
flags=(--benchmark_min_time=0.05 --benchmark_out_format=json)
"$bin" "${flags[@]}" --benchmark_repetitions=10 --benchmark_out="$data/gb171_raw_reps.json" >/dev/null 2>&1
for round in $(seq 0 9); do
  "$bin" "${flags[@]}" --benchmark_out="$work/a_$round.json" >/dev/null 2>&1
  "$bin" "${flags[@]}" --benchmark_out="$work/b_$round.json" >/dev/null 2>&1
  GPTBENCH_FIXTURE_SLOW="softmax/fused/fp32/rows:64/cols:1024:1.30" \
    "$bin" "${flags[@]}" --benchmark_out="$work/c_$round.json" >/dev/null 2>&1
done
"$compare" merge "$data/gb171_aa_base.json" "$work"/a_{0..9}.json
"$compare" merge "$data/gb171_aa_new.json" "$work"/b_{0..9}.json
"$compare" merge "$data/gb171_slow_new.json" "$work"/c_{0..9}.json
