"""Writes N generated memory entries (one JSON object per line, `glassbox memory import`
format) scoped to a project folder, for the store and hook benches.

usage: python3 scripts/gen-learnings.py N PROJECT_DIR > entries.jsonl
"""
import json
import random
import sys
import uuid

n, project = int(sys.argv[1]), sys.argv[2]
random.seed(7)
topics = ["redis", "postgres", "docker", "ci", "tests", "release", "auth", "cache", "api",
          "frontend", "logging", "metrics", "deploy", "rust", "python", "migrations"]
verbs = ["needs", "breaks without", "is configured by", "depends on", "was replaced by",
         "should use", "runs before", "is documented in"]
for i in range(n):
    a, b = random.sample(topics, 2)
    print(json.dumps({
        "id": str(uuid.uuid4()), "tier": "archival", "scope": f"project:{project}",
        "content": f"The {a} setup {random.choice(verbs)} the {b} step (note {i}).",
        "tags": [a, b], "importance": 0.5,
        "created_at": "2026-10-01T10:00:00Z", "updated_at": "2026-10-01T10:00:00Z",
        "provenance": {"origin": "bench"},
    }))
