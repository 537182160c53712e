#!/usr/bin/env bash
# Runs every fuzz target of the module for a fixed time each (FUZZTIME,
# default 45s), one after another: the targets are found, not listed, so a
# new one is run without editing this file. With 8 targets the whole run
# takes about 8 minutes (building each fuzzing binary adds up to 30 s). A
# failing input is written to the package's testdata/fuzz/<Target>/ by go
# test; commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-45s}
GO=${GO:-go}

targets=$(git grep -lE '^func Fuzz[A-Za-z0-9_]+\(' -- '*_test.go' ':!bench/' ':!deploy/' | sort)
[ -n "$targets" ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
n=0
failed=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for file in $targets; do
  pkg=./$(dirname "$file")
  for name in $(sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/p' "$file"); do
    n=$((n + 1))
    echo "fuzz: $pkg $name for $fuzztime"
    for try in 1 2; do
      if $GO test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg" 2>&1 | tee "$log"; then
        break
      fi
      # Go's fuzzing engine can give up with "context deadline exceeded"
      # when its fuzztime ends before a slow, loaded machine has gathered
      # the baseline; that names no failing input: run it once more.
      if [ "$try" = 1 ] && grep -q "context deadline exceeded" "$log" && ! grep -q "Failing input written" "$log"; then
        echo "fuzz: $name stopped by its own deadline, not by an input; once more"
        continue
      fi
      failed+=("$pkg $name")
      break
    done
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz: $n targets passed"
