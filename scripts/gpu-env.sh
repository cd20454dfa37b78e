# Sourced by the GPU-host scripts: the bundled Debian packages (.gpudeps: the -dev packages'
# include, lib and CMake files, made by scripts/bundle-deps.sh) on the CMake and loader paths, the build in build-gpu/, and
# $OUT (the output folder; results/gpu when unset) created.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/results/gpu}
mkdir -p "$OUT"
export CMAKE_PREFIX_PATH="$ROOT/.gpudeps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$ROOT/.gpudeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPTBENCH_BUILD_DIR=${GPTBENCH_BUILD_DIR:-$ROOT/build-gpu}
