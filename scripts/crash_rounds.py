#!/usr/bin/env python3
"""Crash rounds: kill -9 glassbox at a random moment of real work, then reopen the store and
check that nothing it reported as committed is lost, that redb's integrity check passes, and
that running the work again completes it without duplicates. Run by scripts/crash-rounds.sh.

Three workloads take turns, one per round:

  ask       a streaming `glassbox ask` against the scripted HTTP server playing a slow
            Anthropic stream (~1.5 s). All ask rounds share one data dir, so every round also
            checks that no earlier round's committed nodes went missing. The killed process
            logs `node committed node=ID bytes=N` after each commit returned; the node must be
            found with at least N bytes of text. The re-run must give a session shaped like an
            uninterrupted one.
  import    `glassbox import claude-code` of a generated history (scripts/gen-history.py)
            into a fresh data dir. The killed process logs `import commit nodes_created=N`
            after each commit; the store must hold at least their sum. Re-running (and, in
            some rounds, killing the re-run too and running once more) must end with exactly
            the counts of an uninterrupted import.
  pipeline  `glassbox ask --mode deep` (the DeepEx pipeline) against the scripted server;
            the killed run's nodes must be there and `ask --resume RUN` must finish it with
            the node count of an uninterrupted run.

Usage: crash_rounds.py N  (paths from GLASSBOX_BIN, STORE_CHECK, SCRIPTED_SERVER; SEED=n
repeats a sequence of kill times; KEEP=1 keeps the work dir)
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ["GLASSBOX_BIN"]
CHECK = os.environ["STORE_CHECK"]
SERVER = os.environ["SCRIPTED_SERVER"]
KEY = "sk-ant-crash-rounds-0123456789"
QUESTION = "What is 17 x 23?"
# Enough files for an import of a few commits (one per ~8 MB of nodes or 2 s).
HISTORY_FILES = int(os.environ.get("CRASH_HISTORY_FILES", "1500"))

COMMITTED = re.compile(r"node committed.*?\bnode=([0-9a-f-]{36}).*?\bbytes=(\d+)")
IMPORTED = re.compile(r"import commit.*?\bnodes_created=(\d+).*?\bok=true")


def long_stream(path):
    """An Anthropic stream of 60 thinking and 40 text deltas, one frame each."""
    def frame(event, data):
        return f"event: {event}\ndata: {json.dumps(data)}\n\n"
    out = [frame("message_start", {"type": "message_start", "message": {
        "id": "msg_crash", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 1}}})]
    out.append(frame("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "thinking", "thinking": ""}}))
    for i in range(60):
        out.append(frame("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "thinking_delta", "thinking": f"Step {i}: 17 times 20 is 340 and 17 times 3 is 51. "}}))
    out.append(frame("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "signature_delta", "signature": "c2ln"}}))
    out.append(frame("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(frame("content_block_start", {"type": "content_block_start", "index": 1,
                                             "content_block": {"type": "text", "text": ""}}))
    for i in range(40):
        out.append(frame("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {
            "type": "text_delta", "text": f"Part {i} of the answer: 340 + 51 = 391. "}}))
    out.append(frame("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(frame("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                       "usage": {"output_tokens": 900}}))
    out.append(frame("message_stop", {"type": "message_stop"}))
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(out))


def start_server(work, delay_ms):
    """The scripted server playing the long stream, one frame every `delay_ms`."""
    long_stream(os.path.join(work, "long.sse"))
    script = os.path.join(work, f"long-{delay_ms}.script.json")
    with open(script, "w", encoding="utf-8") as f:
        json.dump({"repeat_last": True, "steps": [
            {"status": 200, "body_file": "long.sse", "chunk": "frames", "delay_ms": delay_ms}]}, f)
    proc = subprocess.Popen([SERVER, script], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"at (http://\S+)", line)
    if not m:
        proc.kill()
        sys.exit(f"crash-rounds: the scripted server did not start: {line!r}")
    return proc, m.group(1)


def env_for(data):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GLASSBOX_", "ANTHROPIC_", "OPENAI_", "OLLAMA_"))}
    env.update({
        "GLASSBOX_DATA_DIR": data,
        "GLASSBOX_CONFIG_DIR": os.path.join(data, "config"),
        "ANTHROPIC_API_KEY": KEY,
        "NO_COLOR": "1",
    })
    return env


def log_size(data):
    try:
        return os.path.getsize(os.path.join(data, "glassbox.log"))
    except OSError:
        return 0


def log_since(data, offset):
    try:
        with open(os.path.join(data, "glassbox.log"), "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run(args, data, timeout=300):
    return subprocess.run([BIN, *args], env=env_for(data), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def kill_after(args, data, delay):
    """Starts glassbox, kills it with SIGKILL after `delay` seconds (or lets it finish)."""
    p = subprocess.Popen([BIN, *args], env=env_for(data), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=delay)
        return False, out, err
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return True, out, err


def check(data, expected=None):
    args = [CHECK, os.path.join(data, "glassbox.redb")]
    if expected:
        args.append(expected)
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode == 2:
        raise RuntimeError(f"store_check: {r.stderr.strip()}")
    return json.loads(r.stdout)


def done_line(stdout):
    for line in stdout.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if v.get("type") == "done":
            return v
    return None


class Tally:
    def __init__(self):
        self.rounds = 0
        self.losses = 0
        self.duplicates = 0
        self.integrity = 0
        self.rerun_failures = 0
        self.by_kind = {}
        self.killed_mid = 0
        self.with_cursors = 0
        self.reported = 0

    def failed(self):
        return self.losses or self.duplicates or self.integrity or self.rerun_failures


def kinds_of(report, session):
    for s in report["sessions"]:
        if s["id"] == session:
            return s["kinds"]
    return None


def verify(report, t, what):
    """Counts a failed integrity check and missing or short nodes; returns a note."""
    notes = []
    if report["integrity"] is not True:
        t.integrity += 1
        notes.append(f"INTEGRITY {report['integrity']}")
    lost = len(report["missing"]) + len(report["short"])
    if lost:
        t.losses += lost
        notes.append(f"LOST {lost} ({what}: missing {report['missing']} short {report['short']})")
    return notes


def compare_counts(after, want_counts, keys, t, notes):
    """Counts above an uninterrupted run's are duplicates, below it losses."""
    for key in keys:
        got, want = after["counts"][key], want_counts[key]
        if got > want:
            t.duplicates += got - want
            notes.append(f"DUPLICATE {key}: {got} vs {want} uninterrupted")
        elif got < want:
            t.losses += want - got
            notes.append(f"LOST {key}: {got} vs {want} uninterrupted")


