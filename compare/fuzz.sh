#!/usr/bin/env bash
# Builds the loader fuzz target with clang (libFuzzer + AddressSanitizer) in
# build-fuzz/ and runs it for a bounded time over tests/compare/corpus/.
#   usage: bash compare/fuzz.sh SECONDS [extra libFuzzer flags]
# New interesting inputs go to build-fuzz/corpus/ (the committed seed corpus
# stays unchanged); a crash is written to build-fuzz/crash-* and the script
# exits non-zero. Keep a fixed crash input as tests/compare/data/fuzz/*.json:
# fuzz_regression_test.cpp loads every file there.
set -euo pipefail
seconds="${1:?usage: bash compare/fuzz.sh SECONDS}"
shift
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
clangxx="${CLANGXX:-$(command -v clang++ || command -v clang++-14)}"
mkdir -p "$build/top" "$build/corpus"
cat > "$build/top/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(gptbench_compare_fuzz CXX)
enable_testing()
add_subdirectory("$root/compare" compare)
CMAKE
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$build/top" -B "$build/cmake" "${generator[@]}" -DCMAKE_CXX_COMPILER="$clangxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPTBENCH_FUZZ=ON >/dev/null
cmake --build "$build/cmake" --target compare_fuzz_load
cd "$build"
"$build/cmake/compare/compare_fuzz_load" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/" "$@" \
  "$build/corpus" "$root/tests/compare/corpus"
