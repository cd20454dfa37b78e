#!/usr/bin/env bash
# The compiler peers on a GPU host (docs/peers.md): the peer runner's default grid under
# torch.compile and the rows of ours it pairs with, then gptbench-compare's tables of each
# `inductor…` implementation against ours. Needs $GPTBENCH_BUILD_DIR/gptbench (scripts/gpu-run.sh
# builds it) and the host's python3 with PyTorch and Triton.
#   scripts/gpu-peers.sh     ->  $OUT/ours.json, $OUT/peers.json, $OUT/merged.json,
#                                $OUT/peers-compare.txt, $OUT/headline.md (the README's
#                                table, device time on every side) (MIN_TIME: seconds per benchmark, 0.2;
#                                PEERS_FILTER: a --benchmark_filter for the peers, all of the grid;
#                                PEERS_SECONDS, OURS_SECONDS: time limits, 420 and 300)
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
B=$GPTBENCH_BUILD_DIR
MIN_TIME=${MIN_TIME:-0.2}
# Ours: the shapes of the peers' default grid (peers/families/*.py).
OURS='^softmax/(naive|torch|fused)/bf16/(fwd|bwd)/(vocab|attn\.small\.B64)/'
OURS+='|^(layernorm|loss)/(torch|fused)/bf16/'
OURS+='|^attention/(naive|sdpa_flash|flash)/bf16/causal/(fwd|fwd_bwd)/B:8/H:12/L:4096/d:64/'
OURS+='|^optim/(adamw|torch_fused_adamw)/fp32/model:small/'
OURS+='|^model/train_step/small/bf16/B:8/T:1024/opt:torch_fused/attn:sdpa/head:torch/blocks:torch/accum:1/mode:(eager|graph)/'
OURS+='|^model/train_step/small/bf16/B:8/T:1024/opt:adamw/attn:sdpa/head:fused/blocks:fused/accum:1/mode:graph/'
t0=$(date +%s)
(cd "$ROOT" && timeout "${PEERS_SECONDS:-420}" python3 -m peers --benchmark_out="$OUT/peers.json" \
  ${PEERS_FILTER:+--benchmark_filter="$PEERS_FILTER"} --benchmark_min_time="$MIN_TIME" > "$OUT/peers.txt" 2> "$OUT/peers.err")
echo "peers rc=$? in $(( $(date +%s) - t0 )) s: $(grep -c manual_time "$OUT/peers.txt") rows"
grep -E "error|skipped|unsupported|wrong" "$OUT/peers.txt" | head -10
t1=$(date +%s)
timeout "${OURS_SECONDS:-300}" "$B/gptbench-run" --binary "$B/gptbench" -o "$OUT/ours.json" --quiet-children \
  --benchmark_filter="$OURS" --benchmark_min_time="$MIN_TIME" > /dev/null 2> "$OUT/ours.err"
echo "ours rc=$? in $(( $(date +%s) - t1 )) s"; tail -2 "$OUT/ours.err"
# One document for `gptbench-compare filters`: our context, both sets of rows.
python3 - "$OUT/ours.json" "$OUT/peers.json" "$OUT/merged.json" <<'PY'
import json, sys
ours, peers = (json.load(open(p)) for p in sys.argv[1:3])
offset = 1 + max((r["family_index"] for r in ours["benchmarks"]), default=-1)
for r in peers["benchmarks"]:
    r["family_index"] += offset
ours["benchmarks"] += peers["benchmarks"]
ours["context"]["peers_torch"] = peers["context"].get("torch", "?")
json.dump(ours, open(sys.argv[3], "w"), indent=1)
# The training steps side by side (their configurations differ in more than one segment).
steps = [r for r in ours["benchmarks"] if r["name"].startswith("model/train_step/")
         and r.get("run_type", "iteration") == "iteration" and "tokens/s" in r]
print(f"{'training step':<100} {'tokens/s':>10} {'MFU%':>6} {'MFU% ds':>8}")
for r in sorted(steps, key=lambda r: -r["tokens/s"]):
    print(f"{r['name'][:100]:<100} {r['tokens/s']:>10.0f} {r.get('mfu_pct', 0):>6.1f} "
          f"{r.get('mfu_datasheet_pct', 0):>8.1f}")
PY
C=$B/compare/gptbench-compare
{
  for pair in "fused inductor" "torch inductor" "naive inductor_naive" "flash inductor_flex" "naive inductor" \
              "torch_fused_adamw inductor_adamw" "mode:eager mode:pytorch" "mode:eager mode:inductor" \
              "mode:graph mode:inductor_cg"; do
    echo "== gptbench-compare filters merged.json $pair"
    "$C" filters "$OUT/merged.json" $pair --format=markdown
  done
} > "$OUT/peers-compare.txt" 2>&1
cat "$OUT/peers-compare.txt" | grep -E "^==|^\| |geomean" | head -80
python3 "$ROOT/scripts/headline_table.py" "$OUT/merged.json" | tee "$OUT/headline.md"
echo "total $(( $(date +%s) - t0 )) s"
