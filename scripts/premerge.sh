#!/usr/bin/env bash
# Pre-merge performance gate: times a benchmark subset for two versions of the suite and gates
# with gptbench-compare's exit code:
#   0 no regression, 1 regression (or a benchmark broken in NEW), 2 error.
# Two ways to time them, chosen automatically:
#   resident workers   both binaries know --gptbench_worker and gptbench-premerge is found: one
#                      worker per side stays up while gptbench-premerge alternates samples between
#                      them (docs/premerge.md); default threshold 2% on a GPU, 10% on the CPU.
#   process rounds     older binaries: the suite is run INTERLEAVED (A, B, A, B, ... one repetition
#                      per invocation, so drift of the machine hits both equally) and each side's
#                      rounds are merged into one run with N repetitions.
#
# usage:
#   scripts/premerge.sh [options] BASE NEW        BASE/NEW: build dirs or git revisions
#   scripts/premerge.sh [options] --base-bin PATH --new-bin PATH
# options:
#   --filter REGEX     benchmarks to run, POSIX extended (default: the pre-merge subset for the device)
#   --device D         cpu, cuda or auto (default auto: cuda when nvidia-smi sees a GPU)
#   --out DIR          where runs and reports go (default build-premerge/)
#   --threshold T      minimum relative change that counts, e.g. 2% (default with workers: 2% on a GPU, 10% on the CPU, unless
#                      --config has a '*' rule; gptbench-compare's own default with process rounds)
#   --alpha A          significance level (default 0.05)
#   --config FILE      threshold rules 'PREFIX = 10%' (for gptbench-premerge and gptbench-compare)
#   --base-arg ARG     extra flag for the BASE binary (repeatable), e.g. --base-arg=--gptbench_models=small
#   --new-arg ARG      extra flag for the NEW binary (repeatable), e.g. a planted regression:
#                      --new-arg=--gptbench_slowdown=^gemm/:3
#   --max-seconds S    workers: sampling wall time per benchmark at most (gptbench-premerge's default)
#   --processes K      workers: fresh worker processes per side, one after the other (default 3),
#                      so that differences between processes count as noise
#   --max-processes K  workers: up to K processes per side with the extra epochs run for the
#                      benchmarks their processes' spread left undecided (default 6; K <= --processes: none)
#   --seed N           workers: seed of the sampling order
#   --premerge PATH    gptbench-premerge binary (default: next to NEW's gptbench, then PATH)
#   --rounds N         process rounds only: interleaved rounds = repetitions per side (default 9)
#   --min-time SEC     process rounds only: --benchmark_min_time per invocation (0.2 cuda, 0.05 cpu)
#   --compare PATH     gptbench-compare binary (default: found in NEW's build, then PATH)
#   --cache DIR        where revisions are built (default $GPTBENCH_CACHE/premerge,
#                      GPTBENCH_CACHE defaulting to ~/.cache/gptbench)
#   -- ARGS...         passed to gptbench-compare (e.g. --strict-context --gate-counters)
# A git revision (of the repository of the current directory, else of this script) is resolved
# to its commit and built once: a worktree checkout DIR/<sha>/src built by its own
# ./gptbench.sh build into DIR/<sha>/src/build; DIR/<sha>/.built marks a finished build, which
# later checks reuse. HEAD means the commit, not uncommitted changes: to test those, pass a build
# directory. Reports: OUT/report.md, OUT/report.json, OUT/report.html; the text report to stdout.
set -euo pipefail

