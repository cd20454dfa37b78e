#!/usr/bin/env bash
# scripts/dp-interference.sh on 2 CPU ranks (Gloo, GPT-2 tiny): every setting ran and has a row
# in the table, the bucket lever took effect (512 KiB buckets: fewer than the CPU default
# 256 KiB's), alone and joined to another lever with +; --mode zero1 runs the zero1 row; the
# collectives after the backward (overlap:optimizer) run in both modes, with bf16 means in ddp;
# so do, in zero1, the collectives held back to the attentions' backwards (overlap:attention),
# the all-gathers waited for in the next forward (param_gather:forward) and made in bf16
# (param_comm:bf16, with param_gather:forward too); ddp with its updates in the next forward
# (update:forward), its all-reduces in the backward or after it (overlap:forward), with bf16
# means read by the optimizer too; --rounds 2 runs each
# setting twice in turn and gives its medians and range; the clock column reads "-" on the CPU
# and, on rows that carry clocks, the median of row ÷ reference.
#   tests/runner/dp_interference_cpu.sh BUILD_DIR WORKDIR
set -uo pipefail
build=$1 dir=$2 root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$dir" && mkdir -p "$dir"
table=$(bash "$root/scripts/dp-interference.sh" --cpu --build "$build" --settings 'default ctas:2 cta_policy:efficiency stream:high bucket:512KiB proto:Simple+bucket:512KiB overlap:optimizer+grad_comm:bf16' 2 "$dir") ||
  { echo "dp-interference.sh failed"; echo "$table"; exit 1; }
echo "$table"
for setting in default ctas:2 cta_policy:efficiency stream:high bucket:512KiB proto:Simple+bucket:512KiB overlap:optimizer+grad_comm:bf16; do
  line=$(grep "^$setting " <<< "$table") || { echo "no line for $setting"; exit 1; }
  [[ "$(awk '{print NF}' <<< "$line")" -eq 9 && "$line" =~ [0-9] && "$(awk '{print $9}' <<< "$line")" == - ]] || { echo "$setting has no numbers: $line"; exit 1; }
done
default_buckets=$(awk '$1 == "default" {print $8}' <<< "$table")
larger_buckets=$(awk '$1 == "bucket:512KiB" {print $8}' <<< "$table")
joined_buckets=$(awk '$1 == "proto:Simple+bucket:512KiB" {print $8}' <<< "$table")
[[ "$larger_buckets" -lt "$default_buckets" ]] || { echo "512KiB buckets: $larger_buckets, not fewer than $default_buckets"; exit 1; }
[[ "$joined_buckets" -eq "$larger_buckets" ]] || { echo "proto:Simple+bucket:512KiB: $joined_buckets buckets, not $larger_buckets"; exit 1; }
grep -q '/bucket:512KiB/' "$dir/bucket_512KiB.json" || { echo "the 512KiB row is not named bucket:512KiB"; exit 1; }
grep -q '/bucket:512KiB/' "$dir/proto_Simple_bucket_512KiB.json" || { echo "the joined row is not named bucket:512KiB"; exit 1; }
grep -q '/grad_comm:bf16/overlap:optimizer/' "$dir/overlap_optimizer_grad_comm_bf16.json" ||
  { echo "the overlap:optimizer row is not named so"; exit 1; }
zero1=$(bash "$root/scripts/dp-interference.sh" --cpu --build "$build" --mode zero1 \
  --settings 'default overlap:optimizer overlap:attention param_gather:forward param_comm:bf16+param_gather:forward' 2 "$dir/zero1") ||
  { echo "dp-interference.sh --mode zero1 failed"; echo "$zero1"; exit 1; }
for setting in default overlap:optimizer overlap:attention param_gather:forward param_comm:bf16+param_gather:forward; do
  [[ "$(grep "^$setting " <<< "$zero1" | awk '{print NF}')" -eq 9 ]] || { echo "no zero1 line for $setting: $zero1"; exit 1; }
