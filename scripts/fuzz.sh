#!/usr/bin/env bash
# Runs every fuzz harness of tests/fuzz.rs for SECONDS each (default 60) and prints a table:
# inputs, panics, inputs over 1 s and the slowest input per harness, then the totals.
# Inputs that panic or are slow are saved under target/fuzz-crashes/.
#   scripts/fuzz.sh [SECONDS]     env: FUZZ_SEED (base seed), FUZZ_THREADS (default 2)
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
FUZZ_SECONDS="$secs" FUZZ_REPORT="$report" cargo test --release --test fuzz -- \
    --test-threads="${FUZZ_THREADS:-2}"
status=$?
echo
awk '
    BEGIN { printf "%-22s %12s %10s %7s %9s %12s %10s\n", "harness", "inputs", "accepted", "panics", "over 1 s", "slowest ms", "its bytes" }
    $1 == "FUZZ-ROW" {
        printf "%-22s %12d %10d %7d %9d %12.3f %10d\n", $2, $3, $4, $5, $6, $7, $8
        inputs += $3; accepted += $4; panics += $5; slow += $6; if ($7 > worst) worst = $7
    }
    END { printf "%-22s %12d %10d %7d %9d %12.3f\n", "total", inputs, accepted, panics, slow, worst }
' "$report"
if [ "$status" -ne 0 ]; then
    echo "fuzz: a harness failed (see above; inputs saved under target/fuzz-crashes/)" >&2
fi
exit "$status"