# Default subsets. GPU (63 benchmarks, every family; docs/premerge.md): GPT-2 small's forward
# GEMMs and the MLP-up gradients (torch, cublaslt), softmax on attention and vocabulary rows,
# the loss, the pre-LN step, causal attention at L=1024 (sdpa_flash, sdpa_cudnn, our portable
# and Hopper kernels; flash_sm90 is skipped off compute capability 9.0), three
# backward components, six optimizers and one training step. Rows with a launch:graph form
# (forward+backward through autograd, LibTorch's optimizers) are gated on it; their
# launch:eager rows are reported, informational (docs/premerge.md).
# CPU: the tiny model's counterparts that finish in seconds on 2 cores.
readonly kGpuFilter='^(gemm/(torch|cublaslt)/bf16/small\.([a-z_]+\.fwd|mlp_up\.(dgrad|wgrad))/|softmax/(torch|fused)/bf16/(fwd|bwd)/attn\.small/rows:98304/|softmax/(torch|fused)/bf16/fwd/vocab/|loss/(torch|fused)/bf16/|layernorm/(torch|fused)/bf16/|attention/(sdpa_flash|sdpa_cudnn|flash|flash_sm90)/bf16/causal/(fwd/B:8/H:12/L:1024/d:64|(fwd|fwd_bwd)/B:8/H:12/L:1024/d:128)|backward/(block|mlp|attention\.sdpa)/bf16/fwd_bwd/small/B:8/T:1024|optim/(adamw|adam8bit|adafactor|lion|torch_adamw|torch_fused_adamw)/fp32/model:small(/launch:(graph|eager))?$|model/train_step/small/bf16/B:8/T:1024/opt:adamw/attn:sdpa/head:fused/blocks:fused/accum:1/mode:graph)'
readonly kCpuFilter='^(gemm/torch/fp32/tiny\.(qkv|mlp_up)\.|softmax/(naive|torch)/fp32/fwd/attn\.tiny/|loss/torch/fp32/|layernorm/torch/fp32/|attention/(naive|sdpa_math)/fp32/causal/fwd/B:2/H:4/L:32/d:32|backward/(block|mlp)/fp32/fwd_bwd/tiny/|optim/[^/]+/fp32/model:tiny|model/checkpointing/tiny/fp32/B:2/T:64/opt:torch_fused/ckpt:none)'
# The worker path is meant to catch ~3% slowdowns of stable GPU benchmarks; CPU timings of a
# shared machine move by far more than that between processes (docs/premerge.md).
readonly kWorkerThresholdGpu='2%' kWorkerThresholdCpu='10%'

die() { echo "premerge: error: $*" >&2; exit 2; }
log() { echo "premerge: $*" >&2; }

# The comment block at the top of this file.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# Options that take a value, as '--opt VALUE' or '--opt=VALUE'.
readonly kValueOptions=' --rounds --filter --device --min-time --out --compare --base-bin --new-bin
  --threshold --alpha --config --base-arg --new-arg --max-seconds --processes --max-processes --seed --premerge --cache '
rounds=9 rounds_given='' filter='' device=auto min_time='' out='' compare='' base_bin='' new_bin=''
threshold='' alpha='' config='' max_seconds='' processes='' max_processes='' seed='' premerge='' cache=''
positional=() compare_args=() base_args=() new_args=()
while [[ $# -gt 0 ]]; do
  opt="$1" value=''
  shift
  if [[ "$opt" == --*=* ]]; then
    value="${opt#*=}" opt="${opt%%=*}"
    [[ "$kValueOptions" == *" $opt"[[:space:]]* ]] || die "unknown option $opt (or it takes no value)"
  elif [[ "$kValueOptions" == *" $opt"[[:space:]]* ]]; then
    [[ $# -gt 0 ]] || die "$opt needs a value"
    value="$1"
    shift
  fi
  case "$opt" in
    --rounds) rounds="$value" rounds_given=1 ;;
    --filter) filter="$value" ;;
    --device) device="$value" ;;
    --min-time) min_time="$value" ;;
    --out) out="$value" ;;
    --compare) compare="$value" ;;
    --base-bin) base_bin="$value" ;;
    --new-bin) new_bin="$value" ;;
    --threshold) threshold="$value" ;;
    --alpha) alpha="$value" ;;
    --config) config="$value" ;;
    --base-arg) base_args+=("$value") ;;
    --new-arg) new_args+=("$value") ;;
    --max-seconds) max_seconds="$value" ;;
    --processes) processes="$value" ;;
    --max-processes) max_processes="$value" ;;
    --seed) seed="$value" ;;
    --premerge) premerge="$value" ;;
    --cache) cache="$value" ;;
    --) compare_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $opt" ;;
    *) positional+=("$opt") ;;
  esac
done

# Everything the options say is checked before anything is built or run.
if [[ -n "$filter" ]]; then
  # Google Benchmark's dialect: POSIX extended, a leading '-' negates. grep exits 2 on a bad regex.
  filter_status=0
  grep -E -e "${filter#-}" </dev/null >/dev/null 2>&1 || filter_status=$?
  [[ "$filter_status" -le 1 ]] || die "--filter '$filter' is not a valid POSIX extended regular expression"
