# Sourced by the GPU-host scripts: the bundled Debian packages (.gpudeps: the -dev packages'
# include, lib and CMake files, made by scripts/bundle-deps.sh) on the CMake and loader paths, the build in build-gpu/, and
# $OUT (the output folder; results/gpu when unset) created.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/results/gpu}
mkdir -p "$OUT"
export CMAKE_PREFIX_PATH="$ROOT/.gpudeps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$ROOT/.gpudeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPTBENCH_BUILD_DIR=${GPTBENCH_BUILD_DIR:-$ROOT/build-gpu}
# torchao for the FP8 training-step peer (peers/families/train_step_fp8.py): the wheel that
# scripts/bundle-deps.sh put in .gpudeps/wheels, installed once into .gpudeps/python, which goes on
# PYTHONPATH, when the host's Python (GPTBENCH_PYTHON, else python3) cannot import torchao itself.
_gpu_env_py=${GPTBENCH_PYTHON:-python3}
for _gpu_env_whl in "$ROOT"/.gpudeps/wheels/torchao-*.whl; do break; done
if [ -f "$_gpu_env_whl" ] && ! "$_gpu_env_py" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("torchao") is None)' 2>/dev/null; then
  _gpu_env_site=$ROOT/.gpudeps/python
  _gpu_env_dist=$(basename "$_gpu_env_whl" | cut -d- -f1-2).dist-info
  if [ -d "$_gpu_env_site/$_gpu_env_dist" ] ||
     "$_gpu_env_py" -m pip install -q --disable-pip-version-check --no-deps --no-index --no-compile \
       --target "$_gpu_env_site" "$_gpu_env_whl" >&2; then
    export PYTHONPATH="$_gpu_env_site${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "gpu-env: could not install $_gpu_env_whl; the FP8 training-step peer rows will be skipped" >&2
  fi
fi
unset _gpu_env_py _gpu_env_whl _gpu_env_site _gpu_env_dist
