#!/usr/bin/env bash
# Sets up what glassbox needs (build tools, model files), builds it, and runs it with the
# given arguments. With no arguments it opens the TUI.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >&2
cargo build --release --quiet
exec target/release/glassbox "$@"
