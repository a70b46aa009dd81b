#!/usr/bin/env bash
# End to end: the real glassbox binary in tmux with the embedded local model. Asks a
# question, waits for the answer, checks thinking, answer, graph and status bar are on
# screen, opens the help overlay, searches, replays and verifies the turn in their
# workspaces, resizes to 80x24 and quits.
set -euo pipefail
BIN=${1:?usage: tests/e2e/tui.sh PATH-TO-GLASSBOX}
NAME=e2e
source "$(dirname "$0")/lib.sh"

ENVS="GLASSBOX_DATA_DIR=$WORK/data GLASSBOX_CONFIG_DIR=$WORK/config GLASSBOX_GENERATION__MAX_TOKENS=48 GLASSBOX_VERIFY__MAX_TOKENS=48 GLASSBOX_EFFORT=low"
tmux new-session -d -s "$S" -x 160 -y 45 "env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY $ENVS TERM=xterm-256color $BIN; sleep 5"
tmux set-option -t "$S" window-size manual >/dev/null 2>&1 || true

wait_for "Ask" 20
wait_for "idle" 20
screen | grep -qF "local:SmolLM2" || fail "status bar does not show the local model"

tmux send-keys -t "$S" "Why is the sky blue?" Enter
wait_for "done" 180
# The finished turn is read back from the store into the graph (confidence included) just
# after "done" shows; wait for that rather than race it.
wait_for_re "thinking [0-9]+%" 30

out=$(screen)
echo "$out" | grep -qF "Why is the sky blue?" || fail "the question is not in the graph"
echo "$out" | grep -qE "thinking [0-9]+%" || fail "no thinking node with confidence in the graph"
echo "$out" | grep -qF "response" || fail "no response node in the graph"
# The thinking and answer panes hold text: the line under each title is not blank.
think_line=$(echo "$out" | grep -A1 "╭ Thinking" | tail -1 | cut -c32-110 | tr -d ' │')
[ -n "$think_line" ] || fail "the thinking pane is empty"
answer_line=$(echo "$out" | grep -A1 "╭ Answer" | tail -1 | cut -c32-110 | tr -d ' │')
[ -n "$answer_line" ] || fail "the answer pane is empty"
echo "$out" | grep -qE "[0-9]+/[0-9]+ tok" || fail "the status bar shows no token count"

# Help overlay, generated from the keymap.
tmux send-keys -t "$S" Escape
tmux send-keys -t "$S" "?"
wait_for "Show the key bindings" 5
tmux send-keys -t "$S" Escape

# Full-text search finds the question; Enter goes back to it in the Think workspace.
tmux send-keys -t "$S" "/"
wait_for "Search thinking, answers, tools" 5
tmux send-keys -t "$S" "sky"
wait_for "query" 10
tmux send-keys -t "$S" Enter
wait_for "╭ Answer" 5

# Replay the session: it plays to the end of the recorded stream.
tmux send-keys -t "$S" "P"
wait_for "event " 10
tmux send-keys -t "$S" "G"
# The last event: "event N/N" (the replay may still be playing when G arrives).
wait_for_re "event ([0-9]+)/\1 " 10

# Verify the turn's thinking step by step with the local model: a score and the gutter.
tmux send-keys -t "$S" "1"
tmux send-keys -t "$S" "V"
wait_for "score " 240
wait_for_re "[✓✗~?] " 5
tmux send-keys -t "$S" "1"

# Still renders at 80x24.
tmux resize-window -t "$S" -x 80 -y 24
sleep 0.5
out=$(screen)
[ "$(echo "$out" | wc -l)" -le 24 ] || fail "the screen did not shrink"
echo "$out" | grep -qF "Answer" || fail "the answer pane is gone at 80x24"
echo "$out" | grep -qF "Ask" || fail "the question box is gone at 80x24"
echo "$out" | grep -qF "done" || fail "the status bar is gone at 80x24"

tmux send-keys -t "$S" q
sleep 1
sessions=$(env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY GLASSBOX_DATA_DIR="$WORK/data" GLASSBOX_CONFIG_DIR="$WORK/config" "$BIN" sessions list --json)
# The turn (query, thinking, response) and the verification's step nodes.
echo "$sessions" | grep -qE '"nodes": ([4-9]|[1-9][0-9])' || fail "the session was not stored with the turn and its verified steps: $sessions"
sid=$(echo "$sessions" | grep -oE '"id": "[0-9a-f-]+"' | head -1 | cut -d'"' -f4)
shown=$(env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY GLASSBOX_DATA_DIR="$WORK/data" GLASSBOX_CONFIG_DIR="$WORK/config" "$BIN" sessions show "$sid" --json)
for t in query thinking response verify_step; do
    echo "$shown" | grep -q "\"$t\"" || fail "no $t node in the stored session"
done
echo "e2e: ok"
