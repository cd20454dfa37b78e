#!/usr/bin/env bash
# Pre-merge performance gate: runs a benchmark subset for two versions of the
# suite INTERLEAVED (A, B, A, B, ... one repetition per invocation, so drift of
# the machine hits both equally), merges each side's rounds into one run with
# N repetitions, and gates with gptbench-compare's exit code:
#   0 no regression, 1 regression (or a benchmark broken in NEW), 2 error.
#
# usage:
#   scripts/premerge.sh [options] BASE NEW        BASE/NEW: build dirs or git revisions
#   scripts/premerge.sh [options] --base-bin PATH --new-bin PATH
# options:
#   --rounds N         interleaved rounds = repetitions per side (default 9)
#   --filter REGEX     benchmarks to run (default: the pre-merge subset for the device)
#   --device D         cpu, cuda or auto (default auto: cuda when nvidia-smi sees a GPU)
#   --min-time SEC     --benchmark_min_time per invocation (default 0.2 on cuda, 0.05 on cpu)
#   --out DIR          where rounds, merged runs and reports go (default build-premerge/)
#   --compare PATH     gptbench-compare binary (default: found in NEW's build, then PATH)
#   -- ARGS...         passed to gptbench-compare (e.g. --threshold 3% --config perf.ini)
# A git revision is checked out in a worktree under OUT/src-REV and built with
# its own ./gptbench.sh build (into that worktree's build/).
set -euo pipefail

# Default subsets: a few minutes on one GPU (29 benchmarks; the first one, 76 benchmarks with
# cublaslt_search and the slow reference paths, took ~70 s per invocation on an H200); seconds
# on a CPU-only machine.
readonly kGpuFilter='^(gemm/(torch|cublaslt)/bf16/small\.[a-z_]+\.fwd/|softmax/(torch|fused)/bf16/fwd/attn\.small/|attention/(sdpa_flash|sdpa_cudnn|flash)/bf16/causal/fwd/B:8/H:12/L:1024/|optim/(adamw|adam8bit|adafactor|lion|torch_fused_adamw)/fp32/model:small)'
readonly kCpuFilter='^(gemm/torch/fp32/tiny\.(qkv|mlp_up)\.|softmax/(naive|torch)/fp32/fwd/attn\.tiny/|optim/[^/]+/fp32/model:tiny)'

die() { echo "premerge: error: $*" >&2; exit 2; }

rounds=9 filter='' device=auto min_time='' out='' compare='' base_bin='' new_bin=''
positional=() compare_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --filter) filter="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --min-time) min_time="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --compare) compare="$2"; shift 2 ;;
    --base-bin) base_bin="$2"; shift 2 ;;
    --new-bin) new_bin="$2"; shift 2 ;;
    --) shift; compare_args=("$@"); break ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) positional+=("$1"); shift ;;
  esac
done
[[ "$rounds" =~ ^[0-9]+$ && "$rounds" -ge 2 ]] || die "--rounds must be an integer >= 2 (9 or more recommended)"
root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || cd "$(dirname "$0")/.." && pwd)"
out="${out:-$root/build-premerge}"
mkdir -p "$out"

# The suite binary inside a build directory.
find_binary() {
  local dir="$1" candidate
  for candidate in "$dir/gptbench" "$dir/bin/gptbench" "$dir/bench/gptbench"; do
    [[ -x "$candidate" && -f "$candidate" ]] && { echo "$candidate"; return; }
  done
  candidate="$(find "$dir" -maxdepth 3 -type f -name gptbench -perm -u+x 2>/dev/null | head -n1)"
  [[ -n "$candidate" ]] || die "no gptbench binary under $dir"
  echo "$candidate"
}

# A build dir as is; a git revision checked out and built.
resolve_side() {
  local spec="$1" tree
  if [[ -d "$spec" ]]; then
    find_binary "$spec"
  elif git -C "$root" rev-parse --verify --quiet "$spec^{commit}" >/dev/null; then
    tree="$out/src-$(git -C "$root" rev-parse --short "$spec")"
    if [[ ! -d "$tree" ]]; then
      git -C "$root" worktree add --detach "$tree" "$spec" >&2 || die "cannot check out $spec"
    fi
    (cd "$tree" && ./gptbench.sh build) >&2 || die "build of $spec failed"
    find_binary "$tree/build"
  else
    die "'$spec' is neither a directory nor a git revision"
  fi
}

