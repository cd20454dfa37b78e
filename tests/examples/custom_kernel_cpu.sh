#!/bin/sh
# The installed package end to end (examples/custom_kernel/, docs/extending.md): installs the
# suite from BUILD into a fresh prefix under WORK, configures and builds the example against it
# with find_package(gptbench), runs the example's softmax rows on the CPU beside the suite's,
# and checks the run (check_custom_kernel_run.py): its `mine` rows ran and passed the family's
# check, its `mine_wrong` rows are wrong results; then the same rows through gptbench-run
# (a process per family, merged) and gptbench-compare pairing `torch` with `mine`.
#   custom_kernel_cpu.sh SOURCE BUILD WORK PREFIX_PATH [cmake arguments for the example...]
# PREFIX_PATH: the suite's CMAKE_PREFIX_PATH (LibTorch's prefix); the arguments: the suite's
# generator, compilers and launchers. CMAKE and PYTHON (environment): the tools to use.
set -eu
src=$1 build=$2 work=$3 prefix_path=$4
shift 4
cmake=${CMAKE:-cmake}
python=${PYTHON:-python3}

rm -rf "$work"
mkdir -p "$work"
step() { echo "== $*"; }

step "cmake --install $build --prefix $work/prefix"
"$cmake" --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -f "$work/prefix/lib/cmake/gptbench/gptbenchConfig.cmake"
test -f "$work/prefix/lib/cmake/gptbench/gptbenchConfigVersion.cmake"
test -f "$work/prefix/include/gptbench/fixtures/extension.h"

step "configure and build examples/custom_kernel against it"
"$cmake" -S "$src/examples/custom_kernel" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$work/prefix;$prefix_path" "$@" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/build" -j "${GPTBENCH_JOBS:-2}"

bench=$work/build/custom_bench
filter='^softmax/(torch|mine|mine_wrong)/fp32/fwd/'
step "$bench on the CPU: $filter"
"$bench" --gptbench_device=cpu --benchmark_min_time=0.001 "--benchmark_filter=$filter" \
  "--benchmark_out=$work/run.json" --benchmark_out_format=json
"$python" "$src/tests/examples/check_custom_kernel_run.py" "$work/run.json"

step "gptbench-run --binary=$bench, then gptbench-compare filters torch mine"
"$work/prefix/bin/gptbench-run" "--binary=$bench" -o "$work/merged.json" --quiet-children \
  --gptbench_device=cpu --benchmark_min_time=0.001 '--benchmark_filter=^softmax/(torch|mine)/fp32/fwd/'
"$python" "$src/tests/examples/check_custom_kernel_run.py" --no-wrong "$work/merged.json"
rc=0
"$work/prefix/bin/gptbench-compare" filters "$work/merged.json" torch mine >"$work/compare.txt" || rc=$?
cat "$work/compare.txt"
[ "$rc" -le 1 ] || { echo "gptbench-compare exited $rc"; exit 1; }
grep -q 'softmax/{torch,mine}/fp32/fwd/' "$work/compare.txt"  # the pairs
echo "custom kernel example: OK"
