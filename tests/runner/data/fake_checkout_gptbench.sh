#!/usr/bin/env bash
# Stand-in for a checkout's ./gptbench.sh in the premerge.sh tests: 'build' appends
# "SHA BASEDIR_OK|BASEDIR_WRONG TARGETS" to FAKE_BUILD_LOG (outside the repository) and installs
# the checkout's fake_suite.sh as $GPTBENCH_BUILD_DIR/gptbench.
#   FAKE_BUILD_FAIL=1        the build fails (exit 1) before installing anything
#   FAKE_BUILD_INTERRUPT=1   the build sends SIGTERM to its whole process group (an interrupted check)
set -euo pipefail
[[ "${1:-}" == build ]] || exit 2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
basedir=BASEDIR_WRONG
[[ "${CCACHE_BASEDIR:-}" == "$root" ]] && basedir=BASEDIR_OK
echo "$(git -C "$root" rev-parse HEAD) $basedir ${GPTBENCH_TARGETS:-all}" >>"$FAKE_BUILD_LOG"
[[ -z "${FAKE_BUILD_INTERRUPT:-}" ]] || { kill -TERM 0; sleep 5; }
[[ -z "${FAKE_BUILD_FAIL:-}" ]] || exit 1
build="${GPTBENCH_BUILD_DIR:-$root/build}"
mkdir -p "$build"
cp "$root/fake_suite.sh" "$build/gptbench"
chmod +x "$build/gptbench"