done
grep -q '/mode:zero1/' "$dir/zero1/default.json" || { echo "--mode zero1 did not run the zero1 row"; exit 1; }
grep -q '/overlap:optimizer/ranks:2/mode:zero1' "$dir/zero1/overlap_optimizer.json" || { echo "no zero1 overlap:optimizer row"; exit 1; }
grep -q '/overlap:attention/ranks:2/mode:zero1' "$dir/zero1/overlap_attention.json" || { echo "no zero1 overlap:attention row"; exit 1; }
grep -q '/param_gather:forward/ranks:2/mode:zero1' "$dir/zero1/param_gather_forward.json" || { echo "no zero1 param_gather:forward row"; exit 1; }
grep -q '/param_gather:forward/param_comm:bf16/ranks:2/mode:zero1' "$dir/zero1/param_comm_bf16_param_gather_forward.json" ||
  { echo "no zero1 param_comm:bf16 row"; exit 1; }
forward=$(bash "$root/scripts/dp-interference.sh" --cpu --build "$build" \
  --settings 'update:forward update:forward+overlap:forward update:forward+overlap:forward+grad_comm:bf16_direct' 2 "$dir/forward") ||
  { echo "dp-interference.sh with update:forward failed"; echo "$forward"; exit 1; }
for setting in update:forward update:forward+overlap:forward update:forward+overlap:forward+grad_comm:bf16_direct; do
  [[ "$(grep "^$setting " <<< "$forward" | awk '{print NF}')" -eq 9 ]] || { echo "no line for $setting: $forward"; exit 1; }
done
grep -q '/update:forward/ranks:2/mode:ddp' "$dir/forward/update_forward.json" || { echo "no ddp update:forward row"; exit 1; }
grep -q '/overlap:forward/update:forward/ranks:2/mode:ddp' "$dir/forward/update_forward_overlap_forward.json" ||
  { echo "no ddp overlap:forward row"; exit 1; }
grep -q '/grad_comm:bf16_direct/overlap:forward/update:forward/ranks:2/mode:ddp' \
  "$dir/forward/update_forward_overlap_forward_grad_comm_bf16_direct.json" || { echo "no ddp bf16_direct overlap:forward row"; exit 1; }
rounds=$(bash "$root/scripts/dp-interference.sh" --cpu --build "$build" --rounds 2 --settings 'default bucket:512KiB' 2 "$dir/rounds") ||
  { echo "dp-interference.sh --rounds 2 failed"; echo "$rounds"; exit 1; }
for setting in default bucket:512KiB; do
  line=$(grep "^$setting " <<< "$rounds") || { echo "no rounds line for $setting: $rounds"; exit 1; }
  [[ "$(awk '{print NF}' <<< "$line")" -eq 10 && "$(awk '{print $10}' <<< "$line")" =~ ^[0-9.]+-[0-9.]+\(2\)$ ]] ||
    { echo "$setting: no medians and range of 2 runs: $line"; exit 1; }
  label=${setting//[:.+]/_}
  [[ -s "$dir/rounds/$label.r1.json" && -s "$dir/rounds/$label.r2.json" ]] || { echo "no run files for each round of $setting"; exit 1; }
done
bash "$root/scripts/dp-interference.sh" --cpu --build "$build" --rounds 0 2 "$dir/bad" > /dev/null 2>&1 &&
  { echo "--rounds 0 was accepted"; exit 1; }
bash "$root/scripts/dp-interference.sh" --cpu --build "$build" --settings 'cta_policy:fast' 2 "$dir/bad" > /dev/null 2>&1 &&
  { echo "an unknown CTA policy was accepted"; exit 1; }
# The clock column on rows that read one (a GPU's): the median over the runs of row ÷ reference.
mkdir -p "$dir/clock"
for k in 1 2 3; do
  printf '{"benchmarks": [{"name": "model/train_step_dp/x/ranks:2/mode:ddp", "run_type": "iteration", "sm_clock_mhz": %s, "ref_sm_clock_mhz": 1700}]}' \
    "$((1600 + 25 * k))" > "$dir/clock/default.r$k.json"
done
clock=$(python3 "$root/scripts/dp_interference_table.py" --rounds 3 "$dir/clock" default | awk '$1 == "default" {print $9}')
[[ "$clock" == 0.971 ]] || { echo "clock/ref of 1625, 1650, 1675 MHz against 1700: $clock, not 0.971"; exit 1; }
echo "ok: 7 settings, 3 of ddp's updates in the forward and 5 of zero1, buckets $default_buckets -> $larger_buckets"
