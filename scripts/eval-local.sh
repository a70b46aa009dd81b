#!/usr/bin/env bash
# Runs the structured engines on the local model over a fixed set of prompts and prints one
# line per engine: valid structured outputs / total, loops, mean seconds per run.
#
#   scripts/eval-local.sh [-n N] [--model NAME|PATH] [--bin PATH]
#
#   -n N            prompts per engine (default 20, at most 20)
#   --model NAME    local model: smollm2, gemma3 or a GGUF path (default: the config's)
#   --bin PATH      the glassbox binary (default: target/release/glassbox, built if missing)
#
# Each engine runs as a user would run it (`glassbox fork|got|verify|insights|ask --json`)
# in a throw-away data dir, with no API key, so the local model answers. A structured output
# counts as valid when the engine could read it: a fork branch or comparison without error,
# a GoT thought with text and a score, a verify step with a verdict that was readable, an
# insights answer with at least one insight whose evidence names a real node. Loops are the
# `loop` events `ask` reports. Slow by nature: about an hour for -n 20 on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

N=20
MODEL=""
BIN=target/release/glassbox
while (($# > 0)); do
    case $1 in
        -n) N=$2; shift 2 ;;
        --model) MODEL=$2; shift 2 ;;
        --bin) BIN=$2; shift 2 ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "eval-local: unknown option $1" >&2; exit 2 ;;
    esac
done
((N >= 1 && N <= 20)) || { echo "eval-local: -n must be 1..20" >&2; exit 2; }
[[ -x $BIN ]] || cargo build --release
command -v python3 >/dev/null || { echo "eval-local: python3 is needed" >&2; exit 1; }

DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
export GLASSBOX_DATA_DIR=$DATA GLASSBOX_CONFIG_DIR=$DATA/config
unset ANTHROPIC_API_KEY OPENAI_API_KEY
ARGS=(--provider local)
[[ -n $MODEL ]] && ARGS+=(--model "$MODEL")

exec python3 - "$BIN" "$N" "${ARGS[@]}" <<'PY'
import json, subprocess, sys, time

bin_, n, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

QUESTIONS = [
    "Should a team of three rewrite a legacy billing app?",
    "Is it worth learning Rust as a first language?",
    "Should a small shop move its servers to the cloud?",
    "Should a city ban cars from its centre?",
    "Is a four-day work week good for a startup?",
    "Should a library replace printed books with e-books?",
    "Should a school teach programming from age seven?",
    "Is remote work better than office work for juniors?",
    "Should a bakery open a second shop or grow online?",
    "Should a family buy an electric car this year?",
    "Is it wise to split a monolith into microservices?",
    "Should a student take a gap year before university?",
    "Should a band sign with a label or stay independent?",
    "Is open-sourcing a company's main product a good idea?",
    "Should a hospital adopt AI triage?",
    "Should a town build a bypass road?",
    "Is a mechanical keyboard worth the money?",
    "Should a team adopt pair programming full time?",
    "Should a museum charge for entry?",
    "Should a farmer switch to organic crops?",
]
PROBLEMS = [
    "Plan a 3-step approach to learn Rust",
    "Find a way to cut a cloud bill by a third",
    "Plan a week of cheap healthy dinners",
    "Design a study plan for a history exam",
    "Plan how to move house in one weekend",
    "Reduce the build time of a large project",
    "Plan a small garden for a balcony",
    "Organise a meetup for 30 people",
    "Plan how to learn to touch type",
    "Make a slow web page load faster",
    "Plan a budget for a first apartment",
    "Train for a first 10 km run",
    "Set up backups for a family's photos",
    "Plan a two-day city trip on a budget",
    "Teach a child to ride a bike",
    "Write a short story in a weekend",
    "Reduce food waste at home",
    "Prepare for a job interview",
    "Start a vegetable compost",
    "Plan a code review process for a team",
]
CHAINS = [
    ["We need the cost of 3 apples at 2 dollars each.", "Each apple costs 2 dollars.",
     "3 times 2 is 6.", "So the total is 6 dollars."],
    ["12 is divisible by 2.", "12 / 2 = 6 and 6 / 2 = 3.", "3 is prime.",
     "So 12 = 2 x 2 x 3."],
    ["A train goes 60 km in 1 hour.", "In 2 hours it goes 120 km.",
     "Speed is distance over time.", "So its speed is 60 km/h."],
    ["All birds have feathers.", "A penguin is a bird.", "So a penguin has feathers.",
     "Therefore penguins can fly."],
    ["Water boils at 100 C at sea level.", "The pot is at sea level.",
     "The thermometer reads 100 C.", "So the water is boiling."],
]
ASKS = [
    "Explain step by step how to make tea",
    "Explain step by step how to boil an egg",
    "List the steps to plant a tree",
    "Explain how to change a bicycle tyre",
    "Describe how to write a good email",
]

