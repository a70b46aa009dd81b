#!/usr/bin/env bash
# Import throughput: `glassbox import claude-code` against `jq -c . > /dev/null` on the same
# files, then the re-import (nothing new) time. The corpus (default ≥ 200 MB) is generated
# from tests/fixtures/claude_code by repeating each fixture session with fresh ids.
#
# Usage: scripts/bench-import.sh [MEGABYTES]     (needs jq and python3)
set -euo pipefail

cd "$(dirname "$0")/.."
TARGET_MB="${1:-200}"
command -v jq >/dev/null || { echo "bench-import: jq is not installed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-import: python3 is not installed" >&2; exit 1; }

cargo build --release --quiet
BIN="$PWD/target/release/glassbox"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "generating a ${TARGET_MB} MB corpus in $WORK/projects …"
python3 - "$PWD/tests/fixtures/claude_code/projects" "$WORK/projects" "$TARGET_MB" <<'EOF'
import datetime, json, os, re, sys
src, dst, target = sys.argv[1], sys.argv[2], int(sys.argv[3]) * 1_000_000
fixtures = []
for dirpath, _, names in os.walk(src):
    for n in sorted(names):
        if n.endswith(".jsonl"):
            path = os.path.join(dirpath, n)
            lines = []
            with open(path, encoding="utf-8") as f:
                for line in f:
                    # Only complete, valid lines: jq stops at the first bad one.
                    if not line.endswith("\n"):
                        continue
                    try:
                        json.loads(line)
                    except ValueError:
                        continue
                    lines.append(line)
            fixtures.append((os.path.relpath(path, src), lines))
REPS = 150  # repetitions of a fixture session inside one generated file
EPOCH = datetime.datetime(2025, 6, 1, 10, 0, 0, tzinfo=datetime.timezone.utc)
TS = re.compile(r'"timestamp": ?"([^"]+)"')
def shifted(line, base):
    # Each repetition happens later, as real sessions do: times keep the fixture's spacing.
    def sub(m):
        t = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00"))
        return '"timestamp": "' + (base + (t - EPOCH)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + 'Z"'
    return TS.sub(sub, line)
written, file_no = 0, 0
while written < target:
    for rel, lines in fixtures:
        sid_new = f"{file_no:08x}-bbbb-4bbb-8bbb-{file_no:012x}"
        out_rel = rel
        for old in ("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222",
                    "33333333-3333-4333-8333-333333333333"):
            out_rel = out_rel.replace(old, sid_new)
        out = os.path.join(dst, f"bench-{file_no // 50}", out_rel.split(os.sep, 1)[-1])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            for rep in range(REPS):
                tag = f"{file_no:04x}{rep:04x}"
                base = EPOCH + datetime.timedelta(days=file_no // 3, minutes=10 * rep)
                for line in lines:
                    line = (line.replace("11111111-1111-4111-8111-111111111111", sid_new)
                                .replace("22222222-2222-4222-8222-222222222222", sid_new)
                                .replace("33333333-3333-4333-8333-333333333333", sid_new)
                                .replace("10000000-0000-4000-8000-", f"1{tag[1:]}-0000-4000-8000-")
                                .replace("20000000-0000-4000-8000-", f"2{tag[1:]}-0000-4000-8000-")
                                .replace("30000000-0000-4000-8000-", f"3{tag[1:]}-0000-4000-8000-")
                                .replace('"msg', f'"r{tag}msg').replace('"toolu_', f'"toolu_{tag}_')
                                .replace('"req_', f'"req_{tag}_'))
                    line = shifted(line, base)
                    f.write(line)
                    written += len(line.encode())
        file_no += 1
        if written >= target:
            break
print(f"{file_no} files, {written / 1e6:.1f} MB")
EOF

BYTES=$(find "$WORK/projects" -name '*.jsonl' -print0 | du -cb --files0-from=- | tail -1 | cut -f1)
MB=$(python3 -c "print(f'{$BYTES/1e6:.1f}')")

secs() { python3 -c "import sys; print(f'{float(sys.argv[1]):.2f}')" "$1"; }
now() { date +%s.%N; }

# Warm the page cache so both tools read from memory.
find "$WORK/projects" -name '*.jsonl' -exec cat {} + > /dev/null

t0=$(now)
find "$WORK/projects" -name '*.jsonl' -exec cat {} + | jq -c . > /dev/null
t1=$(now)
JQ=$(python3 -c "print($t1 - $t0)")

export GLASSBOX_DATA_DIR="$WORK/data" GLASSBOX_CONFIG_DIR="$WORK/config"
t0=$(now)
"$BIN" import claude-code "$WORK/projects" --json > "$WORK/first.json"
t1=$(now)
FIRST=$(python3 -c "print($t1 - $t0)")
t0=$(now)
"$BIN" import claude-code "$WORK/projects" --json > "$WORK/again.json"
t1=$(now)
AGAIN=$(python3 -c "print($t1 - $t0)")

python3 - "$WORK/first.json" "$WORK/again.json" "$BYTES" "$JQ" "$FIRST" "$AGAIN" <<'EOF'
import json, sys
first, again = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
size, jq, imp, re = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
mb = size / 1e6
print(f"corpus          {mb:.1f} MB, {first['lines']} lines, {first['files']} files, {first['sessions']} sessions")
print(f"jq -c .         {jq:.2f} s  {mb / jq:.1f} MB/s")
print(f"glassbox import {imp:.2f} s  {mb / imp:.1f} MB/s  ({sum(first['nodes_by_type'].values())} nodes, "
      f"{first['thinking_blocks']} thinking blocks, {len(first['errors'])} errors)  → {jq / imp:.2f}× jq")
print(f"re-import       {re:.2f} s  ({sum(again['nodes_by_type'].values())} new nodes)  → {imp / re:.1f}× faster than the first import")
EOF
