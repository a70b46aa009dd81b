#!/usr/bin/env python3
# Runs a command on a 160x45 pseudo-terminal and prints "seconds peak_kb": the seconds from
# launch until the screen shows TEXT (-1 if it never does within 30 s), and the process's
# peak RSS a second later. Then the command gets SIGTERM.
# Usage: scripts/tui-until.py TEXT CMD [ARGS...]
# The screen is modelled as far as a ratatui program draws it: cursor moves (CSI row;col H)
# and characters; colours and other sequences are skipped. Reading the terminal directly
# costs about 4 ms (an `echo` of TEXT); polling tmux cost more than the frame it timed.
import fcntl, os, re, select, signal, struct, subprocess, sys, termios, time, unicodedata

ROWS, COLS = 45, 160
needle, argv = sys.argv[1], sys.argv[2:]
screen = [[" "] * COLS for _ in range(ROWS)]
row = col = 0
SEQ = re.compile(r"\x1b\[([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|([^\x1b])", re.S)

def feed(text):
    global row, col
    for m in SEQ.finditer(text):
        params, final, ch = m.group(1), m.group(2), m.group(3)
        if final == "H":
            parts = [int(p) if p.isdigit() else 1 for p in (params or "1;1").split(";")] + [1]
            row, col = min(parts[0], ROWS) - 1, min(parts[1], COLS) - 1
        elif ch == "\r":
            col = 0
        elif ch == "\n":
            row = min(row + 1, ROWS - 1)
        elif ch is not None and ch >= " ":
            if col < COLS:
                screen[row][col] = ch
            col += 2 if unicodedata.east_asian_width(ch) in "WF" else 1

def shows(text):
    return any(text in "".join(line) for line in screen)

master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
t0 = time.monotonic()
child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                         preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
os.close(slave)
pending, found = b"", None
while found is None and time.monotonic() - t0 < 30:
    if not select.select([master], [], [], 0.5)[0]:
        continue
    try:
        pending += os.read(master, 1 << 16)
    except OSError:
        break
    # Hold back an unfinished escape sequence or character for the next read.
    cut = pending.rfind(b"\x1b")
    cut = cut if cut >= 0 and len(pending) - cut < 64 else len(pending)
    text = pending[:cut].decode("utf-8", "ignore")
    pending = pending[cut:]
    feed(text)
    if shows(needle):
        found = time.monotonic() - t0
time.sleep(1)
kb = 0
try:
    with open(f"/proc/{child.pid}/status") as f:
        kb = next((int(l.split()[1]) for l in f if l.startswith("VmHWM")), 0)
except OSError:
    pass
child.send_signal(signal.SIGTERM)
try:
    child.wait(5)
except subprocess.TimeoutExpired:
    child.kill()
print(f"{found if found is not None else -1:.3f} {kb}")
