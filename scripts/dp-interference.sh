#!/usr/bin/env bash
# Why data-parallel steps scale below 1 with little exposed communication: the ddp training step
# of GPT-2 medium (T = 1024, 16 sequences per GPU, bf16) on N GPUs under each lever that trades
# NCCL's share of the SMs or its overlap with the backward against the step's speed, then a
# table of tokens/s, scaling efficiency, exposed communication and SM clock (over the
# reference's) per setting
# (docs/multigpu.md, "Interference"). Levers:
#   default                          NCCL's own choice, 25 MiB buckets
#   ctas:K                           NCCL_MIN_CTAS=NCCL_MAX_CTAS=K: at most K SMs for a collective
#   bucket:SIZE                      --gptbench_dp_bucket=SIZE (fewer, larger all-reduces, or more)
#   cta_policy:efficiency|zero       NCCL_CTA_POLICY=1|2 (NCCL 2.27+): the fewest CTAs that keep the
#                                    collective fast, or none where the copy engines can serve it
#                                    (window-registered buffers; elsewhere NCCL falls back to CTAs)
#   stream:high                      TORCH_NCCL_HIGH_PRIORITY=1: the process group's NCCL streams at
#                                    the GPU's highest priority, so a collective's CTAs are placed
#                                    before the pending blocks of the kernels it overlaps
#   proto:P                          NCCL_PROTO=P (Simple, LL128, LL): the protocol NCCL's collectives
#                                    use instead of its own choice
#   carveout:K                       --gptbench_dp_sm_carveout=K: the backward's GEMMs leave K SMs
#                                    to the collectives they overlap (ops/gemm_carveout.h)
#   grad_comm:bf16                   --gptbench_dp_grad_comm=bf16: the buckets averaged in bf16,
#                                    half the bytes (train/dp_grad_comm.h); grad_comm:bf16_inline:
#                                    the casts on the backward's stream, the copies back after it;
#                                    grad_comm:bf16_direct: cast so, the optimizer reads the means
#   overlap:optimizer                --gptbench_dp_overlap=optimizer: the collectives after the
#                                    backward, beside the buckets' optimizer steps (ddp, zero1)
#   overlap:attention                --gptbench_dp_overlap=attention: each complete bucket launched
#                                    just before the next attention's backward (ddp, zero1)
#   buffers:symmetric                --gptbench_dp_buffers=symmetric: the buckets in NCCL symmetric
#                                    windows, for NCCL's symmetric kernels (a GPU)
#   param_gather:forward             --gptbench_dp_param_gather=forward: zero1's all-gathers of the
#                                    updated parameters waited for in the next forward (zero1)
#   param_comm:bf16                  --gptbench_dp_param_comm=bf16: zero1's all-gathers of the
#                                    updated parameters in bf16, half the bytes (zero1)
#   update:forward                   --gptbench_dp_update=forward: ddp's means waited for, and its
#                                    buckets' optimizer steps run, in the next forward (ddp);
#                                    with overlap:forward its all-reduces launched after the
#                                    backward, beside that forward
#   A+B                              levers together, e.g. carveout:16+ctas:16+bucket:50MiB
# Each setting is one gptbench-run --gpus N of the --mode rows (default ddp); JSON and logs in OUT_DIR.
# --rounds R runs the list R times in turn (LABEL.rK.json), so slow drifts of the GPUs' clocks fall
# on every setting alike, and the table gives each setting's medians and its range of scaling.
#   scripts/dp-interference.sh [--cpu] [--build DIR] [--mode ddp|zero1|fsdp] [--rounds R] [--settings 'default ctas:8 bucket:50MiB'] N OUT_DIR
# --cpu: N CPU ranks over Gloo, GPT-2 tiny, to check the script itself (the NCCL levers are
# only recorded there).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${GPTBENCH_BUILD_DIR:-$root/build}
device=cuda
mode=ddp
rounds=1
settings='default ctas:16 ctas:8 ctas:4 cta_policy:efficiency cta_policy:zero bucket:12.5MiB bucket:50MiB bucket:100MiB'
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --cpu) device=cpu; shift ;;
    --build) build=${2:?--build DIR}; shift 2 ;;
    --settings) settings=${2:?--settings LIST}; shift 2 ;;
    --rounds) rounds=${2:?--rounds R}; shift 2
              [[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "dp-interference.sh: '$rounds' is not a round count" >&2; exit 2; } ;;
    --mode) mode=${2:?--mode ddp|zero1|fsdp}; shift 2
            [[ "$mode" =~ ^(ddp|zero1|fsdp)$ ]] || { echo "dp-interference.sh: unknown mode '$mode' (ddp, zero1, fsdp)" >&2; exit 2; } ;;
    *) echo "dp-interference.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
