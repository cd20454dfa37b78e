#!/usr/bin/env bash
# The LibTorch-linked CPU tests (tests/{ops,model,fixtures,bench}: references, GPT-2, runner,
# flags, families) under AddressSanitizer + UndefinedBehaviorSanitizer, in the CPU-only
# configuration (-DGPTBENCH_CUDA=OFF, which this also keeps building), plus a short run of the
# suite's CPU families through the real binary. Called by scripts/ci-checks.sh.
# usage: bash scripts/asan-torch.sh TORCH_PACKAGE_DIR
set -euo pipefail
torch_root="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-asan-torch"
jobs="${GPTBENCH_JOBS:-$(nproc)}"
clangxx="${CLANGXX:-$(command -v clang++ || command -v clang++-14)}"
clangc="${clangxx/clang++/clang}"
start=$(date +%s)
log() { echo "asan-torch [$(( $(date +%s) - start ))s]: $*" >&2; }

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
log "configuring $build (clang, CPU-only)"
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE= -DGPTBENCH_CUDA=OFF \
  -DCMAKE_C_COMPILER="$clangc" -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_PREFIX_PATH="$torch_root/share/cmake" "${launcher[@]}" >/dev/null
log "building gptbench_tests and gptbench"
cmake --build "$build" -j "$jobs" --target gptbench_tests gptbench

# LibTorch is not instrumented: its load-time registries look like leaks, and std::vector
# annotations differ between instrumented and uninstrumented code (container-overflow false
# positives), so both checks are off; every other ASan and UBSan finding fails the run.
export ASAN_OPTIONS="detect_leaks=0:detect_container_overflow=0:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
log "running gptbench_tests"
(cd "$build" && ./gptbench_tests --gtest_brief=1)
log "running the CPU suite (tiny sizes) through gptbench"
(cd "$build" && ./gptbench --benchmark_min_time=0.001 \
   --benchmark_filter='^(gemm/torch|softmax|attention/(naive|sdpa_math)|backward/(linear|layernorm|gelu)|optim)/' \
   --benchmark_out=asan_suite.json --benchmark_out_format=json > asan_suite.txt 2>&1) \
  || { tail -30 "$build/asan_suite.txt"; exit 1; }
log "passed in $(( $(date +%s) - start ))s"
