#!/usr/bin/env bash
# Claude Code hook latency on a store of N learnings (default 10,000) in one project: each
# run is a cold process start (`glassbox memory hook session-start` with the hook's JSON on
# stdin), as Claude Code runs it. Prints p50/p95/p99 in milliseconds for
#
#   session-start (cached)   the injection cache is current (the usual case);
#   session-start (stale)    a learning event came since: the cached context is served and a
#                            background process computes the next one;
#   session-start (ranked)   no cache to serve (`--fresh`): the learnings are ranked inline;
#   stop                     the Stop hook queueing a transcript;
#
# and the share of runs that timed out (empty context). Seed 002's SLO: SessionStart p95
# <= 250 ms, Stop p95 <= 20 ms.
#
# Usage: scripts/bench-hook.sh [LEARNINGS] [RUNS]      (default 10000 200; needs python3)
#        HOOK_BENCH_BIN=target/release/glassbox scripts/bench-hook.sh   (skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-10000}"
RUNS="${2:-200}"
command -v python3 >/dev/null || { echo "bench-hook: python3 is not installed" >&2; exit 1; }
if [[ -z "${HOOK_BENCH_BIN:-}" ]]; then
    cargo build --release --quiet
fi
BIN="$(realpath "${HOOK_BENCH_BIN:-$PWD/target/release/glassbox}")"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/project/.git" "$WORK/config"
# Keyword search only: the hook never embeds, and filling the store should not take minutes.
printf '[embeddings]\nprovider = "none"\n' > "$WORK/config/config.toml"
export GLASSBOX_DATA_DIR="$WORK/data" GLASSBOX_CONFIG_DIR="$WORK/config"

echo "filling a store with $N learnings …"
python3 scripts/gen-learnings.py "$N" "$WORK/project" > "$WORK/fill.jsonl"
(cd "$WORK/project" && "$BIN" memory import "$WORK/fill.jsonl" --json > /dev/null)

INPUT="{\"session_id\":\"bench\",\"cwd\":\"$WORK/project\",\"source\":\"startup\"}"
STOP="{\"session_id\":\"bench\",\"transcript_path\":\"$WORK/fill.jsonl\",\"cwd\":\"$WORK/project\"}"
python3 - "$BIN" "$RUNS" "$INPUT" "$STOP" "$WORK/project" <<'EOF'
import json, subprocess, sys, time
bin_, runs, start_input, stop_input, project = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

def once(args, stdin):
    t = time.perf_counter()
    out = subprocess.run([bin_, *args], input=stdin.encode(), capture_output=True, cwd=project)
    ms = (time.perf_counter() - t) * 1000
    return ms, out

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def report(name, xs, empty):
    print(f"{name:<26} p50 {pct(xs, 50):7.1f} ms   p95 {pct(xs, 95):7.1f} ms   p99 {pct(xs, 99):7.1f} ms"
          f"   empty context {empty}/{len(xs)}")

cached, stale, ranked, stops = [], [], [], []
empty_cached = empty_stale = empty_ranked = 0
for i in range(runs):
    ms, out = once(["memory", "hook", "session-start"], start_input)
    v = json.loads(out.stdout)
    empty_cached += v["hookSpecificOutput"]["additionalContext"] == ""
    cached.append(ms)
for i in range(max(1, runs // 4)):
    # A learning event makes the cache stale: it is served while a background process
    # ranks again (given time to finish before the next run).
    subprocess.run([bin_, "memory", "insert", f"bench fact {i}", "--tags", "bench"], capture_output=True, cwd=project, check=True)
    ms, out = once(["memory", "hook", "session-start"], start_input)
    v = json.loads(out.stdout)
    empty_stale += v["hookSpecificOutput"]["additionalContext"] == ""
    stale.append(ms)
    time.sleep(0.5)
for i in range(max(1, runs // 4)):
    ms, out = once(["memory", "hook", "session-start", "--fresh"], start_input)
    v = json.loads(out.stdout)
    empty_ranked += v["hookSpecificOutput"]["additionalContext"] == ""
    ranked.append(ms)
for i in range(runs):
    ms, out = once(["memory", "hook", "stop"], stop_input)
    stops.append(ms)
report("session-start (cached)", cached, empty_cached)
report("session-start (stale)", stale, empty_stale)
report("session-start (ranked)", ranked, empty_ranked)
report("stop", stops, 0)
EOF
