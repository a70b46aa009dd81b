#!/usr/bin/env bash
# The real glassbox TUI in tmux, told to stop by a signal from outside (SIGTERM, SIGHUP,
# SIGINT): each time it must quit as `q` does, exiting 0 with the shell's own screen back
# (the alternate screen left, so what was printed before it started shows again).
set -euo pipefail
BIN=${1:?usage: tests/e2e/signals.sh PATH-TO-GLASSBOX}
NAME=signals
source "$(dirname "$0")/lib.sh"

# A configured key (at a closed port) keeps the local model from loading: nothing is asked.
ENVS="GLASSBOX_DATA_DIR=$WORK/data GLASSBOX_CONFIG_DIR=$WORK/config GLASSBOX_EMBEDDINGS__PROVIDER=none ANTHROPIC_API_KEY=test GLASSBOX_PROVIDERS__ANTHROPIC__BASE_URL=http://127.0.0.1:9"
for sig in TERM HUP INT; do
    rm -f "$WORK/exit"
    tmux new-session -d -s "$S" -x 120 -y 30 \
        "echo before-the-tui; env -u OPENAI_API_KEY $ENVS TERM=xterm-256color $BIN; echo \"exit=\$?\" > $WORK/exit; sleep 30"
    wait_for " Think " 20
    shell=$(tmux list-panes -t "$S" -F '#{pane_pid}')
    pid=$(pgrep -P "$shell" -x glassbox) || fail "no glassbox process under the pane's shell"
    kill -s "$sig" "$pid"
    wait_exit "SIG$sig: the TUI did not quit" 10
    grep -qx "exit=0" "$WORK/exit" || fail "SIG$sig: $(cat "$WORK/exit"), not exit=0"
    screen | grep -qF "before-the-tui" || fail "SIG$sig: the shell's screen did not come back"
    screen | grep -qF " Think " && fail "SIG$sig: the TUI is still on screen"
    tmux kill-session -t "$S"
done
echo "signals: ok"
