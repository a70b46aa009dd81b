#!/usr/bin/env python3
"""Drives `glassbox mcp` with the official MCP Python SDK, as a real client would.

Run by tests/mcp.rs (and by hand). Connects over stdio (spawning BINARY mcp) or over
streamable HTTP (--url, --token), runs one scenario, checks every answer against the
reference sequential-thinking server's rules, and prints one JSON summary line on stdout.
Any failed check prints `FAIL: ...` on stderr and exits 1.

    ledger_client.py --binary target/release/glassbox sequential
    ledger_client.py --url http://127.0.0.1:7341/mcp --token "$(glassbox mcp --print-token)" sequential
"""

import argparse
import asyncio
import json
import os
import sys

from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

LEDGER_TOOLS = [
    "sequentialthinking",
    "thought",
    "session_start",
    "session_list",
    "session_export",
    "session_import",
    "checkpoint",
    "search",
]
REFERENCE_PROPERTIES = {
    "thought",
    "nextThoughtNeeded",
    "thoughtNumber",
    "totalThoughts",
    "isRevision",
    "revisesThought",
    "branchFromThought",
    "branchId",
    "needsMoreThoughts",
}
CRITIQUE_TEXT = "The step assumes the cache is warm; say what happens when it is cold."


class CheckFailed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def server_for(args):
    if args.url:
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
        return streamable_http_client(args.url, http_client=create_mcp_http_client(headers=headers))
    # The SDK passes only a safe subset of the environment; hand on glassbox's own variables.
    env = {k: v for k, v in os.environ.items() if k.startswith("GLASSBOX_")}
    return StdioServerParameters(command=args.binary, args=["mcp"], env=env)


def client_for(args, sampling=False):
    kwargs = {"mode": args.mode}
    if sampling:

        async def sample(_context, params):
            # A stand-in for the client's model: answer the critique request.
            check(params.max_tokens > 0, "critique request without maxTokens")
            check(params.system_prompt, "critique request without a system prompt")
            if args.expect_system is not None:
                check(params.system_prompt == args.expect_system, f"system prompt: {params.system_prompt!r}")
            if args.expect_max_tokens is not None:
                check(params.max_tokens == args.expect_max_tokens, f"maxTokens: {params.max_tokens}")
            asked = " ".join(m.content.text for m in params.messages if getattr(m.content, "text", None))
            check("Thought" in asked, f"critique request does not show the thoughts: {asked!r}")
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(type="text", text=CRITIQUE_TEXT),
                model="stand-in-critic",
                stop_reason="endTurn",
            )

        kwargs["sampling_callback"] = sample
    return Client(server_for(args), **kwargs)


def payload(result):
    """The JSON in a tool result's text, checked against its structured content."""
    check(result.content and result.content[0].type == "text", f"no text content: {result}")
    data = json.loads(result.content[0].text)
    if result.structured_content is not None:
        check(data == result.structured_content, "text and structuredContent differ")
    return data


async def call_ok(client, name, arguments):
    result = await client.call_tool(name, arguments)
    check(not result.is_error, f"{name} failed: {result.content[0].text if result.content else result}")
    return payload(result)


async def call_err(client, name, arguments, needle):
    result = await client.call_tool(name, arguments)
    check(result.is_error, f"{name} {arguments!r} should have failed but returned {result.content}")
    text = result.content[0].text
    check(needle in text, f"{name} error {text!r} does not mention {needle!r}")
    return text


def sequential_plan():
    """20 thoughts: two revisions (6 → 3, 15 → 12), one three-thought branch from 7, totals
    exceeded at 11 and 12, and some numbers and booleans sent as strings."""
    calls = []
    for i in range(1, 21):
        a = {
            "thought": f"Step {i} — étape {i}: reasoning about the cache layout.",
            "nextThoughtNeeded": i < 20,
            "thoughtNumber": i,
            "totalThoughts": 10 if i <= 12 else 20,
        }
        if i == 6:
            a.update(isRevision=True, revisesThought=3)
        if i == 15:
            a.update(isRevision="true", revisesThought="12")
        if i in (9, 10, 11):
            a.update(branchFromThought=7, branchId="alt-approach")
        if i == 4:
            a.update(thoughtNumber="4", nextThoughtNeeded="true")
        if i == 13:
            a["totalThoughts"] = "20"
        if i == 17:
            a["needsMoreThoughts"] = False
        calls.append(a)
    return calls


def expected_output(i, history):
    total = 10 if i <= 12 else 20
    return {
        "thoughtNumber": i,
        "totalThoughts": max(total, i),
        "nextThoughtNeeded": i < 20,
        "branches": ["alt-approach"] if i >= 9 else [],
        "thoughtHistoryLength": history,
    }


