# Shared by the end-to-end scripts (sourced): NAME and BIN must be set. Gives a tmux session
# name $S, a scratch dir $WORK removed on exit, and the screen helpers.
command -v tmux >/dev/null || { echo "$NAME: tmux is not installed (scripts/test.sh installs it)" >&2; exit 1; }

S="gb-$NAME-$$"
WORK=$(mktemp -d)
cleanup() { tmux kill-session -t "$S" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

fail() {
    echo "$NAME: FAIL: $*" >&2
    echo "----- screen -----" >&2
    tmux capture-pane -p -t "$S" >&2 || true
    exit 1
}

screen() { tmux capture-pane -p -t "$S"; }

# wait_for TEXT SECONDS: until TEXT is on screen.
wait_for() {
    local text=$1 limit=$2 i=0
    while ! screen | grep -qF -- "$text"; do
        i=$((i + 1))
        [ "$i" -gt $((limit * 10)) ] && fail "'$text' did not appear within ${limit}s"
        sleep 0.1
    done
}

# wait_for_re REGEX SECONDS: until a line matches the extended REGEX.
wait_for_re() {
    local re=$1 limit=$2 i=0
    while ! screen | grep -qE -- "$re"; do
        i=$((i + 1))
        [ "$i" -gt $((limit * 10)) ] && fail "nothing matching '$re' appeared within ${limit}s"
        sleep 0.1
    done
}