fi
[[ "$rounds" =~ ^[0-9]+$ && "$rounds" -ge 2 ]] || die "--rounds must be an integer >= 2 (9 or more recommended)"
[[ -z "$threshold" || "$threshold" =~ ^[0-9]*\.?[0-9]+%?$ ]] || die "--threshold must be like 2% or 0.02"
[[ -z "$alpha" || "$alpha" =~ ^(0?\.[0-9]*[1-9][0-9]*)$ ]] || die "--alpha must be in (0, 1), e.g. 0.05"
[[ -z "$config" || -f "$config" ]] || die "--config $config: no such file"
[[ -z "$max_seconds" || "$max_seconds" =~ ^[0-9]*\.?[0-9]+$ ]] || die "--max-seconds must be a number of seconds"
[[ -z "$processes" || "$processes" =~ ^[1-9][0-9]*$ ]] || die "--processes must be a positive integer"
[[ -z "$max_processes" || "$max_processes" =~ ^[1-9][0-9]*$ ]] || die "--max-processes must be a positive integer"
[[ -z "$seed" || "$seed" =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer"
[[ "$device" == cpu || "$device" == cuda || "$device" == auto ]] || die "--device must be cpu, cuda or auto"

root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null || (cd "$(dirname "$0")/.." && pwd))"
# Revisions name commits of the repository the check is started from (else this script's).
repo="$(git rev-parse --show-toplevel 2>/dev/null || echo "$root")"
out="${out:-$root/build-premerge}"
cache="${cache:-${GPTBENCH_CACHE:-$HOME/.cache/gptbench}/premerge}"
start_s=$SECONDS

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

# The targets a check needs that a checkout defines (older commits lack the coordinator).
needed_targets() {
  local src="$1" target found=()
  for target in gptbench gptbench-compare gptbench-premerge; do
    git -C "$src" grep -qE "add_executable\\($target([[:space:]]|\$)" -- '*CMakeLists.txt' 2>/dev/null &&
      found+=("$target")
  done
  echo "${found[*]}"
}

# Prints the suite binary of commit SHA, built once in $cache/SHA/. ROLE (base, new) names it in
# messages. The stamp .built is written only after a build that completed, so a failed or
# interrupted one is built again by the next check.
build_revision() {
  local role="$1" sha="$2" short="${2:0:7}"
  local dir="$cache/$sha" src="$cache/$sha/src" bin
  mkdir -p "$dir" || die "cannot create $dir"
  # Two checks of the same commit at once: the second waits and then finds the stamp.
  if command -v flock >/dev/null; then
    exec {lock_fd}>"$dir/.lock"
    flock "$lock_fd"
  fi
  if [[ -f "$dir/.built" ]] && bin="$(find_binary "$src/build" 2>/dev/null)"; then
    log "$role $short: cached build ($dir)"
    echo "$bin"
    return
  fi
  rm -f "$dir/.built"
  # A checkout left by an interrupted 'worktree add', or by a clone that is gone, is made again.
  if [[ ! -e "$src/.git" || "$(git -C "$src" rev-parse HEAD 2>/dev/null)" != "$sha" ]]; then
    rm -rf "$src"
    git -C "$repo" worktree prune
    git -C "$repo" worktree add --force --detach "$src" "$sha" >&2 || die "cannot check out $short into $src"
  fi
  log "$role $short: building in $src/build"
  # The checkout's own build script, its build dir inside it (as in any clone) and ccache paths
  # relative to it, so checkouts and clones share cache hits. GPTBENCH_TARGETS narrows the build
  # where the checkout's gptbench.sh knows it (others ignore it and build everything).
  (cd "$src" && GPTBENCH_BUILD_DIR="$src/build" CCACHE_BASEDIR="$src" \
     GPTBENCH_TARGETS="$(needed_targets "$src")" ./gptbench.sh build) >&2 \
    || die "build of $role $short failed (no stamp written: the next check builds it again)"
  bin="$(find_binary "$src/build")"
  printf '%s\nbuilt %s\n' "$sha" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$dir/.built.tmp"
  mv "$dir/.built.tmp" "$dir/.built"
  echo "$bin"
}

# BASE and NEW: a build directory as is; a git revision built (or taken from the cache).
if [[ -z "$base_bin" || -z "$new_bin" ]]; then
  [[ ${#positional[@]} -eq 2 ]] || die "give BASE and NEW (build dirs or git revisions), or --base-bin and --new-bin"
  shas=()
  for spec in "${positional[@]}"; do
    sha=''
    if [[ ! -d "$spec" ]]; then
      sha="$(git -C "$repo" rev-parse --verify --quiet "$spec^{commit}")" \
        || die "'$spec' is neither a directory nor a git revision of $repo"
    fi
    shas+=("$sha")
  done
  head_sha="$(git -C "$repo" rev-parse --verify --quiet HEAD 2>/dev/null || true)"
  if [[ -n "$head_sha" && " ${shas[*]} " == *" $head_sha "* ]] &&
     [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
    log "note: uncommitted changes in $repo are not part of ${head_sha:0:7}; to time them, pass a build directory"
  fi
  build_start_s=$SECONDS
  for side in 0 1; do
    role=base
    [[ $side == 1 ]] && role=new
    if [[ -z "${shas[side]}" ]]; then
      bin="$(find_binary "${positional[side]}")"
    elif [[ $side == 1 && "${shas[1]}" == "${shas[0]}" ]]; then
      log "new ${shas[1]:0:7}: same commit as base"
      bin="$base_bin"
    else
      bin="$(build_revision "$role" "${shas[side]}")"
    fi
    if [[ $side == 0 ]]; then base_bin="$bin"; else new_bin="$bin"; fi
  done
  log "builds took $((SECONDS - build_start_s)) s"
fi
[[ -x "$base_bin" ]] || die "base binary $base_bin is not executable"
[[ -x "$new_bin" ]] || die "new binary $new_bin is not executable"

if [[ "$device" == auto ]]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then device=cuda; else device=cpu; fi
fi
if [[ -z "$filter" ]]; then
  if [[ "$device" == cuda ]]; then filter="$kGpuFilter"; else filter="$kCpuFilter"; fi
fi

if [[ -z "$compare" ]]; then
  for candidate in "$(dirname "$new_bin")/compare/gptbench-compare" "$(dirname "$new_bin")/../compare/gptbench-compare" \
                   "$root/build/compare/gptbench-compare"; do
    [[ -x "$candidate" ]] && { compare="$candidate"; break; }
  done
  compare="${compare:-$(command -v gptbench-compare || true)}"
fi
[[ -n "$compare" && -x "$compare" ]] || die "gptbench-compare not found (build it, or pass --compare PATH)"

if [[ -n "$premerge" ]]; then
  [[ -x "$premerge" && -f "$premerge" ]] || die "--premerge $premerge is not an executable"
elif [[ -x "$(dirname "$new_bin")/gptbench-premerge" ]]; then
  premerge="$(dirname "$new_bin")/gptbench-premerge"
else
  premerge="$(command -v gptbench-premerge || true)"
fi

# The help text (stdout or stderr) mentions a flag: captured whole, since with pipefail a grep -q
# that stops reading early could fail the pipeline on the binary's SIGPIPE.
knows_flag() {
  local help
  help="$("$1" --gptbench_help 2>&1 || true)"
  [[ "$help" == *"$2"* ]]
}

mkdir -p "$out"
rm -f "$out/base.json" "$out/new.json" "$out"/report.{md,json,html}
log "base $base_bin"
log "new  $new_bin"

# Options of the verdict, the same for gptbench-premerge (when it decides to stop) and the gate.
gate_args=()
if [[ -n "$premerge" ]] && knows_flag "$base_bin" --gptbench_worker && knows_flag "$new_bin" --gptbench_worker; then
  mode=workers
  # The 2% default is the '*' rule; a '*' rule in --config takes its place.
  if [[ -z "$threshold" ]] && ! { [[ -n "$config" ]] && grep -Eq '^[[:space:]]*\*[[:space:]]*=' "$config"; }; then
    if [[ "$device" == cuda ]]; then threshold="$kWorkerThresholdGpu"; else threshold="$kWorkerThresholdCpu"; fi
  fi
  alpha="${alpha:-0.05}"
else
  mode=rounds
fi
[[ -n "$threshold" ]] && gate_args+=("--threshold=$threshold")
[[ -n "$alpha" ]] && gate_args+=("--alpha=$alpha")
[[ -n "$config" ]] && gate_args+=("--config=$config")

check_start_s=$SECONDS
if [[ "$mode" == workers ]]; then
  # One resident worker per side; gptbench-premerge writes OUT/base.json and OUT/new.json.
  log "resident workers on $device ($premerge), filter '$filter'"
  [[ -n "$rounds_given" ]] && log "note: --rounds applies to process rounds only; workers sample until decided"
  args=(--base-bin "$base_bin" --new-bin "$new_bin" "--filter=$filter" --out "$out"
        "--worker-arg=--gptbench_device=$device" "${gate_args[@]}")
  # Each worker records the kernels of every case, so the report names kernels that differ
  # between the sides or between one side's processes (docs/premerge.md).
  if [[ "$device" == cuda ]] && knows_flag "$base_bin" --gptbench_kernels && knows_flag "$new_bin" --gptbench_kernels; then
    args+=("--worker-arg=--gptbench_kernels=true")
  fi
  for arg in "${base_args[@]}"; do args+=("--base-arg=$arg"); done
  for arg in "${new_args[@]}"; do args+=("--new-arg=$arg"); done
  [[ -n "$max_seconds" ]] && args+=("--max-seconds=$max_seconds")
  [[ -n "$processes" ]] && args+=("--processes=$processes")
  [[ -n "$max_processes" ]] && args+=("--max-processes=$max_processes")
  [[ -n "$seed" ]] && args+=("--seed=$seed")
  premerge_status=0
  # Two CPU workers share the cores: an idle worker's OpenMP threads must sleep, not spin
  # (GNU OpenMP spins after each parallel region by default), or the one being timed slows down.
  OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" "$premerge" "${args[@]}" >&2 || premerge_status=$?
  [[ "$premerge_status" -eq 0 ]] || die "gptbench-premerge failed (exit $premerge_status)"
  [[ -s "$out/base.json" && -s "$out/new.json" ]] || die "gptbench-premerge wrote no $out/base.json and $out/new.json"
else
  [[ -n "$max_seconds$processes$seed" ]] && log "note: --max-seconds, --processes and --seed apply to resident workers only"
  if [[ -z "$min_time" ]]; then
    if [[ "$device" == cuda ]]; then min_time=0.2; else min_time=0.05; fi
  fi
  log "$rounds interleaved rounds on $device, filter '$filter'"
  rm -f "$out"/round-*.json
  # Round 0 checks every case against its reference; later rounds only time (the same binaries,
  # already checked: at real sizes the float64 references cost more than the timing). A binary
  # older than --gptbench_verify is checked every round.
  base_skip=() new_skip=()
  knows_flag "$base_bin" --gptbench_verify && base_skip=(--gptbench_verify=false)
  knows_flag "$new_bin" --gptbench_verify && new_skip=(--gptbench_verify=false)
  run_one() {  # side round binary [flags for rounds after the first...] -- [flags for every round...]
    local side="$1" round="$2" bin="$3" later=() always=()
    local json="$out/round-$round-$side.json" log="$out/round-$round-$side.log"
    shift 3
    while [[ $# -gt 0 && "$1" != -- ]]; do later+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    always=("$@")
    [[ "$round" == 000 ]] && later=()
    "$bin" --benchmark_filter="$filter" --benchmark_repetitions=1 --benchmark_min_time="$min_time" \
         "${later[@]}" "${always[@]}" \
         --benchmark_out="$json" --benchmark_out_format=json --gptbench_device="$device" >"$log" 2>&1 \
      || die "$side binary failed in round $round (see $log)"
    [[ -s "$json" ]] || die "$side binary wrote no JSON in round $round"
  }
  base_rounds=() new_rounds=()
  for ((r = 0; r < rounds; r++)); do
    round="$(printf '%03d' "$r")"
    run_one base "$round" "$base_bin" "${base_skip[@]}" -- "${base_args[@]}"
    run_one new "$round" "$new_bin" "${new_skip[@]}" -- "${new_args[@]}"
    base_rounds+=("$out/round-$round-base.json")
    new_rounds+=("$out/round-$round-new.json")
    log "round $((r + 1))/$rounds done"
  done
  "$compare" merge "$out/base.json" "${base_rounds[@]}" >&2
  "$compare" merge "$out/new.json" "${new_rounds[@]}" >&2
fi

# The gate: report files first (their exit codes are the same verdict), then the terminal
# report, as the compare arguments after -- ask, whose exit code is the script's. The files
# drop a --format or --html of those arguments (gptbench-compare takes each option once).
file_args=() skip_next=''
for arg in "${compare_args[@]}"; do
  if [[ -n "$skip_next" ]]; then skip_next=''; continue; fi
  case "$arg" in
    --format|--html) skip_next=1 ;;
    --format=*|--html=*) ;;
    *) file_args+=("$arg") ;;
  esac
done
compare_one() { "$compare" benchmarks "$out/base.json" "$out/new.json" "${gate_args[@]}" "$@"; }
compare_one "${file_args[@]}" --format markdown >"$out/report.md" || true
compare_one "${file_args[@]}" --format json >"$out/report.json" || true
compare_one "${file_args[@]}" --html "$out/report.html" >/dev/null || true
status=0
compare_one "${compare_args[@]}" || status=$?
log "reports: $out/report.md $out/report.json $out/report.html"
log "check took $((SECONDS - check_start_s)) s ($mode; $((SECONDS - start_s)) s in all); exit $status"
exit "$status"