async def check_tools(client):
    tools = (await client.list_tools()).tools
    names = [t.name for t in tools]
    check(names == LEDGER_TOOLS, f"tools listed: {names}")
    st = tools[0]
    schema = st.input_schema
    check(set(schema["properties"]) == REFERENCE_PROPERTIES, f"sequentialthinking properties: {set(schema['properties'])}")
    check(schema["required"] == ["thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts"], "required fields")
    check(schema["properties"]["thoughtNumber"]["type"] == "integer", "thoughtNumber is an integer")
    check(st.output_schema is not None, "sequentialthinking has an output schema")
    return names


async def scenario_sequential(args):
    async with client_for(args) as client:
        names = await check_tools(client)
        outputs = []
        for i, arguments in enumerate(sequential_plan(), start=1):
            result = await client.call_tool("sequentialthinking", arguments)
            check(not result.is_error, f"call {i} failed: {result.content}")
            want = expected_output(i, i)
            check(result.structured_content == want, f"call {i}: structured {result.structured_content} != {want}")
            # The text is exactly what the reference server prints (JSON.stringify(x, null, 2)).
            check(result.content[0].text == json.dumps(want, indent=2, ensure_ascii=False), f"call {i}: text {result.content[0].text!r}")
            outputs.append(want)
        return {"tools": names, "outputs": outputs, "protocol": client.protocol_version}


