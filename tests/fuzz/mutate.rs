//! Input generators: byte mutations of seeds, structural mutations of JSON values, of SSE
//! frames, of line-oriented files (NDJSON, JSONL, TOML), and random chunkings of a body.

use fastrand::Rng;
use serde_json::{Map, Value, json};

/// Tokens spliced into inputs: the words the decoders look for and values at the edges.
pub const DICT: &[&str] = &[
    "data: ",
    "event: ",
    "id: ",
    ": keep-alive",
    "\n\n",
    "\r\n",
    "\r",
    "[DONE]",
    "<think>",
    "</think>",
    "<thinking>",
    "</thinking>",
    "<",
    "</",
    "\"type\"",
    "\"text\"",
    "\"thinking\"",
    "\"content\"",
    "\"delta\"",
    "\"index\"",
    "\"message\"",
    "\"tool_use\"",
    "\"tool_calls\"",
    "\"arguments\"",
    "\"error\"",
    "\"usage\"",
    "\"done\":true",
    "null",
    "true",
    "-1",
    "0",
    "1e999",
    "-0.0",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "é",
    "😀",
    "\u{202e}",
    "{",
    "}",
    "[",
    "]",
    "[[[[[[[[",
    "{\"a\":{\"a\":{\"a\":",
    "=",
    "\"\"\"",
    "'''",
    "[[a]]",
    "[a.b]",
    "\\",
];

/// Strings used where a mutated JSON value needs one.
const WORDS: &[&str] = &[
    "",
    " ",
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "text_delta",
    "thinking_delta",
    "signature_delta",
    "input_json_delta",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_start",
    "message_delta",
    "message_stop",
    "ping",
    "error",
    "overloaded_error",
    "end_turn",
    "max_tokens",
    "tool_calls",
    "stop",
    "length",
    "user",
    "assistant",
    "system",
    "summary",
    "custom-title",
    "progress",
    "compact_boundary",
    "2026-01-01T00:00:00Z",
    "2026-13-45T99:99:99Z",
    "+275760-09-13T00:00:00Z",
    "-262143-01-01T00:00:00Z",
    "11111111-1111-4111-8111-111111111111",
    "00000000-0000-0000-0000-000000000000",
    "<think>",
    "</think>",
    "<think>a</think>b",
    "é😀\u{0}",
    "verified",
    "questionable",
    "disagree",
    "glassbox-session",
    "\"}{",
    "agent-x",
    "../../etc",
];

pub fn pick<'a, T>(rng: &mut Rng, items: &'a [T]) -> &'a T {
    &items[rng.usize(..items.len())]
}

/// A random scalar or small container.
pub fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.u8(..14) {
        0 => Value::Null,
        1 => json!(rng.bool()),
        2 => json!(*pick(
            rng,
            &[0i64, 1, -1, i64::MAX, i64::MIN, 4_294_967_296, 2]
        )),
        3 => json!(*pick(rng, &[u64::MAX, 1 << 53, 1 << 63])),
        4 => json!(*pick(rng, &[0.5f64, -0.0, 1e308, -1e308, 2.0, 1e-320])),
        5..=7 => json!(*pick(rng, WORDS)),
        8 => json!("x".repeat(rng.usize(..5000))),
        9 if depth < 4 => Value::Array(
            (0..rng.usize(..4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        10 if depth < 4 => {
            let mut m = Map::new();
            for _ in 0..rng.usize(..4) {
                m.insert(pick(rng, WORDS).to_string(), random_value(rng, depth + 1));
            }
            Value::Object(m)
        }
        11 => deep(rng.usize(1..200)),
        _ => json!(pick(rng, WORDS).repeat(rng.usize(1..4))),
    }
}

/// `[[[...]]]` or `{"a":{"a":...}}` `n` levels deep.
pub fn deep(n: usize) -> Value {
    let mut v = Value::Null;
    for i in 0..n {
        v = if i % 2 == 0 {
            Value::Array(vec![v])
        } else {
            json!({ "a": v })
        };
    }
    v
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(m) => m.values().map(count).sum(),
        _ => 0,
    }
}

/// Applies `f` to the `n`th value of `v` (pre-order); returns whether it was reached.
fn mutate_at(v: &mut Value, n: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
    if *n == 0 {
        f(v);
        return true;
    }
    *n -= 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|c| mutate_at(c, n, f)),
        Value::Object(m) => m.values_mut().any(|c| mutate_at(c, n, f)),
        _ => false,
    }
}

