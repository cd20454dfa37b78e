#!/usr/bin/env bash
# Stand-in for the gptbench binary in premerge tests: writes Google Benchmark
# JSON for two benchmarks to --benchmark_out and logs its invocation order.
#   FAKE_SIDE (name in the log), FAKE_SLOWDOWN (factor on softmax/fused), FAKE_LOG
set -euo pipefail
out='' device=''
verify=true
for arg in "$@"; do
  case "$arg" in
    --gptbench_help) echo "  --gptbench_verify=false  (fake)"; exit 0 ;;
    --gptbench_verify=*) verify="${arg#*=}" ;;
    --benchmark_out=*) out="${arg#*=}" ;;
    --gptbench_device=*) device="${arg#*=}" ;;
  esac
done
echo "${FAKE_SIDE:-?} $device" >>"${FAKE_LOG:-/dev/null}"
echo "${FAKE_SIDE:-?} verify=$verify" >>"${FAKE_VERIFY_LOG:-/dev/null}"
n=$(wc -l <"${FAKE_LOG:-/dev/null}" 2>/dev/null || echo 0)
jitter=$(( (n * 7919) % 13 ))   # deterministic noise, 0..12 (x0.1%)
awk -v j="$jitter" -v s="${FAKE_SLOWDOWN:-1}" -v out="$out" 'BEGIN {
  t1 = 812.0 * (1 + j / 1000) * s; t2 = 1260.0 * (1 + j / 1000)
  printf "{\"context\": {\"gpu_name\": \"fake\"}, \"benchmarks\": [\n" > out
  printf "{\"name\": \"softmax/fused/bf16/rows:8/cols:1024\", \"run_type\": \"iteration\", \"repetitions\": 1, \"repetition_index\": 0, \"iterations\": 10, \"real_time\": %.3f, \"cpu_time\": %.3f, \"time_unit\": \"us\"},\n", t1, t1 > out
  printf "{\"name\": \"softmax/torch/bf16/rows:8/cols:1024\", \"run_type\": \"iteration\", \"repetitions\": 1, \"repetition_index\": 0, \"iterations\": 10, \"real_time\": %.3f, \"cpu_time\": %.3f, \"time_unit\": \"us\"}\n]}\n", t2, t2 > out
}'
