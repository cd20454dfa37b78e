#!/usr/bin/env bash
# Ours' data-parallel training steps and PyTorch's own stacks on one GPU host (docs/multigpu.md,
# "PyTorch's stacks beside ours"), GPT-2 medium, T = 1024, 16 sequences per GPU, bf16. Builds
# nothing: needs $GPTBENCH_BUILD_DIR (default build/) with gptbench, gptbench-run and
# compare/gptbench-compare, and $PYTHON (default python3) with PyTorch, Triton and NCCL.
#   1. ours: gptbench-run --gpus N, ddp / zero1 / fsdp                       -> OUTDIR/ours.json
#   2. the peers: torchrun -m peers.dp, torch_ddp / torch_zero1 / torch_fsdp -> OUTDIR/peers.json
#   3. one file: gptbench-compare merge                                       -> OUTDIR/merged.json
#   4. gptbench-compare filters mode:X mode:torch_X, and one table            -> OUTDIR/dp-compare.txt
#   scripts/gpu-dp-peers.sh OUTDIR [N]     (N: GPUs, default 4; REPS: repetitions, default 3)
set -uo pipefail
case $# in 1|2) ;; *) echo "usage: scripts/gpu-dp-peers.sh OUTDIR [N]" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export GPTBENCH_BUILD_DIR=${GPTBENCH_BUILD_DIR:-$ROOT/build}
OUT=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "gpu-dp-peers.sh: cannot create $1" >&2; exit 2; }
source "$ROOT/scripts/gpu-env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=$GPTBENCH_BUILD_DIR
C=$B/compare/gptbench-compare
PYTHON=${PYTHON:-python3}
N=${2:-4}
REPS=${REPS:-3}
case "$N" in ''|*[!0-9]*|0) echo "gpu-dp-peers.sh: '$N' is not a GPU count" >&2; exit 2 ;; esac
for exe in "$B/gptbench" "$B/gptbench-run" "$C"; do
  [ -x "$exe" ] || { echo "gpu-dp-peers.sh: $exe is not built" >&2; exit 2; }
done
GPUS=$(nvidia-smi -L | wc -l)
[ "$GPUS" -ge "$N" ] || { echo "gpu-dp-peers.sh: $N GPUs asked for, $GPUS here" >&2; exit 2; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$OUT/gpus.txt"
echo "gpu-dp-peers: $N of $GPUS GPUs: $(sed -n 2p "$OUT/gpus.txt")"

# The same flags on both sides: gptbench-run passes them to gptbench, torchrun to peers.dp.
FLAGS=(--benchmark_filter='^model/train_step_dp/medium/' --gptbench_models=medium --gptbench_batch=16
       --gptbench_seq=1024 --gptbench_dtypes=bf16 --benchmark_repetitions="$REPS")

# 1. Ours.
t0=$(date +%s)
timeout 900 "$B/gptbench-run" --binary "$B/gptbench" --gpus "$N" --benchmark-timeout 300 --progress never \
  -o "$OUT/ours.json" "${FLAGS[@]}" > "$OUT/ours.log" 2>&1
echo "ours rc=$? in $(( $(date +%s) - t0 )) s"; grep "gptbench-run:" "$OUT/ours.log" | tail -2

# 2. The peers (torchrun is torch.distributed.run; most of their time is torch.compile).
t1=$(date +%s)
(cd "$ROOT" && timeout 2400 "$PYTHON" -m torch.distributed.run --nproc-per-node "$N" \
  --master-addr 127.0.0.1 --master-port $((20000 + RANDOM % 20000)) \
  -m peers.dp "${FLAGS[@]}" --benchmark_out="$OUT/peers.json" > "$OUT/peers.txt" 2> "$OUT/peers.err")
echo "peers rc=$? in $(( $(date +%s) - t1 )) s"; grep -E "manual_time" "$OUT/peers.txt" | cut -c1-180

# 3. One file: ours' context, both sets of rows (aggregates dropped, repetitions kept).
"$C" merge "$OUT/merged.json" "$OUT/ours.json" "$OUT/peers.json" || exit 1

# 4. Each of ours against its peer, and every step side by side.
{
  for m in ddp zero1 fsdp; do
    echo "== gptbench-compare filters merged.json mode:$m mode:torch_$m"
    "$C" filters "$OUT/merged.json" "mode:$m" "mode:torch_$m" --format=markdown
  done
  echo "== steps (medians of $REPS repetitions)"
  (cd "$ROOT" && "$PYTHON" -m peers.dp.table "$OUT/merged.json")
} > "$OUT/dp-compare.txt" 2>&1
grep -E "^==|^\| |geomean|Geomean" "$OUT/dp-compare.txt" | head -60
echo "total $(( $(date +%s) - t0 )) s"