/// One structural change somewhere in `v`.
pub fn mutate_value(rng: &mut Rng, v: &mut Value) {
    let total = count(v);
    let mut n = rng.usize(..total);
    let op = rng.u8(..10);
    mutate_at(v, &mut n, &mut |node: &mut Value| match (op, &mut *node) {
        (0, Value::Object(m)) if !m.is_empty() => {
            let k = m.keys().nth(rng.usize(..m.len())).cloned();
            if let Some(k) = k {
                m.remove(&k);
            }
        }
        (1, Value::Object(m)) => {
            m.insert(pick(rng, WORDS).to_string(), random_value(rng, 0));
        }
        (2, Value::Array(a)) if !a.is_empty() => {
            let i = rng.usize(..a.len());
            if rng.bool() {
                let c = a[i].clone();
                a.insert(i, c);
            } else {
                a.remove(i);
            }
        }
        (3, Value::String(s)) => {
            *s = if rng.bool() {
                pick(rng, WORDS).to_string()
            } else {
                let mut b = s.clone().into_bytes();
                bytes(rng, &mut b, 2);
                String::from_utf8_lossy(&b).into_owned()
            };
        }
        (4, Value::Number(_)) => *node = random_value(rng, 3),
        (5, _) => *node = Value::Array(vec![node.take()]),
        _ => *node = random_value(rng, 1),
    });
}

/// One to `max` byte-level mutations of `b` in place.
pub fn bytes(rng: &mut Rng, b: &mut Vec<u8>, max: usize) {
    let rounds = rng.usize(1..=max.max(1));
    for _ in 0..rounds {
        let len = b.len();
        match rng.u8(..11) {
            0 if len > 0 => {
                let i = rng.usize(..len);
                b[i] ^= 1 << rng.u8(..8);
            }
            1 if len > 0 => {
                let i = rng.usize(..len);
                b[i] = *pick(
                    rng,
                    &[0u8, 0xff, 0x7f, 0x80, b'"', b'\n', b'\\', b'{', b'<', 0xc3],
                );
            }
            2 => {
                let i = rng.usize(..=len);
                let n = rng.usize(1..16);
                let ins: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
                b.splice(i..i, ins);
            }
            3 if len > 0 => {
                let i = rng.usize(..len);
                let j = (i + rng.usize(1..64)).min(len);
                b.drain(i..j);
            }
            4 if len > 0 => {
                let i = rng.usize(..len);
                let j = (i + rng.usize(1..128)).min(len);
                let dup = b[i..j].to_vec();
                let at = rng.usize(..=b.len());
                b.splice(at..at, dup);
            }
            5 | 6 => {
                let i = rng.usize(..=len);
                let tok = pick(rng, DICT).as_bytes().to_vec();
                b.splice(i..i, tok);
            }
            7 if len > 0 => {
                b.truncate(rng.usize(..len));
            }
            8 if len > 0 => {
                // Overwrite with a token.
                let i = rng.usize(..len);
                let tok = pick(rng, DICT).as_bytes();
                let j = (i + tok.len()).min(len);
                b.splice(i..j, tok.iter().copied());
            }
            9 if len > 1 => {
                let i = rng.usize(..len);
                let j = rng.usize(..len);
                b.swap(i, j);
            }
            _ => {
                let i = rng.usize(..=len);
                b.insert(i, rng.u8(..));
            }
        }
    }
}

/// One seed, mutated: byte-level, or (when it parses) structurally as JSON.
pub fn json_doc(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let seed = pick(rng, seeds);
    if rng.u8(..4) != 0
        && let Ok(mut v) = serde_json::from_slice::<Value>(seed)
    {
        let rounds = if rng.bool() { 1 } else { rng.usize(1..6) };
        for _ in 0..rounds {
            mutate_value(rng, &mut v);
        }
        let mut out = if rng.bool() {
            serde_json::to_vec(&v).unwrap_or_default()
        } else {
            serde_json::to_vec_pretty(&v).unwrap_or_default()
        };
        if rng.u8(..4) == 0 {
            bytes(rng, &mut out, 3);
        }
        return out;
    }
    let mut b = seed.clone();
    let n = rng.usize(1..8);
    bytes(rng, &mut b, n);
    b
}

/// Splits `text` into records at `sep`, mutates the records (structurally where one is JSON,
/// after an optional `data: ` prefix) and their order, and joins them again.
pub fn records(rng: &mut Rng, seeds: &[Vec<u8>], sep: &str) -> Vec<u8> {
    let seed = String::from_utf8_lossy(pick(rng, seeds).as_slice()).into_owned();
    let mut recs: Vec<String> = seed.split(sep).map(str::to_string).collect();
    // Sometimes splice in records of another seed.
    if rng.u8(..4) == 0 {
        let other = String::from_utf8_lossy(pick(rng, seeds).as_slice()).into_owned();
        let theirs: Vec<&str> = other.split(sep).collect();
        let at = rng.usize(..=recs.len());
        let r = pick(rng, &theirs).to_string();
        recs.insert(at, r);
    }
    for _ in 0..rng.usize(1..6) {
        if recs.is_empty() {
            break;
        }
        let i = rng.usize(..recs.len());
        match rng.u8(..8) {
            0 => {
                recs.remove(i);
            }
            1 => {
                let r = recs[i].clone();
                recs.insert(rng.usize(..=recs.len()), r);
            }
            2 => {
                let j = rng.usize(..recs.len());
                recs.swap(i, j);
            }
            3 => {
                let mut b = recs[i].clone().into_bytes();
                bytes(rng, &mut b, 3);
                recs[i] = String::from_utf8_lossy(&b).into_owned();
            }
            _ => recs[i] = mutate_record(rng, &recs[i]),
        }
    }
    let mut out = recs.join(sep).into_bytes();
    if rng.u8(..8) == 0 {
        bytes(rng, &mut out, 3);
    }
    out
}

