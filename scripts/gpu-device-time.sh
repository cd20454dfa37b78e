#!/usr/bin/env bash
# Device rows against eager rows, and the pre-merge gate's power, on a GPU host (docs/premerge.md,
# docs/usage.md "Device rows and eager rows"). Builds what it needs (scripts/gpu-env.sh), then
# runs the steps named, in order, writing under $OUT:
#   tests        the graph-form and worker tests (GPU ones included)        -> tests.log
#   rows         the host-bound cases, graph and eager, 5 repetitions       -> rows.json
#   aa N         N A/A pre-merge checks of the default subset               -> trials/aa-*
#   plant N RUN  N checks, 3% planted on 10 benchmarks drawn from RUN.json  -> trials/plant-*
#                (seeds 1..N, or FIRST_TRIAL..; RUN: an A/A check's base.json)
#   headline     the README's first headline table, device time on every side: scripts/gpu-peers.sh
#                on its rows only (HEADLINE_MIN_TIME, 0.1)                  -> headline/
#   gemm N       the torch and cuBLASLt GEMM rows in N processes, with traces -> gemm-*/
#   nvtx         NVTX ranges on against off, 2 rounds, gptbench-compare    -> nvtx-*
#   suite        the default suite, timed                                   -> suite.json
#   peers        the peer runner's device-time rows                         -> peers.json
#   triton       examples/triton_softmax beside ours and LibTorch            -> triton-*.json|txt
#   fp8          the FP8 tests, GEMM, linear and quantization rows (docs/fp8.md) -> fp8.json, fp8-tests.log
#                (FP8_MODELS: the GPT-2 sizes, small; FP8_FILTER: the rows, GPT-2 GEMMs, squares,
#                linear layers and quantizers; FP8_SECONDS: a time limit for the rows, 600;
#                FP8_TESTS: the tests, *Fp8*; FP8_ARGS: more flags for the rows)
#   fp8step      the FP8 training step: its GPU tests, ours (fp8 beside bf16, small, medium, large;
#                FP8_STEP_BATCH, 16; FP8_STEP_MODELS, small,medium,large) and torchao's peer rows
#                (FP8_PEER_MODELS, the same models by default), merged; FP8_STEP_FILTER and
#                FP8_STEP_TESTS narrow ours and the tests, FP8_SECONDS and FP8_PEER_SECONDS bound them
#                                                                     -> fp8step-*.json|txt|log
#   example      examples/custom_kernel built against an installed prefix, run on the GPU -> example.txt
#   copies N K.. the device rows most moved by placement (fused LayerNorm, backward/block) in N
#                processes for each --gptbench_graph_copies=K, alternating   -> copies/, copies.txt
#                (COPIES_ARGS: more flags for every process, e.g. --gptbench_flush_l2=true)
#   lmhead N     the LM-head GEMMs in N processes, settled and not (fixtures/settle.h) -> lmhead-*
#   scripts/gpu-device-time.sh tests rows aa 3
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
B=$GPTBENCH_BUILD_DIR
t0=$(date +%s)
GPTBENCH_TARGETS=${GPTBENCH_TARGETS:-"gptbench gptbench_tests gptbench-compare gptbench-premerge gptbench-run"} \
  "$ROOT/gptbench.sh" build > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
