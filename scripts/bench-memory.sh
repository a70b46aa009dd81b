#!/usr/bin/env bash
# How `ask` grows with the memory of a project: N archival entries (default 5,000, a real
# vocabulary taken from this repository's docs and sources) are imported into the project
# scope of a scratch folder, and `ask` is timed from that folder against a short answer from
# a loopback Anthropic server: the first run (which builds the scope's index and saves it),
# the median of the next RUNS runs, and the median of RUNS runs with no memory at all.
#
# Usage: scripts/bench-memory.sh [N] [RUNS]    (BIN=path/to/glassbox to use another binary)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-5000}
RUNS=${2:-5}
BIN=${BIN:-target/release/glassbox}
[[ -x "$BIN" ]] || cargo build --release --bin glassbox
BIN=$(realpath "$BIN")
WORK=$(mktemp -d)
mkdir -p "$WORK/project" "$WORK/config"
export GLASSBOX_CONFIG_DIR="$WORK/config" GLASSBOX_EMBEDDINGS__PROVIDER=none ANTHROPIC_API_KEY=bench

python3 - "$N" "$WORK" "$(pwd)" <<'EOF'
import glob, json, random, re, sys, uuid, datetime
n, work, repo = int(sys.argv[1]), sys.argv[2], sys.argv[3]
random.seed(7)
words = []
for f in sorted(glob.glob(f"{repo}/docs/*.md") + glob.glob(f"{repo}/src/engines/**/*.rs", recursive=True)):
    words += re.findall(r"[A-Za-z][A-Za-z']+", open(f, encoding="utf-8").read())
start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
with open(f"{work}/memory.jsonl", "w") as out:
    for i in range(n):
        at = (start + datetime.timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
        out.write(json.dumps({
            "id": str(uuid.UUID(int=random.getrandbits(128), version=4)), "tier": "archival",
            "scope": f"project:{work}/project", "importance": round(random.random(), 2),
            "content": " ".join(random.choice(words) for _ in range(random.randint(12, 60))) + ".",
            "tags": [], "created_at": at, "updated_at": at, "provenance": {"origin": "bench"}, "meta": {},
        }) + "\n")
def ev(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"
body = ev("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "bench", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}})
body += ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
for i in range(50):
    body += ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"word{i} "}})
body += ev("content_block_stop", {"type": "content_block_stop", "index": 0})
body += ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 50}})
body += ev("message_stop", {"type": "message_stop"})
open(f"{work}/answer.sse", "w").write(body)
EOF

python3 scripts/sse-server.py "$WORK/answer.sse" "$WORK/port" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
export GLASSBOX_PROVIDERS__ANTHROPIC__BASE_URL="http://127.0.0.1:$(cat "$WORK/port")"

GLASSBOX_DATA_DIR="$WORK/data" "$BIN" memory import "$WORK/memory.jsonl" > /dev/null
# Seconds one `ask` from the project folder takes on data dir $1.
ask() {
    local t0
    t0=$(date +%s.%N)
    (cd "$WORK/project" && GLASSBOX_DATA_DIR="$1" "$BIN" --provider anthropic ask "how is the index kept" --json > /dev/null)
    python3 -c "print(f'{$(date +%s.%N) - $t0:.3f}')"
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
first=$(ask "$WORK/data")
later=() empty=()
for _ in $(seq "$RUNS"); do
    later+=("$(ask "$WORK/data")")
    rm -rf "$WORK/empty"
    empty+=("$(ask "$WORK/empty")")
done
printf 'ask beside %s archival entries: first run %s s, then %s s (median of %s); with no memory %s s\n' \
    "$N" "$first" "$(median "${later[@]}")" "$RUNS" "$(median "${empty[@]}")"
