#!/usr/bin/env bash
# Robustness checks CI runs after the tests (docs/robustness.md says what they cover):
#  1. AddressSanitizer + UndefinedBehaviorSanitizer (clang) in build-asan/: gptbench-run and its
#     tests (fault isolation, SIGINT, atomic writes, against a fake gptbench), the loader's tests
#     (runjson/), gptbench-compare and its tests, and the suite's flag parsing and cost formulas
#     (tests/fixtures/options_test, cost_test) linked with LibTorch's libc10; then
#     scripts/asan-torch.sh: the whole CPU test binary (gptbench_tests) and a short CPU run of the
#     suite, in the CPU-only configuration (GPTBENCH_CUDA=OFF). Every test must pass with no sanitizer report.
#  2. Fuzzing (libFuzzer + ASan + UBSan), FUZZ_SECONDS each: compare's JSON loader
#     (compare/fuzz.sh), the runner's reader of child JSON, its command line, benchmark lists,
#     and the values of gptbench's --gptbench_* flags (parse_options).
# usage: bash scripts/ci-checks.sh [FUZZ_SECONDS (default 60)]
# A fuzz crash is left in build-asan-fuzz/crash-* (compare's in build-fuzz/); the script fails.
set -euo pipefail
fuzz_seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${GPTBENCH_JOBS:-$(nproc)}"
clangxx="${CLANGXX:-$(command -v clang++ || command -v clang++-14)}"
start=$(date +%s)
log() { echo "ci-checks [$(( $(date +%s) - start ))s]: $*" >&2; }

# The torch package directory (headers, libc10.so), as gptbench.sh finds LibTorch.
torch_root=""
for py in python3 "${GPTBENCH_CACHE:-$HOME/.cache/gptbench}/venv/bin/python"; do
  torch_root=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null) && break
  torch_root=""
done
[ -n "$torch_root" ] || log "warning: no PyTorch found: the flag-parsing tests and fuzzer are skipped"

# UBSan: every finding is an error. ASan: LibTorch's libc10 is not instrumented; its leaks
# (process-lifetime registries allocated at load time) are not ours, and LeakSanitizer reports
# them at exit, so leak checking is off for the binaries that load it (flags_tests, the options
# fuzzer); it stays on for the runner's and compare's binaries.
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
asan_strict="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
asan_torch="detect_leaks=0:strict_string_checks=1:check_initialization_order=1"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
torch_arg=()
[ -n "$torch_root" ] && torch_arg=(-DGPTBENCH_TORCH_ROOT="$torch_root")

# --- 1. sanitizers ------------------------------------------------------------------------------
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
log "configuring build-asan (clang: $clangxx)"
cmake -S "$root/runner/checks" -B "$root/build-asan" "${generator[@]}" -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_CXX_FLAGS="$san" "${torch_arg[@]}" >/dev/null
targets=(runner_tests premerge_tests runjson_tests compare_tests gptbench-run gptbench-premerge gptbench-compare fake_gptbench fake_worker)
[ -n "$torch_root" ] && targets+=(flags_tests)
log "building ${targets[*]}"
cmake --build "$root/build-asan" -j "$jobs" --target "${targets[@]}"
log "running the tests under ASan + UBSan"
(cd "$root/build-asan" && ASAN_OPTIONS="$asan_strict" ./runner/runner_tests --gtest_brief=1)
(cd "$root/build-asan" && ASAN_OPTIONS="$asan_strict" ./runner/premerge_tests --gtest_brief=1)
(cd "$root/build-asan/runner/runjson" && ASAN_OPTIONS="$asan_strict" ./runjson_tests --gtest_brief=1)
(cd "$root/build-asan/runner/compare" && ASAN_OPTIONS="$asan_strict" ./compare_tests --gtest_brief=1)
if [ -n "$torch_root" ]; then
  (cd "$root/build-asan" && ASAN_OPTIONS="$asan_torch" ./flags_tests --gtest_brief=1)
fi
log "sanitizer tests passed"
if [ -n "$torch_root" ]; then
  log "LibTorch-linked CPU tests and CPU suite under ASan + UBSan (scripts/asan-torch.sh)"
  bash "$root/scripts/asan-torch.sh" "$torch_root"
fi

# --- 2. fuzzing ---------------------------------------------------------------------------------
log "compare's loader fuzzer (compare/fuzz.sh $fuzz_seconds)"
bash "$root/compare/fuzz.sh" "$fuzz_seconds" 2>&1 | tail -n 12

fuzz="$root/build-asan-fuzz"
log "configuring $fuzz"
cmake -S "$root/runner/checks" -B "$fuzz" "${generator[@]}" -DCMAKE_BUILD_TYPE= \
  -DCMAKE_CXX_COMPILER="$clangxx" -DGPTBENCH_CHECKS_FUZZ=ON "${torch_arg[@]}" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1" >/dev/null
fuzzers=(runner_fuzz_gb_json runner_fuzz_cli runner_fuzz_names)
[ -n "$torch_root" ] && fuzzers+=(gptbench_fuzz_options)
log "building ${fuzzers[*]}"
cmake --build "$fuzz" -j "$jobs" --target "${fuzzers[@]}"
for f in "${fuzzers[@]}"; do
  seeds="$root/tests/runner/fuzz/${f#*_fuzz_}"   # committed seeds and fixed crash inputs
  corpus="$fuzz/corpus/$f"
  mkdir -p "$corpus"
  opts="$asan_strict"
  [ "$f" = gptbench_fuzz_options ] && opts="$asan_torch"
  log "fuzzing $f for ${fuzz_seconds}s"
  # Committed seeds (and fixed crash inputs, kept as regression inputs) must pass first; then
  # new inputs for a bounded time, into a corpus that persists in the build directory.
  rm -f "$fuzz/$f"-*-*   # artifacts of an earlier run
  dirs=("$corpus")
  if [ -d "$seeds" ]; then
    ASAN_OPTIONS="$opts" "$fuzz/$f" -runs=0 "$seeds" 2>&1 | tail -n 1
    dirs+=("$seeds")
  fi
  (cd "$fuzz" && ASAN_OPTIONS="$opts" "./$f" -max_total_time="$fuzz_seconds" -max_len=8192 \
     -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$fuzz/$f-" \
     "${dirs[@]}" 2>&1 \
     | grep -E "^(stat::number_of_executed_units|stat::new_units_added|Done|==[0-9]+==ERROR|SUMMARY)" || true)
  failing=$(compgen -G "$fuzz/$f-*-*" || true)   # crash-, leak-, timeout-, oom-<sha>
  if [ -n "$failing" ]; then
    log "FAILED: $f found failing inputs (fix, then keep them in $seeds): $failing"
    exit 1
  fi
done
log "done in $(( $(date +%s) - start ))s"
