#!/usr/bin/env bash
# Runs every fuzz target of the module for a fixed time each (FUZZTIME,
# default 45s), one after another: the targets are found, not listed, so a
# new one is run without editing this file. With 8 targets the whole run
# takes about 7 minutes. A failing input is written to the package's
# testdata/fuzz/<Target>/ by go test; commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-45s}
GO=${GO:-go}

targets=$(git grep -lE '^func Fuzz[A-Za-z0-9_]+\(' -- '*_test.go' ':!bench/' ':!deploy/' | sort)
[ -n "$targets" ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
n=0
failed=()
for file in $targets; do
  pkg=./$(dirname "$file")
  for name in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/p' "$file"); do
    n=$((n + 1))
    echo "fuzz: $pkg $name for $fuzztime"
    if ! $GO test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg"; then
      failed+=("$pkg $name")
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz: $n targets passed"
