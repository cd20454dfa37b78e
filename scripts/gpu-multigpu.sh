#!/usr/bin/env bash
# The multi-GPU families on a GPU host, with the build gpu-run.sh made (build-gpu/: gptbench,
# gptbench-run, gptbench_tests; runner_tests when built):
#   1. the tests of the data-parallel code (NCCL on one GPU; Gloo on the CPU where built)
#   2. gptbench-run --gpus N (N = the visible GPUs): the comm family's default and the ddp, zero1
#      and fsdp training steps of GPT-2 medium at T = 1024, per-GPU batch 16 -> $OUT/multigpu.json
#   3. the same training steps on one GPU (ranks:1)                  -> $OUT/multigpu-1gpu.json
#   4. the PyTorch peer: torch.distributed.all_reduce at the comm sizes -> $OUT/peer-allreduce.json
# then prints a table (scripts/multigpu_table.py). Logs go to $OUT too. About 3 minutes on 2 GPUs.
#   scripts/gpu-multigpu.sh [N]
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=$GPTBENCH_BUILD_DIR
N=${1:-$(nvidia-smi -L | wc -l)}
case "$N" in ''|*[!0-9]*|0) echo "gpu-multigpu.sh: '$N' is not a GPU count" >&2; exit 2 ;; esac
for exe in gptbench gptbench-run gptbench_tests; do
  [ -x "$B/$exe" ] || { echo "gpu-multigpu.sh: $B/$exe is not built (scripts/gpu-run.sh builds it)" >&2; exit 2; }
done
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv > "$OUT/multigpu-gpus.txt"
nvidia-smi topo -m > "$OUT/multigpu-topo.txt" 2>&1
echo "gpu-multigpu: $N GPUs: $(sed -n 2p "$OUT/multigpu-gpus.txt")"

# 1. Tests: one process group per test process, so the GPU and CPU tests run apart.
(cd "$B" && timeout 300 ./gptbench_tests --gtest_filter='DistGpu.*' > "$OUT/multigpu-tests-gpu.log" 2>&1)
echo "tests (NCCL, one GPU) rc=$?"
(cd "$B" && timeout 300 ./gptbench_tests --gtest_filter='DistCpu.*:RankEnv.*:Comm.*' > "$OUT/multigpu-tests-cpu.log" 2>&1)
echo "tests (Gloo, CPU) rc=$?"
if [ -x "$B/runner/runner_tests" ]; then
  (cd "$B" && timeout 300 ./runner/runner_tests --gtest_filter='Ranks.*:RealRanks.*' > "$OUT/multigpu-tests-runner.log" 2>&1)
  echo "tests (gptbench-run, 2 CPU ranks) rc=$?"
fi
grep -hE "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" "$OUT"/multigpu-tests-*.log | sort | uniq -c | tail -12

# 2. N ranks: comm default + ddp/zero1/fsdp of medium, T = 1024, B = 16 per GPU.
DP_FLAGS=(--gptbench_models=medium --gptbench_batch=16 --gptbench_seq=1024 --gptbench_dtypes=bf16)
timeout 420 "$B/gptbench-run" --gpus "$N" --benchmark-timeout 180 --progress never -o "$OUT/multigpu.json" \
  --benchmark_filter='^comm/|^model/train_step_dp/' "${DP_FLAGS[@]}" > "$OUT/multigpu.log" 2>&1
echo "gptbench-run --gpus $N rc=$?"; grep "gptbench-run:" "$OUT/multigpu.log" | tail -3

# 3. The one-GPU reference of the same steps.
timeout 240 "$B/gptbench-run" --gpus 1 --benchmark-timeout 180 --progress never -o "$OUT/multigpu-1gpu.json" \
  --benchmark_filter='^model/train_step_dp/' "${DP_FLAGS[@]}" > "$OUT/multigpu-1gpu.log" 2>&1
echo "gptbench-run --gpus 1 rc=$?"

# 4. The PyTorch peer at the sizes of comm/all_reduce's default.
timeout 240 python3 "$ROOT/scripts/peer_torch_allreduce.py" --gpus "$N" --out "$OUT/peer-allreduce.json" \
  > "$OUT/peer-allreduce.log" 2>&1
echo "peer rc=$?"

python3 "$ROOT/scripts/multigpu_table.py" "$OUT/multigpu.json" "$OUT/multigpu-1gpu.json" "$OUT/peer-allreduce.json"