def run(argv):
    start = time.time()
    p = subprocess.run([bin_, *args, *argv], capture_output=True, text=True)
    return p, time.time() - start

def show(session):
    p, _ = run(["sessions", "show", session, "--json"])
    return json.loads(p.stdout) if p.returncode == 0 else {"nodes": []}

results = {}
def record(engine, valid, total, secs, loops=0):
    r = results.setdefault(engine, [0, 0, 0.0, 0, 0])
    r[0] += valid; r[1] += total; r[2] += secs; r[3] += loops; r[4] += 1

fork_sessions = []
for q in QUESTIONS[:n]:
    p, secs = run(["fork", q, "--styles", "conservative,contrarian", "--json"])
    try:
        d = json.loads(p.stdout)
        branches = d["branches"]
        valid = sum(1 for b in branches if not b.get("error") and b.get("confidence", 0) > 0)
        valid += 0 if d.get("comparisonError") else 1
        fork_sessions.append(d["sessionId"])
    except (ValueError, KeyError):
        valid = 0
    record("fork", valid, 3, secs)

for prob in PROBLEMS[:n]:
    p, secs = run(["got", prob, "--strategy", "bfs", "--max-depth", "2", "--branching", "2", "--json"])
    try:
        d = json.loads(p.stdout)
        nodes = [x for x in show(d["sessionId"])["nodes"] if x.get("kind") == "got_thought"]
        valid = sum(1 for x in nodes if x.get("text", "").strip() and x.get("meta", {}).get("score") is not None)
        total = max(len(nodes), 1)
    except (ValueError, KeyError):
        valid, total = 0, 1
    record("got", valid, total, secs)

import os, tempfile
for i in range(n):
    chain = CHAINS[i % len(CHAINS)]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([{"content": c} for c in chain], f)
    p, secs = run(["verify", "--steps-file", f.name, "--json"])
    os.unlink(f.name)
    try:
        steps = json.loads(p.stdout)["steps"]
        valid = sum(1 for s in steps if s.get("unreadable") is None)
    except (ValueError, KeyError):
        valid = 0
    record("verify", valid, len(chain), secs)

for s in fork_sessions[:n]:
    p, secs = run(["insights", s, "--json"])
    try:
        d = json.loads(p.stdout)
        ok = any(i.get("evidence") for i in d.get("insights", [])) and not d.get("invalidNodeRefs")
    except ValueError:
        ok = False
    record("insights", int(ok), 1, secs)

for i in range(n):
    p, secs = run(["ask", ASKS[i % len(ASKS)], "--json"])
    loops = 0
    for line in p.stdout.splitlines():
        try:
            if json.loads(line).get("type") == "loop":
                loops += 1
        except ValueError:
            pass
    record("ask", 0, 0, secs, loops)

for engine, (valid, total, secs, loops, runs) in results.items():
    rate = f"{valid}/{total} valid ({100 * valid / total:.0f}%)" if total else "free text"
    print(f"{engine:9} {rate:24} loops {loops:<3} mean {secs / runs:6.1f} s over {runs} runs")
PY
