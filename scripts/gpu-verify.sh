#!/usr/bin/env bash
# The team's GPU verification in one run on a GPU host (phases chosen by name, each time-boxed):
#   scripts/gpu-verify.sh [tests] [tools] [sanitize] [bench@NAME@REGEX[@FLAGS]] [train] [fault]
#                         [aa@ROUNDS[@REGEX]] [peers] [multigpu] [memory] ...
#   sanitize: compute-sanitizer over our kernels' GPU tests (SAN_TOOLS, SAN_TIMEOUT, SAN_FILTER)
#   tools: the compare/runner/report test binaries (compare's 10k x 10 speed test included)
#   aa: scripts/premerge.sh with the same binary on both sides (an A/A gate run), into $OUT/aa/
#   peers, multigpu, memory: scripts/gpu-PHASE.sh (compiler peers, several GPUs, memory caps)
# Builds into build-gpu/ with the bundled Debian packages (.gpudeps, scripts/bundle-deps.sh),
# then runs the phases.
# Everything lands in $OUT: log.txt (summary), tests.log, sanitize.log, bench-NAME.json,
# train.json, fault.json.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
B=$GPTBENCH_BUILD_DIR
say() { echo "$*" | tee -a "$OUT/log.txt"; }
# The eager PyTorch-from-Python training step (docs/peers.md, mode:pytorch) -> peer.json
peer_eager() {
  (cd "$ROOT" && timeout 150 python3 -m peers --benchmark_filter='^model/train_step/.*mode:pytorch' \
    --benchmark_out="$OUT/peer.json" > /dev/null 2>&1); say "peer rc=$?"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$OUT/log.txt"
t0=$(date +%s)
"$ROOT/gptbench.sh" build > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
say "build: $(( $(date +%s) - t0 )) s"
for phase in "$@"; do
  t=$(date +%s)
  case "$phase" in
    tests)
      (cd "$B" && timeout ${TESTS_TIMEOUT:-300} ./gptbench_tests > "$OUT/tests.log" 2>&1); say "tests rc=$?"
      grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \] [A-Za-z]" "$OUT/tests.log" | head -30 | tee -a "$OUT/log.txt" ;;
    tools)
      for bin in compare/compare_tests runner/runner_tests runner/runner_fixture_tests report/report_tests; do
        (cd "$B" && timeout 300 ./$bin > "$OUT/tools-$(basename $bin).log" 2>&1); say "$bin rc=$?"
      done
      grep TIMING "$OUT/tools-compare_tests.log" | tee -a "$OUT/log.txt" ;;
    aa@*)  # aa@ROUNDS[@REGEX]
      IFS=@ read -r _ rounds regex <<< "$phase"
      timeout ${AA_TIMEOUT:-300} "$ROOT/scripts/premerge.sh" --base-bin "$B/gptbench" --new-bin "$B/gptbench" --rounds "$rounds" \
        ${regex:+--filter "$regex"} --out "$OUT/aa" --compare "$B/compare/gptbench-compare" > "$OUT/aa.txt" 2> "$OUT/aa.log"
      say "A/A premerge rc=$? (0: no regression)"; tail -5 "$OUT/aa.txt" | tee -a "$OUT/log.txt"
      rm -f "$OUT"/aa/round-*.log "$OUT"/aa/round-*.json ;;  # the merged base/new.json stay
    sanitize)
      export PYTORCH_NO_CUDA_MEMORY_CACHING=1
      ours=${SAN_FILTER:-'SoftmaxFusedGpu.*:OptimGpu.*:*FlashAttentionGpu*_L17_*:*FlashAttentionGpu*_L130_*:FlashAttentionGpuLayout.*:Dtypes/GemmGpu.CublasLtMatchesReference/*:LayerNormGpu.*:LinearLtGpu.*:FusedLinearGpu.*:CrossEntropyGpu*'}
      for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
        (cd "$B" && timeout ${SAN_TIMEOUT:-90} compute-sanitizer --tool $tool --error-exitcode 1 --print-limit 20 \
           ./gptbench_tests --gtest_filter="$ours" >> "$OUT/sanitize.log" 2>&1)
        say "compute-sanitizer $tool rc=$? ($(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitize.log") clean summaries so far)"
      done
      unset PYTORCH_NO_CUDA_MEMORY_CACHING ;;
    bench@*)  # bench@NAME@REGEX[@EXTRA FLAGS] -> bench-NAME.json
      IFS=@ read -r _ name regex extra <<< "$phase"
      "$B/gptbench" --benchmark_filter="$regex" --benchmark_out="$OUT/bench-$name.json" \
        --benchmark_out_format=json --benchmark_min_time=${MIN_TIME:-0.1} $extra > /tmp/bench-$name.txt 2>&1
      say "bench $name rc=$? $(grep -c manual_time /tmp/bench-$name.txt) rows, $(grep -c 'ERROR OCCURRED' /tmp/bench-$name.txt) errored"
      grep 'ERROR OCCURRED' /tmp/bench-$name.txt | sed 's/  */ /g' | head -8 | tee -a "$OUT/log.txt" ;;
    train)
      "$B/gptbench" --benchmark_filter='^(model/(train_step|checkpointing)|overheads)/' --benchmark_out="$OUT/train.json" \
        --benchmark_out_format=json --benchmark_min_time=${MIN_TIME:-0.1} > /tmp/train.txt 2>&1
      say "train rc=$?"; grep 'ERROR OCCURRED' /tmp/train.txt | head -5 | tee -a "$OUT/log.txt"
      peer_eager ;;
    run@*)  # run@NAME@COMMAND: any command (in the build dir, time-boxed by RUN_TIMEOUT) -> run-NAME.txt
      IFS=@ read -r _ name command <<< "$phase"
      (cd "$B" && timeout ${RUN_TIMEOUT:-200} bash -c "$command" > "$OUT/run-$name.txt" 2>&1); say "run $name rc=$?" ;;
    peer)
      peer_eager ;;
    peers|multigpu|memory)  # scripts/gpu-{peers,multigpu,memory}.sh, their output in $OUT/phase-PHASE.log
      bash "$ROOT/scripts/gpu-$phase.sh" > "$OUT/phase-$phase.log" 2>&1; say "$phase rc=$?"
      tail -${PHASE_TAIL:-25} "$OUT/phase-$phase.log" | tee -a "$OUT/log.txt" ;;
    fault)
      (cd "$B" && timeout 200 ./gptbench-run -o "$OUT/fault.json" --gptbench_fault=illegal_address \
        --benchmark_filter='^(fault|gemm/cublaslt/bf16/square|softmax/fused/bf16/fwd)/' --benchmark_min_time=0.05 > /dev/null 2>&1)
      say "fault demo rc=$?"
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(b["name"], "|", b.get("error_message","ok")[:150]) for b in d["benchmarks"]]' "$OUT/fault.json" | tee -a "$OUT/log.txt" ;;
  esac
  say "phase $phase: $(( $(date +%s) - t )) s"
done
