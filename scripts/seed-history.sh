#!/usr/bin/env bash
# Seeds a history database with the Google Benchmark JSON runs kept under docs/results/, so a
# first trend page has real data:
#   scripts/seed-history.sh [DB]        (default results/history.sqlite)
# Each run's commit is the commit that added its file to docs/results/ (the code it measured is
# at or before it), its branch "docs/results". Files that are not Google Benchmark JSON (the
# PyTorch peer lists, premerge records) are skipped with a note; adding again is a no-op.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DB=${1:-$ROOT/results/history.sqlite}
TOOL=${GPTBENCH_HISTORY:-$ROOT/build/history/gptbench-history}
[ -x "$TOOL" ] || { echo "seed-history: $TOOL not built (GPTBENCH_TARGETS=gptbench-history ./gptbench.sh build)" >&2; exit 2; }
mkdir -p "$(dirname "$DB")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

added=0 skipped=0
while IFS= read -r file; do
  rel=${file#"$ROOT"/}
  commit=$(git -C "$ROOT" log --diff-filter=A --format=%H -1 -- "$rel" 2>/dev/null || true)
  input=$file
  if [[ $file == *.gz ]]; then
    input="$tmp/$(basename "${file%.gz}")"
    gzip -dc "$file" > "$input"
  fi
  if "$TOOL" --db "$DB" add "$input" --source "$rel" --commit "${commit:-unknown}" --branch docs/results >/dev/null 2>"$tmp/err"; then
    added=$((added + 1))
  else
    echo "seed-history: skipped $rel: $(sed 's/^gptbench-history: error: //' "$tmp/err")" >&2
    skipped=$((skipped + 1))
  fi
done < <(find "$ROOT/docs/results" -name '*.json' -o -name '*.json.gz' | sort)
echo "seed-history: $added run(s) in $DB, $skipped file(s) skipped" >&2
