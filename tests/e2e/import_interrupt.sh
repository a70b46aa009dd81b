#!/usr/bin/env bash
# A long Claude Code import in tmux, stopped with Ctrl-C as a person would: it must end
# soon with a line saying what was kept (its progress bar cleared), exit 130 and leave each
# file it read committed whole; the same command then reads only the rest, and the store holds every session once.
set -euo pipefail
BIN=${1:?usage: tests/e2e/import_interrupt.sh PATH-TO-GLASSBOX}
NAME=import-interrupt
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FILES=1000

# A real-shaped history: long enough to read that Ctrl-C lands in the middle of it.
python3 "$ROOT/scripts/gen-history.py" "$ROOT" "$WORK/history" "$FILES" > /dev/null
export GLASSBOX_DATA_DIR="$WORK/data" GLASSBOX_CONFIG_DIR="$WORK/config" GLASSBOX_EMBEDDINGS__PROVIDER=none
cat > "$WORK/run.sh" <<RUN
"$BIN" import claude-code "$WORK/history"
echo "exit=\$?" > "$WORK/exit"
sleep 30
RUN
tmux new-session -d -s "$S" -x 160 -y 30 "exec bash $WORK/run.sh"
wait_for_re "[0-9]+/$FILES files" 20
tmux send-keys -t "$S" C-c
wait_exit "the import did not stop after Ctrl-C" 10
grep -qx "exit=130" "$WORK/exit" || fail "$(cat "$WORK/exit"), not exit=130"
line=$(screen | grep -F "glassbox: interrupted after" | tr -d '\n') || fail "no line saying the import was interrupted"
read_first=$(sed -E 's/.*interrupted after ([0-9]+) of.*/\1/' <<< "$line")
[ "$read_first" -lt "$FILES" ] || fail "Ctrl-C came after the last file ($line)"
# The progress bar is gone: the terminal's `^C` echo must not have pushed its last frame out
# of reach of the clear.
if screen | grep -qE "[0-9]+/$FILES files \["; then
    fail "the progress bar stayed on screen after Ctrl-C: $(screen | grep -E "/$FILES files")"
fi
sessions_first=$("$BIN" sessions list --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')

# The same command goes on from the first file not read.
"$BIN" import claude-code "$WORK/history" --json > "$WORK/rest.json"
python3 - "$WORK/rest.json" "$FILES" "$sessions_first" <<'PY' || fail "the second run did not read just the rest"
import json, sys
rest = json.load(open(sys.argv[1]))
files, before = int(sys.argv[2]), int(sys.argv[3])
assert "interrupted" not in rest, rest
assert rest["files"] == files, rest["files"]
assert rest["sessions_created"] == files - before, (rest["sessions_created"], files, before)
PY
total=$("$BIN" sessions list --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$total" -eq "$FILES" ] || fail "$total sessions after both runs, not $FILES"
echo "import-interrupt: ok (stopped after $read_first of $FILES files)"
