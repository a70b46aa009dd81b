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

# wait_screen GREP-FLAG PATTERN SECONDS: until a line of the screen matches PATTERN.
wait_screen() {
    local flag=$1 pattern=$2 limit=$3 i=0
    while ! screen | grep -q"$flag" -- "$pattern"; do
        i=$((i + 1))
        [ "$i" -gt $((limit * 10)) ] && fail "nothing matching '$pattern' appeared within ${limit}s"
        sleep 0.1
    done
}

# wait_for TEXT SECONDS: until TEXT is on screen.
wait_for() { wait_screen F "$@"; }

# wait_for_re REGEX SECONDS: until a line matches the extended REGEX.
wait_for_re() { wait_screen E "$@"; }

# wait_exit WHAT SECONDS: until the command under test wrote its exit status to $WORK/exit.
wait_exit() {
    local i=0
    until [ -s "$WORK/exit" ]; do
        i=$((i + 1))
        [ "$i" -gt $(($2 * 10)) ] && fail "$1 within ${2}s"
        sleep 0.1
    done
}