def ask_round(ctx, t, rng):
    data = ctx["ask_data"]
    before = log_size(data)
    delay = rng.uniform(0.0, 2.2)
    args = ["-v", "ask", "--json", "--provider", "anthropic", "--base-url", ctx["url"], QUESTION]
    killed, _, _ = kill_after(args, data, delay)
    reported = COMMITTED.findall(log_since(data, before))
    with open(ctx["ask_expected"], "a", encoding="utf-8") as f:
        for node, size in reported:
            f.write(f"{node} {size}\n")
    t.reported += len(reported)
    report = check(data, ctx["ask_expected"])
    notes = verify(report, t, "ask")
    for s in report["sessions"]:
        if any(v > 1 for v in s["kinds"].values()):
            t.duplicates += 1
            notes.append(f"DUPLICATE kinds in session {s['id']}: {s['kinds']}")
    sessions = len(report["sessions"])
    r = run(["ask", "--json", "--provider", "anthropic", "--base-url", ctx["url"], QUESTION], data)
    done = done_line(r.stdout)
    if r.returncode != 0 or not done:
        t.rerun_failures += 1
        notes.append(f"RERUN exit {r.returncode}: {r.stderr.strip()[:200]}")
    else:
        after = check(data, ctx["ask_expected"])
        notes += verify(after, t, "ask after re-run")
        kinds = kinds_of(after, done["session"])
        if kinds != ctx["ask_kinds"] or len(after["sessions"]) != sessions + 1:
            t.duplicates += 1
            notes.append(f"RERUN shape {kinds} vs {ctx['ask_kinds']}, sessions {sessions}"
                         f" → {len(after['sessions'])}")
    return killed, delay, f"{len(reported)} commits logged, {report['counts']['nodes']} nodes", notes


