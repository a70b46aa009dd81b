#!/usr/bin/env bash
# Crash rounds: N rounds (default 100) of kill -9 at a random moment of a streaming `ask`
# against the scripted server, an `import claude-code` of a generated history, and a DeepEx
# pipeline run (`ask --mode deep`), taking turns. After each kill the store is reopened:
# every node the killed process logged as committed must be there, redb's integrity check
# must pass, and running the work again (`ask --resume` for the pipeline) must end with the
# counts of an uninterrupted run. Prints rounds / losses / duplicates; exits 1 on any loss,
# duplicate, failed integrity check or failed re-run. The rounds are in scripts/crash_rounds.py.
#
# Usage: scripts/crash-rounds.sh [N]
#        SEED=42 scripts/crash-rounds.sh 10      (the same kill moments again)
#        CRASH_KINDS=import scripts/crash-rounds.sh 20   (one workload: ask, import, pipeline)
#        CRASH_BIN_DIR=target/release scripts/crash-rounds.sh   (skip the build)
#        KEEP=1 scripts/crash-rounds.sh 3        (keep the work dir to look at the stores)
set -euo pipefail

cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "crash-rounds: python3 is not installed" >&2; exit 1; }
if [[ -z "${CRASH_BIN_DIR:-}" ]]; then
    cargo build --release --quiet --bin glassbox --example store_check --example scripted_server
fi
DIR="${CRASH_BIN_DIR:-target/release}"
[[ "$DIR" = /* ]] || DIR="$PWD/$DIR"
export GLASSBOX_BIN="$DIR/glassbox"
export STORE_CHECK="$DIR/examples/store_check"
export SCRIPTED_SERVER="$DIR/examples/scripted_server"
exec python3 scripts/crash_rounds.py "${1:-100}"