/// Mutates the JSON in one record: a whole JSON line, or the `data:` line(s) of an SSE frame.
fn mutate_record(rng: &mut Rng, rec: &str) -> String {
    let mut lines: Vec<String> = rec.split('\n').map(str::to_string).collect();
    for line in lines.iter_mut() {
        let (prefix, body) = match line.strip_prefix("data: ") {
            Some(b) => ("data: ", b.to_string()),
            None => match line.strip_prefix("event: ") {
                Some(_) if rng.u8(..4) == 0 => {
                    *line = format!("event: {}", pick(rng, WORDS));
                    continue;
                }
                _ => ("", line.clone()),
            },
        };
        if let Ok(mut v) = serde_json::from_str::<Value>(&body) {
            for _ in 0..rng.usize(1..4) {
                mutate_value(rng, &mut v);
            }
            *line = format!("{prefix}{v}");
        }
    }
    lines.join("\n")
}

/// Mutates a TOML file line by line: values replaced by other TOML values (deep arrays and
/// inline tables among them), lines dropped, doubled, swapped, or bytes changed.
pub fn toml_doc(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    const VALUES: &[&str] = &[
        "0",
        "-1",
        "9223372036854775807",
        "-9223372036854775808",
        "1e999",
        "nan",
        "inf",
        "-inf",
        "0.5",
        "true",
        "\"\"",
        "\"none\"",
        "\"ctrl+alt+shift+x\"",
        "\"#zzzzzz\"",
        "\"#fff\"",
        "\"rgb(1,2,3)\"",
        "\"bold underline\"",
        "[]",
        "[\"a\", 1]",
        "{}",
        "{ a = 1 }",
        "1979-05-27T07:32:00Z",
        "'''\nx'''",
        "\"\\u0000\"",
        "\"ä😀\"",
    ];
    let seed = String::from_utf8_lossy(pick(rng, seeds).as_slice()).into_owned();
    let mut lines: Vec<String> = seed.lines().map(str::to_string).collect();
    let rounds = if rng.bool() { 1 } else { rng.usize(1..6) };
    for _ in 0..rounds {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = rng.usize(..lines.len());
        match rng.u8(..8) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(rng.usize(..=lines.len()), l);
            }
            2 => {
                let j = rng.usize(..lines.len());
                lines.swap(i, j);
            }
            3 => {
                let mut b = lines[i].clone().into_bytes();
                bytes(rng, &mut b, 3);
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
            4 => {
                let n = rng.usize(1..3000);
                let key = lines[i].split('=').next().unwrap_or("x").trim().to_string();
                let key = if key.is_empty() || key.starts_with('[') {
                    "x".to_string()
                } else {
                    key
                };
                let (open, close) = if rng.bool() { ("[", "]") } else { ("{a=", "}") };
                lines[i] = format!("{key} = {}1{}", open.repeat(n), close.repeat(n));
            }
            _ => {
                if let Some((k, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{}= {}", k, pick(rng, VALUES));
                } else {
                    lines[i] = format!("{} = {}", pick(rng, WORDS), pick(rng, VALUES));
                }
            }
        }
    }
    let mut out = lines.join("\n").into_bytes();
    if rng.u8(..6) == 0 {
        bytes(rng, &mut out, 3);
    }
    out
}

/// Random chunk boundaries for `len` bytes, derived from the bytes themselves so the same
/// input is always fed the same way.
pub fn chunks(input: &[u8]) -> Vec<std::ops::Range<usize>> {
    let h = input.iter().take(64).fold(input.len() as u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = Rng::with_seed(h);
    let mut out = Vec::new();
    let mut at = 0;
    let whole = rng.u8(..4) == 0;
    while at < input.len() {
        let n = if whole {
            input.len()
        } else {
            match rng.u8(..4) {
                0 => 1,
                1 => rng.usize(1..8),
                2 => rng.usize(1..64),
                _ => rng.usize(1..1024),
            }
        };
        let end = (at + n).min(input.len());
        out.push(at..end);
        at = end;
    }
    out
}

/// Reads a fixture file (relative to the crate root).
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file in `dir` (relative to the crate root) whose name satisfies `keep`.
pub fn fixtures(dir: &str, keep: impl Fn(&str) -> bool) -> Vec<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| keep(n))
        .collect();
    names.sort();
    let seeds: Vec<Vec<u8>> = names
        .iter()
        .map(|n| fixture(&format!("{dir}/{n}")))
        .collect();
    assert!(!seeds.is_empty(), "no seeds in {dir}");
    seeds
}
