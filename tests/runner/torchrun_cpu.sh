#!/usr/bin/env bash
# gptbench's ranks started by torchrun (--no-python), on the CPU with Gloo: two ranks on one
# node, then two rendezvous agents on this host acting as two nodes (--nnodes 2). In each, only
# rank 0 prints the table and writes --benchmark_out, and every collective row ran on 2 ranks.
#   tests/runner/torchrun_cpu.sh PYTHON GPTBENCH WORKDIR
set -uo pipefail
py=$1 bin=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
"$py" -c 'import torch.distributed.run' 2>/dev/null || { echo "no torch.distributed.run in $py"; exit 77; }
args=(--gptbench_device=cpu '--benchmark_filter=^comm/all_reduce/' --benchmark_min_time=0.001)
port=$((20000 + RANDOM % 20000))

check() {  # LABEL: one table (rank 0's) and one JSON with the rows, run on 2 ranks
  local label=$1 rows printed
  rows=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for b in d["benchmarks"] if not b.get("error_occurred")))' "$label.json") || { echo "$label: no JSON"; cat "$label".err; exit 1; }
  printed=$(grep -c '^comm/all_reduce/' "$label.out")
  grep -q '"gptbench_ranks": "2"' "$label.json" || { echo "$label: the run was not on 2 ranks"; exit 1; }
  [ "$rows" -gt 0 ] && [ "$printed" -eq "$rows" ] || { echo "$label: $printed rows printed for $rows in the JSON (only rank 0 prints)"; cat "$label.out"; exit 1; }
  [ ! -e "$label.json.rank1" ] || { echo "$label: rank 1 wrote a JSON"; exit 1; }
  echo "$label: $rows rows, printed once"
}

"$py" -m torch.distributed.run --no-python --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$port" \
  "$bin" "${args[@]}" --benchmark_out=one-node.json > one-node.out 2> one-node.err || { echo "one node: exit $?"; tail -20 one-node.err; exit 1; }
check one-node

port=$((port + 1))
for node in 1 0; do
  "$py" -m torch.distributed.run --no-python --nnodes 2 --node-rank "$node" --nproc-per-node 1 \
    --master-addr 127.0.0.1 --master-port "$port" \
    "$bin" "${args[@]}" --benchmark_out=two-nodes.json > "two-nodes-$node.out" 2> "two-nodes-$node.err" &
done
wait %1; a=$?; wait %2; b=$?
[ $a -eq 0 ] && [ $b -eq 0 ] || { echo "two nodes: exits $a $b"; tail -20 two-nodes-*.err; exit 1; }
cp two-nodes-0.out two-nodes.out
[ "$(grep -c '^comm/all_reduce/' two-nodes-1.out)" -eq 0 ] || { echo "two nodes: node 1's rank printed rows"; exit 1; }
check two-nodes