def import_round(ctx, t, rng):
    data = os.path.join(ctx["work"], "import")
    shutil.rmtree(data, ignore_errors=True)
    delay = rng.uniform(0.1, 0.95) * ctx["import_secs"]
    args = ["-v", "import", "claude-code", "--json", ctx["history"]]
    killed, _, _ = kill_after(args, data, delay)
    logged = [int(n) for n in IMPORTED.findall(log_since(data, 0))]
    t.reported += len(logged)
    report = check(data)
    notes = verify(report, t, "import")
    counts = report["counts"]
    if counts["nodes"] < sum(logged):
        t.losses += sum(logged) - counts["nodes"]
        notes.append(f"LOST {sum(logged) - counts['nodes']}: {sum(logged)} logged as committed,"
                     f" {counts['nodes']} in the store")
    if killed and counts["transcript_cursors"] > 0:
        t.with_cursors += 1
    summary = (f"{len(logged)} commits logged ({sum(logged)} nodes), {counts['nodes']} nodes,"
               f" {counts['transcript_cursors']} cursors")
    # Now and then the re-run is killed too before the last, uninterrupted one.
    if killed and rng.random() < 0.3:
        kill_after(args, data, rng.uniform(0.05, 0.6) * ctx["import_secs"])
        notes += verify(check(data), t, "import after a second kill")
        summary += ", re-run killed too"
    r = run(["import", "claude-code", "--json", ctx["history"]], data)
    if r.returncode != 0:
        t.rerun_failures += 1
        notes.append(f"RERUN exit {r.returncode}: {r.stderr.strip()[:200]}")
        return killed, delay, summary, notes
    after = check(data)
    notes += verify(after, t, "import after re-run")
    compare_counts(after, ctx["import_counts"], ("sessions", "nodes", "edges", "decision_points", "transcript_cursors", "search_docs"), t, notes)
    return killed, delay, summary, notes


def pipeline_round(ctx, t, rng):
    data = os.path.join(ctx["work"], "pipeline")
    shutil.rmtree(data, ignore_errors=True)
    delay = rng.uniform(0.05, 1.0) * ctx["pipeline_secs"]
    args = ["-v", "ask", "--json", "--mode", "deep", "--no-escalate", "--provider", "anthropic",
            "--base-url", ctx["fast_url"], QUESTION]
    killed, _, _ = kill_after(args, data, delay)
    reported = COMMITTED.findall(log_since(data, 0))
    expected = os.path.join(ctx["work"], "pipeline-expected.txt")
    with open(expected, "w", encoding="utf-8") as f:
        for node, size in reported:
            f.write(f"{node} {size}\n")
    t.reported += len(reported)
    report = check(data, expected)
    notes = verify(report, t, "pipeline")
    runs = [r for s in report["sessions"] for r in s["runs"]]
    summary = (f"{len(reported)} commits logged, {report['counts']['nodes']} nodes,"
               f" {len(runs)} run(s) {[r['status'] for r in runs]}")
    unfinished = [r for r in runs if r["status"].get("state") != "done"]
    if runs and not unfinished:
        r = None
        how = "nothing left to do"
    elif unfinished:
        # A resumed layer starts over in the same node, so after the resume each reported
        # node must still be there, whatever its length.
        with open(expected, "w", encoding="utf-8") as f:
            for node, _ in reported:
                f.write(f"{node} 0\n")
        r = run(["ask", "--json", "--provider", "anthropic", "--base-url", ctx["fast_url"],
                 "--resume", unfinished[0]["id"]], data)
        how = "resumed"
    else:
        r = run(args[1:], data)
        how = "run again"
    summary += f", {how}"
    if r is not None and r.returncode != 0:
        t.rerun_failures += 1
        notes.append(f"RERUN ({how}) exit {r.returncode}: {(r.stderr + r.stdout).strip()[-300:]}")
        return killed, delay, summary, notes
    after = check(data, expected)
    notes += verify(after, t, f"pipeline after it was {how}")
    compare_counts(after, ctx["pipeline_counts"], ("sessions", "nodes", "runs"), t, notes)
    return killed, delay, summary, notes


