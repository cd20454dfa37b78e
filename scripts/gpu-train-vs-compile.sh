#!/usr/bin/env bash
# Our best training-step configuration beside torch.compile's step, on one GPU, in one run
# (docs/train_step.md, "Against torch.compile"): GPT-2 at T=1024, bf16 autocast, AdamW with one
# set of hyper-parameters, the vocabulary padded to 50,304 on both sides. Ours: fused blocks,
# fused head, our AdamW, CUDA graph, SDPA's default and cuDNN attention. The peer: the same
# model under torch.compile (head:padded). Every case is also traced (--gptbench_profile) and
# the traces' kernels are summed by class (scripts/kernel_classes.py).
#   MODELS="small medium large" BATCHES="16 32" PEER_MODES="inductor|inductor_cg" MIN_TIME=0.3
#   ATTN="sdpa|cudnn" (our attention rows)  SKIP_PEERS=1 (ours only)
#   scripts/gpu-train-vs-compile.sh  ->  $OUT/ours-B<b>.json, $OUT/peers-B<b>.json,
#        $OUT/vs-compile.txt (tokens/s and both MFUs side by side), $OUT/kernels-<size>-B<b>.md
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
B=$GPTBENCH_BUILD_DIR
MODELS=${MODELS:-small medium large}
BATCHES=${BATCHES:-16 32}
PEER_MODES=${PEER_MODES:-inductor|inductor_cg}
MIN_TIME=${MIN_TIME:-0.3}
ATTN=${ATTN:-sdpa|cudnn}
TRACES=$OUT/traces
mkdir -p "$TRACES"
csv=$(echo $MODELS | tr ' ' ',')
sizes=$(echo $MODELS | tr ' ' '|')
for b in $BATCHES; do
  t0=$(date +%s)
  timeout 600 "$B/gptbench" --gptbench_models="$csv" --gptbench_batch="$b" --gptbench_dtypes=bf16 \
    --gptbench_full=true --gptbench_profile="$TRACES" --benchmark_min_time="$MIN_TIME" \
    --benchmark_filter="^model/train_step/($sizes)/bf16/B:$b/T:1024/opt:adamw/attn:($ATTN)/head:fused/blocks:fused/accum:1/mode:graph/" \
    --benchmark_out="$OUT/ours-B$b.json" --benchmark_out_format=json > "$OUT/ours-B$b.txt" 2> "$OUT/ours-B$b.err"
  echo "ours B=$b rc=$? in $(( $(date +%s) - t0 )) s"
  [ "${SKIP_PEERS:-0}" = 1 ] && continue
  t0=$(date +%s)
  (cd "$ROOT" && timeout 900 python3 -m peers --full --gptbench_models="$csv" --gptbench_batch="$b" \
    --gptbench_dtypes=bf16 --gptbench_profile="$TRACES" --benchmark_min_time="$MIN_TIME" \
    --benchmark_filter="^model/train_step/($sizes)/bf16/B:$b/.*/head:padded/.*/mode:($PEER_MODES)/" \
    --benchmark_out="$OUT/peers-B$b.json" > "$OUT/peers-B$b.txt" 2> "$OUT/peers-B$b.err")
  echo "peers B=$b rc=$? in $(( $(date +%s) - t0 )) s"
done
python3 "$ROOT/scripts/train_vs_compile.py" "$OUT"/ours-B*.json $(ls "$OUT"/peers-B*.json 2>/dev/null) | tee "$OUT/vs-compile.txt"
# Kernel classes: our best configuration beside each peer mode, per size and batch.
for m in $MODELS; do
  for b in $BATCHES; do
    ours=$(ls "$TRACES"/model_train_step_${m}_bf16_B_${b}_T_1024_opt_adamw_attn_*.trace.json 2>/dev/null)
    peers=$(ls "$TRACES"/model_train_step_${m}_bf16_B_${b}_T_1024_*head_padded*.trace.json 2>/dev/null)
    [ -n "$ours" ] && [ -n "$peers" ] || continue
    python3 "$ROOT/scripts/kernel_classes.py" $ours $peers --names "ours,torch.compile" > "$OUT/kernels-$m-B$b.md"
  done
done
ls "$OUT"/kernels-*.md 2>/dev/null | head -1 | xargs -r head -16
