#!/usr/bin/env bash
# Sets up what the tests need (build tools, model files, tmux, Graphviz, PostgreSQL) and runs
# every test: unit, integration (scripted HTTP server, real local model, multi-process store)
# and the benches in test mode; then the suite again with every store on PostgreSQL.
# STORE_UNDER_TEST=redb|postgres runs it once, on that backend.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# tmux drives the end-to-end TUI tests; Graphviz renders the graph exports.
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
if [ ${#missing[@]} -gt 0 ]; then
    echo "test: installing ${missing[*]} for the end-to-end tests"
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        sudo -n apt-get update -qq && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
fi
# The MCP tests drive `glassbox mcp` with the official MCP Python SDK from .venv (gitignored);
# quick when it is already there.
if ! .venv/bin/python -c "import mcp" >/dev/null 2>&1; then
    echo "test: creating .venv with the MCP Python SDK (pip install mcp)"
    if ! { python3 -m venv .venv && .venv/bin/pip install -q mcp; }; then
        echo "test: WARNING: could not set up .venv with the MCP Python SDK; the MCP client tests will be skipped (and fail in CI)" >&2
    fi
fi
if [ -n "${STORE_UNDER_TEST:-}" ]; then
    # One run, on the backend asked for (redb or postgres).
    cargo test --release --all-targets "$@"
    exit
fi
cargo test --release --all-targets "$@"
# The suite again with every store on PostgreSQL (a throwaway server per test binary, a
# database standing in for each redb file): all but the tmux end-to-end script (e2e), the
# fuzz harnesses, which keep their own redb stores, and the real-model tests (local_model),
# whose cost is the model, not the store: the engines they drive run on PostgreSQL in their
# scripted-server tests, and one real-model ask runs on it below.
targets=(--lib --bins)
for f in tests/*.rs; do
    name=$(basename "$f" .rs)
    case "$name" in
        e2e | fuzz | local_model) ;;
        *) targets+=(--test "$name") ;;
    esac
done
echo "test: the suite again with every store on PostgreSQL (STORE_UNDER_TEST=postgres)"
STORE_UNDER_TEST=postgres cargo test --release "${targets[@]}" "$@"
if [ $# -eq 0 ]; then
    STORE_UNDER_TEST=postgres cargo test --release --test local_model -- greedy_ask_is_deterministic_and_persisted
fi