def baselines(ctx):
    """Uninterrupted runs: the shapes and counts every re-run must match, and the durations
    the kill moments are drawn from."""
    data = os.path.join(ctx["work"], "baseline-ask")
    r = run(["ask", "--json", "--provider", "anthropic", "--base-url", ctx["url"], QUESTION], data)
    done = done_line(r.stdout)
    if r.returncode != 0 or not done:
        sys.exit(f"crash-rounds: the uninterrupted ask failed: {r.stderr}")
    ctx["ask_kinds"] = kinds_of(check(data), done["session"])

    ctx["history"] = os.path.join(ctx["work"], "history")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-history.py"), ROOT,
                    ctx["history"], str(HISTORY_FILES)], check=True, stdout=subprocess.DEVNULL)
    data = os.path.join(ctx["work"], "baseline-import")
    t0 = time.monotonic()
    r = run(["import", "claude-code", "--json", ctx["history"]], data)
    ctx["import_secs"] = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"crash-rounds: the uninterrupted import failed: {r.stderr}")
    ctx["import_counts"] = check(data)["counts"]

    if "pipeline" in ctx["kinds"]:
        data = os.path.join(ctx["work"], "baseline-pipeline")
        t0 = time.monotonic()
        r = run(["ask", "--json", "--mode", "deep", "--no-escalate", "--provider", "anthropic",
                 "--base-url", ctx["fast_url"], QUESTION], data)
        ctx["pipeline_secs"] = time.monotonic() - t0
        if r.returncode != 0:
            sys.exit(f"crash-rounds: the uninterrupted pipeline run failed: {r.stderr}")
        ctx["pipeline_counts"] = check(data)["counts"]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    seed = int(os.environ.get("SEED", str(int(time.time()))))
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="glassbox-crash-")
    kinds = os.environ.get("CRASH_KINDS", "ask,import,pipeline").split(",")
    server, url = start_server(work, 15)
    # The pipeline streams once per layer: a faster stream keeps its rounds short.
    fast, fast_url = start_server(work, 1)
    ctx = {"work": work, "url": url, "fast_url": fast_url, "kinds": kinds,
           "ask_data": os.path.join(work, "ask"),
           "ask_expected": os.path.join(work, "ask-expected.txt")}
    rounds = {"ask": ask_round, "import": import_round, "pipeline": pipeline_round}
    t = Tally()
    try:
        baselines(ctx)
        print(f"crash-rounds: seed {seed}, work dir {work}; uninterrupted: ask {ctx['ask_kinds']},"
              f" import of {HISTORY_FILES} files {ctx['import_secs']:.1f} s"
              f" ({ctx['import_counts']['nodes']} nodes)"
              + (f", pipeline {ctx['pipeline_secs']:.1f} s ({ctx['pipeline_counts']['nodes']} nodes)"
                 if "pipeline" in kinds else ""), flush=True)
        for i in range(n):
            kind = kinds[i % len(kinds)]
            killed, delay, summary, notes = rounds[kind](ctx, t, rng)
            t.rounds += 1
            t.by_kind[kind] = t.by_kind.get(kind, 0) + 1
            t.killed_mid += killed
            state = "killed" if killed else "finished before the kill"
            print(f"round {i + 1:3} {kind:8} {state} at {delay:5.2f} s: {summary}"
                  + ("" if not notes else "\n    " + "\n    ".join(notes)), flush=True)
    finally:
        for p in (server, fast):
            p.kill()
            p.wait()
        if os.environ.get("KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
    by_kind = ", ".join(f"{k} {v}" for k, v in t.by_kind.items())
    print(f"\nrounds {t.rounds} ({by_kind}; {t.killed_mid} killed mid-run,"
          f" {t.with_cursors} import rounds killed with transcript cursors committed)")
    print(f"commits logged by killed processes {t.reported}")
    print(f"losses {t.losses}  duplicates {t.duplicates}  integrity failures {t.integrity}"
          f"  failed re-runs {t.rerun_failures}")
    return 1 if t.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