n=${1:?usage: dp-interference.sh [--cpu] [--build DIR] [--mode MODE] [--settings LIST] N OUT_DIR}
out=${2:?usage: dp-interference.sh [--cpu] [--build DIR] [--mode MODE] [--settings LIST] N OUT_DIR}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "dp-interference.sh: '$n' is not a rank count" >&2; exit 2; }
[[ -x "$build/gptbench-run" && -x "$build/gptbench" ]] || { echo "dp-interference.sh: no gptbench-run in $build" >&2; exit 2; }
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [[ "$device" == cuda ]]; then
  flags=(--gptbench_models=medium --gptbench_batch=16 --gptbench_seq=1024 --gptbench_dtypes=bf16)
else
  flags=(--gptbench_device=cpu)
fi
for ((round = 1; round <= rounds; round++)); do
for setting in $settings; do
  env_args=() extra=()
  IFS=+ read -ra levers <<< "$setting"
  for lever in "${levers[@]}"; do
    case "$lever" in
      default) ;;
      ctas:*) k=${lever#ctas:}; [[ "$k" =~ ^[1-9][0-9]*$ ]] || { echo "dp-interference.sh: bad $lever" >&2; exit 2; }
              env_args+=(NCCL_MIN_CTAS="$k" NCCL_MAX_CTAS="$k") ;;
      bucket:*) extra+=(--gptbench_dp_bucket="${lever#bucket:}") ;;
      carveout:*) extra+=(--gptbench_dp_sm_carveout="${lever#carveout:}") ;;
      grad_comm:*) extra+=(--gptbench_dp_grad_comm="${lever#grad_comm:}") ;;
      overlap:*) extra+=(--gptbench_dp_overlap="${lever#overlap:}") ;;
      buffers:*) extra+=(--gptbench_dp_buffers="${lever#buffers:}") ;;
      param_gather:*) extra+=(--gptbench_dp_param_gather="${lever#param_gather:}") ;;
      param_comm:*) extra+=(--gptbench_dp_param_comm="${lever#param_comm:}") ;;
      update:*) extra+=(--gptbench_dp_update="${lever#update:}") ;;
      proto:*) env_args+=(NCCL_PROTO="${lever#proto:}") ;;
      cta_policy:efficiency) env_args+=(NCCL_CTA_POLICY=1) ;;
      cta_policy:zero) env_args+=(NCCL_CTA_POLICY=2) ;;
      stream:high) env_args+=(TORCH_NCCL_HIGH_PRIORITY=1) ;;
      *) echo "dp-interference.sh: unknown setting '$lever' (default, ctas:K, bucket:SIZE, proto:P, carveout:K, grad_comm:TYPE, overlap:WHAT, buffers:KIND, param_gather:WHERE, param_comm:TYPE, update:WHERE, cta_policy:efficiency|zero, stream:high, joined by +)" >&2; exit 2 ;;
    esac
  done
  label=${setting//[:.+]/_} which=$setting
  ((rounds > 1)) && label+=.r$round which+="(round $round)"
  env "${env_args[@]}" timeout 300 "$build/gptbench-run" --binary "$build/gptbench" --gpus "$n" --progress never \
    --benchmark-timeout 240 -o "$out/$label.json" --benchmark_filter="^model/train_step_dp/.*/mode:$mode(/|\$)" \
    "${flags[@]}" "${extra[@]}" > "$out/$label.log" 2>&1
  echo "$which: exit $?"
done
done
python3 "$root/scripts/dp_interference_table.py" --mode "$mode" --rounds "$rounds" "$out" $settings
