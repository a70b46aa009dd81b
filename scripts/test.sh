#!/usr/bin/env bash
# Sets up what the tests need (build tools, model files, tmux) and runs every test:
# unit, integration (scripted HTTP server, real local model, multi-process store) and the
# benches in test mode.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if ! command -v tmux >/dev/null 2>&1; then
    echo "test: installing tmux for the end-to-end tests"
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
    else
        sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null
    fi
fi
cargo test --release --all-targets "$@"