ROWS='^(backward/(block|mlp|attention\.sdpa|model)/bf16/fwd_bwd/small/B:8/T:1024|layernorm/(torch|fused)/bf16/fwd_bwd/|optim/torch_(fused_)?adamw/fp32/model:small/|attention/(sdpa_flash|sdpa_cudnn|flash_sm90)/bf16/causal/fwd_bwd/B:8/H:12/L:1024/d:128/)'
while [ $# -gt 0 ]; do
  step=$1; shift
  s0=$(date +%s)
  case "$step" in
    tests)
      (cd "$B" && ./gptbench_tests --gtest_filter="${TESTS:-GraphForm*:Plant*:Worker*:Nvtx*:Dist*:Flash*:LaunchAxis*:Registration*:Settle*:KernelNames*:Trace*:Extension*:FamilyImpls*:*Fp8*}" > "$OUT/tests.log" 2>&1)
      echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" "$OUT/tests.log" | tail -15 ;;
    rows)
      "$B/gptbench" --benchmark_filter="$ROWS" --benchmark_repetitions=5 --benchmark_min_time=0.2 \
        --benchmark_out="$OUT/rows.json" --benchmark_out_format=json > "$OUT/rows.txt" 2> "$OUT/rows.err"
      echo "rows rc=$?"; grep -E "median|error|skipped" "$OUT/rows.txt" | cut -c1-160 ;;
    aa|plant)
      n=$1; shift
      plant=()
      if [ "$step" = plant ]; then plant=(--plant "10:3:$1"); shift; fi
      bash "$ROOT/scripts/premerge-trials.sh" "$n" "$step" "$OUT/trials" "${plant[@]}" -- \
        --base-bin "$B/gptbench" --new-bin "$B/gptbench" \
        --premerge "$(find "$B" -name gptbench-premerge -type f | head -1)" > /dev/null 2>&1
      cat "$OUT/trials/$step-trials.txt" ;;
    gemm)
      n=$1; shift
      for ((i = 1; i <= n; i++)); do
        mkdir -p "$OUT/gemm-$i"
        "$B/gptbench" --benchmark_filter='^gemm/(torch|cublaslt)/bf16/small\.[a-z_]+\.fwd/' \
          --benchmark_repetitions=5 --benchmark_min_time=0.1 --gptbench_profile="$OUT/gemm-$i/trace" \
          --benchmark_out="$OUT/gemm-$i/run.json" --benchmark_out_format=json > "$OUT/gemm-$i/run.txt" 2>&1
      done
      python3 "$ROOT/scripts/gemm_processes.py" "$OUT"/gemm-* | tee "$OUT/gemm-processes.txt" ;;
    nvtx)
      F='^(softmax/fused/bf16/fwd/|layernorm/fused/bf16/fwd/|loss/fused/bf16/fwd/|gemm/cublaslt/bf16/small\.)'
      for r in 1 2; do for v in true false; do
        "$B/gptbench" --gptbench_nvtx=$v --benchmark_filter="$F" --benchmark_repetitions=5 \
          --benchmark_enable_random_interleaving=true --benchmark_out="$OUT/nvtx-$v-$r.json" \
          --benchmark_out_format=json > /dev/null 2>&1
      done; "$B/compare/gptbench-compare" benchmarks "$OUT/nvtx-false-$r.json" "$OUT/nvtx-true-$r.json" \
        > "$OUT/nvtx-compare-$r.txt" 2>&1; echo "nvtx round $r: compare exit $?"; tail -3 "$OUT/nvtx-compare-$r.txt"; done ;;
    suite)
      "$B/gptbench" --benchmark_out="$OUT/suite.json" --benchmark_out_format=json \
        > "$OUT/suite.txt" 2> "$OUT/suite.err"
      echo "suite rc=$? rows=$(grep -c manual_time "$OUT/suite.txt")" ;;
    peers)
      (cd "$ROOT" && timeout 400 python3 -m peers --benchmark_out="$OUT/peers.json" \
        --benchmark_filter='fwd_bwd|optim' --benchmark_min_time=0.2 > "$OUT/peers.txt" 2> "$OUT/peers.err")
      echo "peers rc=$?"; grep -E "launch|error" "$OUT/peers.txt" | cut -c1-160 | head -30 ;;
    copies)
      n=$1; shift; ks=()
      while [[ "${1:-}" =~ ^[0-9]+$ ]]; do ks+=("$1"); shift; done
      C='^(layernorm/(fused|torch)/bf16/fwd_bwd/rows:8192/cols:768|backward/block/bf16/fwd_bwd/small/B:8/T:1024)/launch:graph'
      mkdir -p "$OUT/copies"
      for ((i = 1; i <= n; i++)); do for k in "${ks[@]}"; do
        "$B/gptbench" --benchmark_filter="$C" --gptbench_graph_copies="$k" --gptbench_settle=0.3 ${COPIES_ARGS:-} \
          --benchmark_repetitions=3 --benchmark_min_time=0.1 --benchmark_out="$OUT/copies/copies-$k-$i.json" \
          --benchmark_out_format=json > /dev/null 2>> "$OUT/copies/stderr.txt"
      done; done
      python3 "$ROOT/scripts/process_spread.py" "$OUT"/copies/*.json | tee "$OUT/copies.txt" ;;
    headline)
      H='^(softmax|layernorm|loss)/inductor/bf16/|^attention/inductor_flex/bf16/causal/(fwd|fwd_bwd)/B:8/H:12/L:4096/d:64/'
      H+='|^optim/inductor_adamw/fp32/model:small/|^model/train_step/small/bf16/B:8/T:1024/.*/mode:inductor_cg'
      mkdir -p "$OUT/headline"
      OUT="$OUT/headline" PEERS_FILTER="$H" MIN_TIME="${HEADLINE_MIN_TIME:-0.1}" bash "$ROOT/scripts/gpu-peers.sh" \
        > "$OUT/headline/gpu-peers.txt" 2>&1
      echo "headline rc=$?"; grep -E "^(peers|ours) rc|^total" "$OUT/headline/gpu-peers.txt"; cat "$OUT/headline/headline.md" ;;
    fp8)
      (cd "$B" && ./gptbench_tests --gtest_filter="${FP8_TESTS:-*Fp8*}" > "$OUT/fp8-tests.log" 2>&1)
      echo "fp8 tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" "$OUT/fp8-tests.log" | tail -12
      timeout "${FP8_SECONDS:-600}" "$B/gptbench" --gptbench_fp8=true --gptbench_gemm_search=false \
        --benchmark_filter="${FP8_FILTER:-gemm/.*/(bf16|e4m3)/(small\.|square/)|quantize/|linear/}" \
        --gptbench_models="${FP8_MODELS:-small}" --benchmark_min_time=0.1 ${FP8_ARGS:-} \
        --benchmark_out="$OUT/fp8.json" --benchmark_out_format=json > "$OUT/fp8.txt" 2>&1
      echo "fp8 rows rc=$?"; grep -E "error|wrong|skipped" "$OUT/fp8.txt" | cut -c1-200 | head -12
      grep -E "e4m3_flops|peak_gemm" "$OUT/fp8.txt" | head -4 ;;
    triton)
      "$B/gptbench" --benchmark_filter='^softmax/(fused|torch)/bf16/(fwd|bwd)/(attn\.small\.B64|vocab)/' \
        --benchmark_repetitions=5 --benchmark_out="$OUT/triton-ours.json" --benchmark_out_format=json > /dev/null 2>&1
      (cd "$ROOT" && python3 -m peers --impl_module=examples/triton_softmax/triton_softmax.py \
        --benchmark_filter='^softmax/triton/bf16/' --benchmark_repetitions=5 \
        --benchmark_out="$OUT/triton-peer.json" > "$OUT/triton-peer.txt" 2>&1)
      echo "triton rc=$?"; grep -E "error|wrong" "$OUT/triton-peer.txt" | head -5
      "$B/compare/gptbench-compare" merge "$OUT/triton-merged.json" "$OUT/triton-ours.json" "$OUT/triton-peer.json"
      for a in fused torch; do
        "$B/compare/gptbench-compare" filters "$OUT/triton-merged.json" $a triton > "$OUT/triton-vs-$a.txt" 2>&1
        grep -E "softmax|Geomean" "$OUT/triton-vs-$a.txt" | head -8
      done ;;
    fp8step)
      models=${FP8_STEP_MODELS:-small,medium,large}; peer_models=${FP8_PEER_MODELS:-$models}
      (cd "$B" && ./gptbench_tests --gtest_filter="${FP8_STEP_TESTS:-Fp8LinearFunction*:Fp8LinearAfterGelu*:Fp8GemmGpuBias*:Fp8DelayedScale*:ColumnSum*:TrainStepFp8*:TrainCaseFp8*}" > "$OUT/fp8step-tests.log" 2>&1)
      echo "fp8step tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" "$OUT/fp8step-tests.log" | tail -6
      F=${FP8_STEP_FILTER:-'^model/train_step/(small|medium|large)/(bf16|fp8)/B:[0-9]+/T:1024/opt:(adamw/attn:sdpa/head:(fused|fp8)/blocks:fused|torch_fused/attn:sdpa/head:torch/blocks:torch)/accum:1/mode:(graph|eager)/'}
      timeout "${FP8_SECONDS:-600}" "$B/gptbench" --gptbench_fp8=true --gptbench_models="$models" \
        --gptbench_batch="${FP8_STEP_BATCH:-16}" --benchmark_filter="$F" --benchmark_min_time=0.2 \
        --benchmark_out="$OUT/fp8step-ours.json" --benchmark_out_format=json > "$OUT/fp8step-ours.txt" 2>&1
      echo "fp8step ours rc=$?"; grep -E "error|wrong|skipped" "$OUT/fp8step-ours.txt" | cut -c1-200 | head -8
      (cd "$ROOT" && timeout "${FP8_PEER_SECONDS:-${FP8_SECONDS:-600}}" python3 -m peers --fp8 --full --gptbench_batch="${FP8_STEP_BATCH:-16}" \
        --benchmark_filter="^model/train_step/(${peer_models//,/|})/fp8/" --benchmark_min_time=0.2 \
        --benchmark_out="$OUT/fp8step-peers.json" > "$OUT/fp8step-peers.txt" 2>&1)
      echo "fp8step peers rc=$?"; grep -E "error|wrong|skipped" "$OUT/fp8step-peers.txt" | cut -c1-200 | head -8
      "$B/compare/gptbench-compare" merge "$OUT/fp8step-merged.json" "$OUT/fp8step-ours.json" "$OUT/fp8step-peers.json"
      grep -hE "^model/train_step" "$OUT/fp8step-ours.txt" "$OUT/fp8step-peers.txt" | awk '{print $1, $2, $3}' ;;
    example)
      cmake --install "$B" --prefix "$B/prefix" > "$OUT/example.txt" 2>&1
      cmake -S "$ROOT/examples/custom_kernel" -B "$B/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$B/prefix;$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
        >> "$OUT/example.txt" 2>&1 && cmake --build "$B/example" >> "$OUT/example.txt" 2>&1
      echo "example build rc=$?"
      "$B/example/custom_bench" --benchmark_min_time=0.05 --benchmark_out="$OUT/example.json" \
        --benchmark_out_format=json --benchmark_filter='^softmax/(torch|fused|mine|mine_wrong)/bf16/fwd/attn' \
        2>&1 | tee -a "$OUT/example.txt" | grep -E "manual_time" | cut -c1-150 | head -16 ;;
    lmhead)
      n=$1; shift
      for settle in 0 1; do for ((i = 1; i <= n; i++)); do
        "$B/gptbench" --benchmark_filter='^gemm/(torch|cublaslt)/bf16/small\.lm_head\.fwd/' --gptbench_settle=$settle \
          --benchmark_repetitions=10 --benchmark_min_time=0.01 --gptbench_kernels=true \
          --benchmark_out="$OUT/lmhead-settle$settle-$i.json" --benchmark_out_format=json > /dev/null 2>&1
      done; done
      python3 - "$OUT" "$n" <<'PY'
import json, statistics as st, sys
out, n = sys.argv[1], int(sys.argv[2])
for settle in (0, 1):
    for i in range(1, n + 1):
        rows = [r for r in json.load(open(f"{out}/lmhead-settle{settle}-{i}.json"))["benchmarks"]
                if r.get("run_type") == "iteration"]
        for name in sorted({r["name"] for r in rows}):
            t = [r["real_time"] for r in rows if r["name"] == name]
            print(f"settle={settle} process {i} {name.split('/')[1]:9s} first {t[0]/1e3:7.1f} us  "
                  f"median {st.median(t)/1e3:7.1f} us  first/median {t[0]/st.median(t)-1:+.1%}  "
                  f"{[r.get('label', '') for r in rows if r['name'] == name][0][:80]}")
PY
      ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "$step: $(( $(date +%s) - s0 )) s"
done
