#!/usr/bin/env python3
"""Generates a Claude Code history shaped like a real ~/.claude/projects folder: thousands of
session files of 10-250 KB spread over a few dozen projects, whose text has a real vocabulary
(this repository's own sources, docs and configs). Used by scripts/bench-import.sh (CORPUS=many)
and scripts/bench-scale.sh.

Each file is one session: user prompts, assistant thinking, text and tool calls (Read, Bash,
Grep, Edit) whose results quote real files with Claude Code's numbered-line format and are
duplicated in toolUseResult, progress lines, and now and then a custom-title or summary line.

Usage: gen-history.py REPO_ROOT OUT_DIR FILES [SEED]
The output is deterministic for a given repository, FILES and SEED.
"""
import datetime
import json
import os
import random
import sys
import uuid

root, out, files = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)

# ---- the vocabulary: this repository's text ------------------------------------------------
SOURCES = []
for top in ("src", "docs", "configs", "tests", "benches", "scripts"):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        for n in sorted(names):
            if n.endswith((".rs", ".md", ".toml", ".sh", ".py")):
                path = os.path.join(dirpath, n)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (UnicodeDecodeError, OSError):
                    continue
                if len(text) > 400:
                    SOURCES.append((os.path.relpath(path, root), text.splitlines()))
SOURCES.sort()
if not SOURCES:
    sys.exit(f"gen-history: no sources under {root}")
PROSE = []
for rel, lines in SOURCES:
    for line in lines:
        s = line.strip().lstrip("/!#*-> ").strip()
        if len(s) > 40 and " " in s and not s.startswith(("use ", "let ", "fn ", "pub ", "}")):
            PROSE.append(s)
if not PROSE:
    sys.exit("gen-history: no prose found")

PROJECTS = [f"/home/dev/{w}" for w in (
    "glassbox", "api-gateway", "billing", "web", "infra", "notes", "ml-eval", "cli-tools",
    "mobile", "search", "auth", "docs-site", "etl", "scheduler", "payments", "chat", "maps",
    "metrics", "queue", "storage", "crawler", "ledger", "editor", "compiler", "kernel-mods",
    "dashboard", "forms", "pdf-tools", "sync", "backup", "images", "video", "audio", "iot",
    "game", "shop", "blog", "wiki", "mail", "calendar")]
MODELS = ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"]
COMMANDS = ["cargo test --release", "cargo clippy --all-targets", "git status --short",
            "git log --oneline | head", "ls -la src", "rg -n 'fn main' src", "make check",
            "python3 -m pytest -q", "npm run build", "du -sh target"]


def prose(n):
    return " ".join(rng.choice(PROSE) for _ in range(n))


def excerpt(max_lines):
    rel, lines = rng.choice(SOURCES)
    start = rng.randrange(max(1, len(lines) - 5))
    chunk = lines[start:start + rng.randint(5, max_lines)]
    numbered = "\n".join(f"{start + i + 1:6}\u2192{l}" for i, l in enumerate(chunk))
    return rel, numbered, len(chunk)


class Session:
    def __init__(self, no):
        self.project = PROJECTS[no % len(PROJECTS)] if rng.random() < 0.8 else rng.choice(PROJECTS)
        self.id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.parent = None
        self.model = rng.choice(MODELS)
        self.branch = rng.choice(["main", "main", "dev", f"feature/{rng.choice(PROSE).split()[0].lower()[:20]}"])
        self.t = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(
            minutes=no * 37 + rng.randrange(30))
        self.lines = []
        self.size = 0
        self.msg = 0

    def emit(self, obj, chain=True):
        if chain:
            self.t += datetime.timedelta(seconds=rng.randint(1, 40), milliseconds=rng.randrange(1000))
            u = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            base = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
                    "cwd": self.project, "sessionId": self.id, "version": "2.1.3",
                    "gitBranch": self.branch, "uuid": u,
                    "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"}
            base.update(obj)
            obj = base
            self.parent = u
        line = json.dumps(obj, ensure_ascii=False) + "\n"
        self.lines.append(line)
        self.size += len(line.encode())

    def assistant(self, content, stop):
        self.emit({"type": "assistant", "requestId": f"req_{self.id[:8]}_{self.msg}",
                   "message": {"id": f"msg_{self.id[:8]}_{self.msg}", "type": "message",
                               "role": "assistant", "model": self.model, "content": content,
                               "stop_reason": stop, "stop_sequence": None,
                               "usage": {"input_tokens": rng.randint(200, 90000),
                                         "output_tokens": rng.randint(20, 4000)}}})

    def turn(self, target):
        self.emit({"type": "user", "message": {"role": "user", "content": prose(rng.randint(1, 3))}})
        for _ in range(rng.randint(1, 6)):
            if self.size > target:
                break
            self.msg += 1
            if rng.random() < 0.7:
                self.assistant([{"type": "thinking", "thinking": prose(rng.randint(2, 12)),
                                 "signature": "sig"}], None)
            tool = rng.choice(["Read", "Read", "Bash", "Grep", "Edit"])
            tid = f"toolu_{uuid.UUID(int=rng.getrandbits(128)).hex[:24]}"
            rel, text, n = excerpt(rng.choice([20, 60, 120]))
            if tool == "Read":
                inp = {"file_path": f"{self.project}/{rel}"}
                extra = {"type": "text", "file": {"filePath": f"{self.project}/{rel}", "content": text, "numLines": n}}
            elif tool == "Bash":
                inp = {"command": rng.choice(COMMANDS), "description": prose(1)[:60]}
                extra = {"stdout": text, "stderr": "", "interrupted": False}
            elif tool == "Grep":
                inp = {"pattern": rng.choice(PROSE).split()[0], "path": self.project}
                extra = {"mode": "content", "numFiles": rng.randint(1, 9), "content": text}
            else:
                inp = {"file_path": f"{self.project}/{rel}", "old_string": rng.choice(PROSE),
                       "new_string": rng.choice(PROSE)}
                text = f"The file {self.project}/{rel} has been updated."
                extra = {"filePath": f"{self.project}/{rel}"}
            self.assistant([{"type": "tool_use", "id": tid, "name": tool, "input": inp}], "tool_use")
            if rng.random() < 0.3:
                self.emit({"type": "progress", "data": {"type": "bash_progress",
                                                        "output": excerpt(8)[1]}})
            self.emit({"type": "user", "message": {"role": "user", "content": [
                {"tool_use_id": tid, "type": "tool_result", "content": text}]}, "toolUseResult": extra})
        self.msg += 1
        self.assistant([{"type": "text", "text": prose(rng.randint(1, 6))}], "end_turn")


total = 0
for no in range(files):
    s = Session(no)
    # Real session sizes: many small, a long tail of large ones (10-250 KB).
    target = int(min(230_000, max(10_000, rng.lognormvariate(11.0, 0.75))))
    if rng.random() < 0.1:
        s.emit({"type": "summary", "summary": prose(1)[:80], "leafUuid": str(uuid.uuid4())}, chain=False)
    while s.size < target:
        s.turn(target)
    if rng.random() < 0.7:
        s.emit({"type": "custom-title", "customTitle": prose(1)[:60], "sessionId": s.id}, chain=False)
    folder = os.path.join(out, s.project.replace("/", "-"))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, s.id + ".jsonl"), "w", encoding="utf-8") as f:
        f.writelines(s.lines)
    total += s.size
print(f"{files} files, {total / 1e6:.1f} MB (many corpus)")
