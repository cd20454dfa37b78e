#!/usr/bin/env bash
# gptbench: set up, build, benchmark and test with one command each.
#   ./gptbench.sh bench [flags]   set up + build, run the default suite (or a filter of it),
#                                 JSON to results/ (flags go to Google Benchmark / gptbench)
#   ./gptbench.sh test            set up + build, run every test (CTest)
#   ./gptbench.sh build           set up + build only
# Set-up is idempotent and quick when done: Debian packages through apt-get, LibTorch from
# Torch_DIR / CMAKE_PREFIX_PATH, else from an importable PyTorch, else a pinned PyTorch
# pip-installed into a virtualenv under $GPTBENCH_CACHE (default ~/.cache/gptbench).
set -euo pipefail

# The PyTorch release the virtualenv gets (its torch.version.cuda must share nvcc's major
# version so our .cu files and LibTorch agree: 2.14.1 is a CUDA 13.0 build).
TORCH_PIN=2.14.1
TORCHAO_PIN=0.18.0  # the FP8 training-step peer (peers/families/train_step_fp8.py TORCHAO_PIN)
APT_PACKAGES=(cmake ninja-build g++ ccache libbenchmark-dev libgtest-dev libgmock-dev
              nlohmann-json3-dev libcli11-dev libsimdjson-dev libsqlite3-dev libgloo-dev)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${GPTBENCH_CACHE:-$HOME/.cache/gptbench}
BUILD=${GPTBENCH_BUILD_DIR:-$ROOT/build}
JOBS=${GPTBENCH_JOBS:-$(nproc)}

log() { echo "gptbench: $*" >&2; }
# ccache (when installed) keys on paths relative to the checkout, so clones share the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

install_apt_packages() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo=sudo
  log "installing ${missing[*]}"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"; }; then
    # GPU hosts without network bring these as a prefix on CMAKE_PREFIX_PATH (README).
    log "warning: could not install ${missing[*]}; continuing with what CMAKE_PREFIX_PATH provides"
  fi
}

# Prints the Python whose PyTorch gives LibTorch (and runs the peers, docs/peers.md): python3
# when it imports torch, else the pinned virtualenv's (installed on first use).
torch_python() {
  if python3 -c 'import torch' >/dev/null 2>&1; then command -v python3; return; fi
  local venv="$CACHE/venv" have=""
  [ -x "$venv/bin/python" ] && have=$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
  if [ "$have" != "$TORCH_PIN" ]; then
    log "installing PyTorch $TORCH_PIN into $venv (one time, a few GB)"
    mkdir -p "$CACHE"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$TORCH_PIN" >&2
  fi
  [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torchao"))' 2>/dev/null)" = "$TORCHAO_PIN" ] ||
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "torchao==$TORCHAO_PIN" >&2 ||
    log "warning: could not install torchao $TORCHAO_PIN; the FP8 training-step peer rows are skipped"
  echo "$venv/bin/python"
}

# Prints the CMake prefix of LibTorch.
torch_prefix() {
  if [ -n "${Torch_DIR:-}" ]; then echo "$Torch_DIR"; return; fi
  "$(torch_python)" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null
}

build() {
  install_apt_packages
  local prefix python=""
  prefix=$(torch_prefix)
  [ -n "${Torch_DIR:-}" ] || python=$(torch_python)
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$BUILD/.torch_prefix" 2>/dev/null)" != "$prefix" ]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}" \
      ${python:+-DGPTBENCH_PYTHON="$python"} "${launcher[@]}" ${GPTBENCH_CMAKE_ARGS:-} >&2
    echo "$prefix" > "$BUILD/.torch_prefix"
  fi
  # GPTBENCH_TARGETS="gptbench gptbench-compare ...": build only those (scripts/premerge.sh).
  local targets=()
  [ -z "${GPTBENCH_TARGETS:-}" ] || read -r -a targets <<<"--target $GPTBENCH_TARGETS"
  cmake --build "$BUILD" -j "$JOBS" "${targets[@]}" >&2
}

cmd=${1:-}
shift || true
case "$cmd" in
  build) build ;;
  test)
    build
    cd "$BUILD" && ctest --output-on-failure -j "$JOBS" "$@"
    ;;
  bench)
    build
    mkdir -p "$ROOT/results"
    out="$ROOT/results/gptbench-$(date -u +%Y%m%dT%H%M%SZ).json"
    log "results: $out"
    "$BUILD/gptbench" --benchmark_out="$out" --benchmark_out_format=json "$@"
    ;;
  *)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || [ "$cmd" = help ] || exit 2
    ;;
esac