async def scenario_bad(args):
    good = {"thought": "a good thought", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 3}
    bad = [
        ({"nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1}, "thought is required"),
        ({**good, "thoughtNumber": "abc"}, "thoughtNumber must be a whole number"),
        ({**good, "thoughtNumber": 0}, "thoughtNumber must be a whole number"),
        ({**good, "totalThoughts": 2.5}, "totalThoughts must be a whole number"),
        ({**good, "nextThoughtNeeded": "maybe"}, "nextThoughtNeeded must be a boolean"),
        ({**good, "thought": 42}, "thought must be a string"),
        ({**good, "thought": "   "}, "thought must not be empty"),
        ({**good, "branchId": ""}, "branchId must not be empty"),
        ({**good, "revisesThought": [1]}, "revisesThought must be a whole number"),
    ]
    failures = 0
    async with client_for(args) as client:
        await client.list_tools()
        n = 0
        for arguments, needle in bad:
            text = await call_err(client, "sequentialthinking", arguments, needle)
            check(json.loads(text).get("status") == "failed", f"reference error shape: {text}")
            failures += 1
            n += 1
            out = await call_ok(client, "sequentialthinking", {**good, "thoughtNumber": n})
            check(out["thoughtHistoryLength"] == n, f"history after {n} good calls: {out}")
        for name, arguments, needle in [
            ("thought", {**good, "sessionId": "ffffffff"}, "not found"),
            ("thought", {**good, "critique": "sometimes"}, "critique must be a boolean"),
            ("checkpoint", {"verdict": "maybe", "thoughtNumber": 1}, "verdict must be verified, questionable or disagree"),
            ("checkpoint", {"verdict": "disagree", "thoughtNumber": 1, "correction": "x" * 5001}, "longer than 5000"),
            ("checkpoint", {"verdict": "verified"}, "give thoughtId"),
            ("checkpoint", {"verdict": "verified", "thoughtId": "zz"}, "not found"),
            ("search", {"query": "  "}, "query must contain a word"),
            ("search", {}, "query is required"),
            ("session_export", {"sessionId": "0123456789"}, "not found"),
            ("session_import", {"data": "{not json"}, "data:1:2: not JSON"),
            ("session_import", {"data": {"format": "other"}}, "expected 'glassbox-session'"),
            ("session_import", {"data": 7}, "data must be a session export"),
            ("session_import", {}, "data is required"),
            ("session_list", {"limit": -3}, "limit must be a whole number"),
        ]:
            await call_err(client, name, arguments, needle)
            failures += 1
            n += 1
            await call_ok(client, "sequentialthinking", {**good, "thoughtNumber": n})
        try:
            await client.call_tool("no_such_tool", {})
            check(False, "an unknown tool should be a protocol error")
        except MCPError as e:
            check("unknown tool 'no_such_tool'" in str(e), f"unknown tool error: {e}")
        n += 1
        out = await call_ok(client, "sequentialthinking", {**good, "thoughtNumber": n})
        check(out["thoughtHistoryLength"] == n, f"final history: {out}")
    return {"errors": failures + 1, "good": n}


async def scenario_burst(args):
    texts = []
    async with client_for(args) as client:
        for i in range(1, args.count + 1):
            text = f"{args.tag} thought {i}"
            out = await call_ok(
                client,
                "sequentialthinking",
                {"thought": text, "nextThoughtNeeded": i < args.count, "thoughtNumber": i, "totalThoughts": args.count},
            )
            check(out["thoughtHistoryLength"] == i, f"{args.tag}: history {out}")
            # Printed only once the server has answered, i.e. the thought is committed.
            print(f"ack {text}", flush=True)
            texts.append(text)
    return {"texts": texts}


async def scenario_critique(args):
    sampling = args.sampling == "yes"
    async with client_for(args, sampling=sampling) as client:
        first = await call_ok(
            client, "thought", {"thought": "Use a hash map: lookups are O(1).", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
        )
        check("critique" not in first, "no critique unless asked")
        out = await call_ok(
            client,
            "thought",
            {
                "thought": "So the index is fast in every case.",
                "nextThoughtNeeded": False,
                "thoughtNumber": 2,
                "totalThoughts": 2,
                "thoughtType": "conclusion",
                "critique": True,
            },
        )
        check(out["sessionId"] == first["sessionId"], "same session on one connection")
        critique = out.get("critique", {})
        if sampling:
            check(critique.get("status") == "stored", f"critique: {critique}")
            check(critique.get("text") == CRITIQUE_TEXT, f"critique text: {critique}")
            check(critique.get("model") == "stand-in-critic", f"critique model: {critique}")
        else:
            check(critique.get("status") == "unavailable", f"critique without sampling: {critique}")
            check("sampling" in critique.get("reason", ""), f"reason: {critique}")
        return {"sessionId": out["sessionId"], "thoughtId": out["thoughtId"], "critique": critique, "protocol": client.protocol_version}


async def scenario_ledger(args):
    async with client_for(args) as client:
        started = await call_ok(client, "session_start", {"title": "Ledger tools walk-through"})
        sid = started["sessionId"]
        ids = []
        for i, text in enumerate(["Measure first.", "The bottleneck is the zebrafish parser.", "Rewrite the parser."], start=1):
            args_ = {"thought": text, "nextThoughtNeeded": i < 3, "thoughtNumber": i, "totalThoughts": 3}
            if i == 2:
                args_["sessionId"] = sid[:12]
                args_["thoughtType"] = "hypothesis"
            out = await call_ok(client, "thought", args_)
            check(out["sessionId"] == sid, f"thought {i} went to {out['sessionId']}, not the started session {sid}")
            check(out["thoughtHistoryLength"] == i, f"thought {i}: {out}")
            ids.append(out["thoughtId"])
        cp = await call_ok(client, "checkpoint", {"thoughtNumber": 2, "verdict": "disagree", "correction": "Profile it: the parser is not the bottleneck."})
        check(cp["thoughtId"] == ids[1] and cp["edge"] == "contradicts", f"checkpoint: {cp}")
        ok = await call_ok(client, "checkpoint", {"thoughtId": ids[0], "verdict": "verified"})
        check(ok["edge"] == "supports", f"verified checkpoint: {ok}")
        hits = (await call_ok(client, "search", {"query": "zebrafish", "sessionId": sid}))["hits"]
        check(len(hits) == 1 and hits[0]["nodeId"] == ids[1] and hits[0]["thoughtNumber"] == 2, f"search hits: {hits}")
        check("zebrafish" in hits[0]["snippet"], f"snippet: {hits[0]}")
        listed = (await call_ok(client, "session_list", {}))["sessions"]
        check(any(s["id"] == sid and s["title"] == "Ledger tools walk-through" for s in listed), f"session_list: {listed}")
        export = await call_ok(client, "session_export", {})
        check(export["format"] == "glassbox-session" and export["session"]["id"] == sid, "export header")
        kinds = sorted(n["kind"] for n in export["nodes"])
        check(kinds == ["human_annotation"] * 2 + ["ledger_thought"] * 3, f"exported kinds: {kinds}")
        await call_err(client, "session_import", {"data": json.dumps(export)}, "pass replace: true")
        report = await call_ok(client, "session_import", {"data": json.dumps(export), "replace": True})
        check(report == {"sessionId": sid, "nodes": 5, "edges": 2, "replaced": True}, f"import report: {report}")
        again = await call_ok(client, "session_export", {"sessionId": sid})
        check(again["nodes"] == export["nodes"] and again["edges"] == export["edges"], "lossless round trip")
        return {"sessionId": sid, "thoughtIds": ids}


SCENARIOS = {
    "sequential": scenario_sequential,
    "bad": scenario_bad,
    "burst": scenario_burst,
    "critique": scenario_critique,
    "ledger": scenario_ledger,
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("--binary", help="the glassbox binary (stdio)")
    p.add_argument("--url", help="streamable HTTP endpoint, e.g. http://127.0.0.1:7341/mcp")
    p.add_argument("--token", help="bearer token for --url")
    p.add_argument("--mode", default="auto", help="auto (2026-07-28 when the server offers it) or legacy (initialize)")
    p.add_argument("--count", type=int, default=10, help="burst: thoughts to send")
    p.add_argument("--tag", default="burst", help="burst: text prefix")
    p.add_argument("--sampling", choices=["yes", "no"], default="yes", help="critique: offer sampling")
    p.add_argument("--expect-system", help="critique: the system prompt the request must carry")
    p.add_argument("--expect-max-tokens", type=int, help="critique: the maxTokens the request must carry")
    args = p.parse_args()
    if not args.url and not args.binary:
        p.error("give --binary (stdio) or --url (HTTP)")
    try:
        summary = asyncio.run(SCENARIOS[args.scenario](args))
    except CheckFailed as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
