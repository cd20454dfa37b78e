#!/usr/bin/env bash
# Bundles the Debian packages gptbench builds against into a relocatable prefix, for GPU hosts
# that have CUDA, CMake, Ninja and PyTorch but no network and none of these packages:
#   scripts/bundle-deps.sh [DEST] [PACKAGE...]     (on a Debian machine that has them installed)
#   scripts/bundle-deps.sh --wheels [DEST]         (the Python wheels alone, DEST's packages kept)
# DEST defaults to .gpudeps in the checkout; scripts/gpu-env.sh puts DEST/usr on CMAKE_PREFIX_PATH
# and DEST/usr/lib/<triplet> on LD_LIBRARY_PATH. Copy the checkout with DEST to the GPU host.
# The default packages are the -dev packages of gptbench.sh with their runtime libraries: the
# host may have its own libsqlite3 or libbenchmark, but the bundled library is the one that
# matches the bundled headers. Naming packages replaces the default list. Only headers,
# libraries, CMake and pkg-config files are copied (symlinks kept); DEST/MANIFEST lists the
# package versions. Then the pinned Python wheels the peers use that the host may lack go to
# DEST/wheels when PyPI is reachable (skipped with a note when not): torchao for the FP8
# training-step peer (peers/families/train_step_fp8.py), installed on the host by gpu-env.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TORCHAO_PIN=0.18.0  # peers/families/train_step_fp8.py TORCHAO_PIN
WHEELS_ONLY=0
if [ "${1:-}" = --wheels ]; then WHEELS_ONLY=1; shift; fi
DEST=${1:-$ROOT/.gpudeps}
shift || true

# The torchao wheel (no dependencies; cp310-abi3: any CPython >= 3.10) into DEST/wheels.
bundle_wheels() {
  local dir="$DEST/wheels" spec="torchao==$TORCHAO_PIN" py="" candidate
  mkdir -p "$dir"
  if compgen -G "$dir/torchao-$TORCHAO_PIN-*.whl" >/dev/null; then
    echo "bundle-deps: $spec already in $dir"; return 0
  fi
  for candidate in "${GPTBENCH_PYTHON:-}" python3 "${GPTBENCH_CACHE:-$HOME/.cache/gptbench}/venv/bin/python"; do
    if [ -n "$candidate" ] && "$candidate" -m pip --version >/dev/null 2>&1; then py=$candidate; break; fi
  done
  if [ -z "$py" ]; then echo "bundle-deps: no Python with pip; $spec not bundled" >&2; return 0; fi
  if "$py" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
       --implementation cp --python-version 3.10 --platform manylinux_2_28_x86_64 \
       --timeout 20 --retries 1 -d "$dir" "$spec" >&2; then
    echo "bundle-deps: $(cd "$dir" && ls torchao-"$TORCHAO_PIN"-*.whl) in $dir"
  else
    echo "bundle-deps: could not download $spec (PyPI not reachable?); skipped: without torchao" \
         "on the GPU host the FP8 training-step peer rows are skipped" >&2
  fi
}
if [ "$WHEELS_ONLY" = 1 ]; then bundle_wheels; exit 0; fi
PACKAGES=("$@")
if [ ${#PACKAGES[@]} -eq 0 ]; then
  PACKAGES=(libbenchmark-dev libbenchmark1debian libgtest-dev libgmock-dev nlohmann-json3-dev
            libcli11-dev libsimdjson-dev libsimdjson14 libsqlite3-dev libsqlite3-0)
fi

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bundle-deps: not installed here: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
  exit 2
fi

list=$(mktemp)
trap 'rm -f "$list"' EXIT
# The files of the packages under the directories a build and its loader look in, without the
# leading slash (tar reads them relative to /).
dpkg-query -L "${PACKAGES[@]}" |
  grep -E '^/usr/(include|lib|share/cmake|share/pkgconfig)/' |
  while IFS= read -r path; do
    if [ -f "$path" ] || [ -L "$path" ]; then echo "${path#/}"; fi
  done | sort -u > "$list"
[ -s "$list" ] || { echo "bundle-deps: the packages have no headers or libraries" >&2; exit 2; }

mkdir -p "$DEST"
find "$DEST" -mindepth 1 -maxdepth 1 ! -name wheels -exec rm -rf {} +  # the wheels stay
tar -C / --no-recursion -cf - -T "$list" | tar -C "$DEST" -xf -
dpkg-query -W -f='${Package} ${Version} ${Architecture}\n' "${PACKAGES[@]}" > "$DEST/MANIFEST"

triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
echo "bundle-deps: $(wc -l < "$list") files of ${#PACKAGES[@]} packages, $(du -sh "$DEST" | cut -f1), in $DEST"
echo "  on the GPU host: scripts/gpu-run.sh (sources scripts/gpu-env.sh), or by hand:"
echo "  cmake ... -DCMAKE_PREFIX_PATH=\"<torch cmake prefix>;$DEST/usr\""
echo "  export LD_LIBRARY_PATH=$DEST/usr/lib/$triplet:\$LD_LIBRARY_PATH"
bundle_wheels