if [[ -z "$base_bin" || -z "$new_bin" ]]; then
  [[ ${#positional[@]} -eq 2 ]] || die "give BASE and NEW (build dirs or git revisions), or --base-bin and --new-bin"
  base_bin="$(resolve_side "${positional[0]}")"
  new_bin="$(resolve_side "${positional[1]}")"
fi
[[ -x "$base_bin" ]] || die "base binary $base_bin is not executable"
[[ -x "$new_bin" ]] || die "new binary $new_bin is not executable"

if [[ "$device" == auto ]]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then device=cuda; else device=cpu; fi
fi
[[ "$device" == cpu || "$device" == cuda ]] || die "--device must be cpu, cuda or auto"
if [[ -z "$filter" ]]; then
  if [[ "$device" == cuda ]]; then filter="$kGpuFilter"; else filter="$kCpuFilter"; fi
fi
if [[ -z "$min_time" ]]; then
  if [[ "$device" == cuda ]]; then min_time=0.2; else min_time=0.05; fi
fi

if [[ -z "$compare" ]]; then
  for candidate in "$(dirname "$new_bin")/compare/gptbench-compare" "$(dirname "$new_bin")/../compare/gptbench-compare" \
                   "$root/build/compare/gptbench-compare"; do
    [[ -x "$candidate" ]] && { compare="$candidate"; break; }
  done
  compare="${compare:-$(command -v gptbench-compare || true)}"
fi
[[ -n "$compare" && -x "$compare" ]] || die "gptbench-compare not found (build it, or pass --compare PATH)"

echo "premerge: $rounds interleaved rounds on $device, filter '$filter'" >&2
echo "premerge: base $base_bin" >&2
echo "premerge: new  $new_bin" >&2
rm -f "$out"/round-*.json
# Round 0 checks every case against its reference; later rounds only time (the same binaries,
# already checked: at real sizes the float64 references cost more than the timing). A binary
# older than --gptbench_verify is checked every round.
knows_verify() { "$1" --gptbench_help 2>/dev/null | grep -q -- --gptbench_verify; }
base_skip=() new_skip=()
knows_verify "$base_bin" && base_skip=(--gptbench_verify=false)
knows_verify "$new_bin" && new_skip=(--gptbench_verify=false)
run_one() {  # side round binary [flags for rounds after the first...]
  local side="$1" round="$2" bin="$3"
  local json="$out/round-$round-$side.json" log="$out/round-$round-$side.log"
  shift 3
  [[ "$round" == 000 ]] && set --
  "$bin" --benchmark_filter="$filter" --benchmark_repetitions=1 --benchmark_min_time="$min_time" "$@" \
       --benchmark_out="$json" --benchmark_out_format=json --gptbench_device="$device" >"$log" 2>&1 \
    || die "$side binary failed in round $round (see $log)"
  [[ -s "$json" ]] || die "$side binary wrote no JSON in round $round"
}
base_rounds=() new_rounds=()
for ((r = 0; r < rounds; r++)); do
  round="$(printf '%03d' "$r")"
  run_one base "$round" "$base_bin" "${base_skip[@]}"
  run_one new "$round" "$new_bin" "${new_skip[@]}"
  base_rounds+=("$out/round-$round-base.json")
  new_rounds+=("$out/round-$round-new.json")
  echo "premerge: round $((r + 1))/$rounds done" >&2
done

"$compare" merge "$out/base.json" "${base_rounds[@]}" >&2
"$compare" merge "$out/new.json" "${new_rounds[@]}" >&2
"$compare" benchmarks "$out/base.json" "$out/new.json" --format markdown "${compare_args[@]}" >"$out/report.md" || true
set +e
"$compare" benchmarks "$out/base.json" "$out/new.json" --html "$out/report.html" "${compare_args[@]}"
status=$?
set -e
echo "premerge: reports in $out/report.md and $out/report.html; exit $status" >&2
exit "$status"
