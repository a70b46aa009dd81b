#!/usr/bin/env bash
# The two store backends on the same data: the redb file in the data dir, and PostgreSQL
# (a throwaway server this script starts on loopback and removes at the end). For each it
# prints
#
#   import       `import claude-code` of N generated session files (default 250): seconds,
#                MB/s and files/s;
#   search       `search` of a few words over what was imported: p50/p95 in milliseconds;
#   retrieval    the Claude Code SessionStart hook ranking M learnings inline
#                (`memory hook session-start --fresh`, default 2,000 learnings): p50/p95 in
#                milliseconds, seed 002's retrieval path (its SLO: p95 <= 250 ms), and how
#                many runs failed open with an empty context (over the hook's time budget);
#
# each a cold process start, as a user or Claude Code runs it.
#
# Usage: scripts/bench-store.sh [FILES] [LEARNINGS] [RUNS]   (default 250 2000 40)
#        STORE_BENCH_BIN=target/release/glassbox scripts/bench-store.sh   (skip the build)
# Needs python3 and the PostgreSQL server binaries (initdb, pg_ctl; scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
FILES="${1:-250}"
LEARNINGS="${2:-2000}"
RUNS="${3:-40}"
for tool in python3 initdb pg_ctl psql; do
    command -v "$tool" >/dev/null || { echo "bench-store: $tool is not installed (scripts/setup.sh)" >&2; exit 1; }
done
if [[ -z "${STORE_BENCH_BIN:-}" ]]; then
    cargo build --release --quiet
fi
BIN="$(realpath "${STORE_BENCH_BIN:-$PWD/target/release/glassbox}")"
WORK="$(mktemp -d)"
chmod 755 "$WORK"
PGDIR="$WORK/pg"
stop_pg() {
    [[ -f "$PGDIR/data/postmaster.pid" ]] && as_pg pg_ctl -D "$PGDIR/data" -m immediate stop > /dev/null 2>&1 || true
}
trap 'stop_pg; rm -rf "$WORK"' EXIT
# initdb refuses to run as root: the server runs as the postgres user then.
as_pg() {
    if ((EUID == 0)); then runuser -u postgres -- "$@"; else "$@"; fi
}

mkdir -p "$PGDIR" "$WORK/config" "$WORK/project/.git"
((EUID == 0)) && chown postgres "$PGDIR"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg initdb -D "$PGDIR/data" -U postgres --auth=trust --no-sync > "$WORK/initdb.log"
as_pg pg_ctl -D "$PGDIR/data" -l "$PGDIR/log" -w \
    -o "-k $PGDIR -p $port -c listen_addresses=127.0.0.1" start > /dev/null
psql -q -h 127.0.0.1 -p "$port" -U postgres -c "create database bench" > /dev/null
PG_URL="postgres://postgres@127.0.0.1:$port/bench"

printf '[embeddings]\nprovider = "none"\n' > "$WORK/config/config.toml"
export GLASSBOX_CONFIG_DIR="$WORK/config"
echo "generating $FILES session files and $LEARNINGS learnings …"
python3 scripts/gen-history.py "$PWD" "$WORK/history" "$FILES" > /dev/null
python3 scripts/gen-learnings.py "$LEARNINGS" "$WORK/project" > "$WORK/learnings.jsonl"
bytes=$(du -sb "$WORK/history" | cut -f1)

python3 - "$BIN" "$WORK" "$PG_URL" "$FILES" "$bytes" "$RUNS" <<'EOF'
import json, os, subprocess, sys, time
bin_, work, pg_url, files, nbytes, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
project = os.path.join(work, "project")

def run(env, args, stdin=None):
    t = time.perf_counter()
    out = subprocess.run([bin_, *args], input=stdin, capture_output=True, cwd=project, env=env)
    ms = (time.perf_counter() - t) * 1000
    if out.returncode != 0:
        sys.exit(f"bench-store: glassbox {' '.join(args)} failed: {out.stderr.decode().strip()}")
    return ms, out

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

hook = json.dumps({"session_id": "bench", "cwd": project, "source": "startup"}).encode()
words = ["error", "cache config", "migration test", "deploy", "the store"]
rows = []
for name, url in [("redb", ""), ("postgresql", pg_url)]:
    env = dict(os.environ, GLASSBOX_DATA_DIR=os.path.join(work, "data-" + name), GLASSBOX_STORE_URL=url)
    ms, _ = run(env, ["import", "claude-code", os.path.join(work, "history"), "--json"])
    secs = ms / 1000
    run(env, ["memory", "import", os.path.join(work, "learnings.jsonl"), "--json"])
    search = [run(env, ["search", words[i % len(words)], "--json"])[0] for i in range(runs)]
    ranked, empty = [], 0
    for _ in range(runs):
        ms, out = run(env, ["memory", "hook", "session-start", "--fresh"], hook)
        # Over its time budget the hook fails open with an empty context.
        empty += json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == ""
        ranked.append(ms)
    rows.append((name, secs, search, ranked, empty))

print(f"\n{files} session files, {nbytes / 1e6:.1f} MB; {runs} runs of each query\n")
print(f"{'backend':<12} {'import':>26}   {'search p50/p95':>18}   {'retrieval p50/p95':>20}  empty context")
for name, secs, search, ranked, empty in rows:
    imp = f"{secs:.2f} s {nbytes / 1e6 / secs:.1f} MB/s {files / secs:.0f} f/s"
    print(f"{name:<12} {imp:>26}   {pct(search, 50):7.1f} / {pct(search, 95):6.1f} ms"
          f"   {pct(ranked, 50):8.1f} / {pct(ranked, 95):6.1f} ms  {empty}/{len(ranked)}")
EOF
