//! Fuzz harnesses for every decoder of input glassbox did not write: the Anthropic,
//! OpenAI-compatible and Ollama stream decoders, `<think>` tag splitting, the Claude Code
//! transcript importer (single lines and whole sessions), `import json`, MCP tool arguments,
//! and the config, keymap and theme files.
//!
//! Each harness feeds mutations of seeds taken from the fixtures through the public API and
//! fails on any panic or any input slower than one second (see `fuzz/engine.rs` for the
//! budget variables). In the normal test suite each runs a few hundred inputs;
//! `scripts/fuzz.sh [SECONDS]` runs them for longer and prints the table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "fuzz/engine.rs"]
mod engine;
#[path = "fuzz/mutate.rs"]
mod mutate;

use std::path::{Path, PathBuf};

use fastrand::Rng;
use serde_json::{Map, Value};

use glassbox::app::keymap::{Keymap, help_sections};
use glassbox::config::{ConfigSources, load};
use glassbox::engines::llm::StreamEvent;
use glassbox::engines::llm::anthropic::AnthropicDecoder;
use glassbox::engines::llm::ollama::OllamaDecoder;
use glassbox::engines::llm::openai::OpenAiDecoder;
use glassbox::engines::llm::think_tags::{Segment, ThinkSplitter, merge_into};
use glassbox::engines::llm::wire::WireDecoder;
use glassbox::engines::mcp::args::{
    ThoughtArgs, optional_bool, optional_count, optional_label, optional_string,
};
use glassbox::engines::mcp::ledger::{self, SessionTarget, Verdict};
use glassbox::engines::transcript::{Importer, export};
use glassbox::store::{NodeId, Session, SessionSource, Store};
use glassbox::views::theme::{ColorDepth, Theme};

/// The loop itself: panics and slow inputs are caught, counted and saved, and accepted
/// inputs counted.
#[test]
fn the_loop_catches_panics_and_slow_inputs() {
    let budget = engine::Budget {
        cases: Some(100),
        until: None,
    };
    let mut n = 0u8;
    let make = move |_: &mut Rng| {
        n += 1;
        vec![n]
    };
    let out = engine::fuzz("self_check", budget, make, |input| {
        assert!(input[0] % 10 != 3, "planted");
        if input[0] == 100 {
            std::thread::sleep(engine::SLOW + std::time::Duration::from_millis(50));
        }
        input[0] % 2 == 0
    });
    assert_eq!(out.inputs, 100);
    assert_eq!(out.panics.len(), 10, "{:?}", out.panics);
    assert!(
        out.panics.iter().all(|p| p.contains("planted")),
        "{:?}",
        out.panics
    );
    assert_eq!(out.slow.len(), 1, "{:?}", out.slow);
    assert!(out.slowest >= engine::SLOW);
    assert_eq!(out.accepted, 50);
}

fn stream_seeds(prefix: &[&str]) -> Vec<Vec<u8>> {
    mutate::fixtures("tests/fixtures/streams", |n| {
        n != "openai_1mb_delta.sse"
            && (n == "garbage.bin" || prefix.iter().any(|p| n.starts_with(p)))
    })
}

fn terminal(e: &StreamEvent) -> bool {
    matches!(e, StreamEvent::Stop { .. } | StreamEvent::Error { .. })
}

/// Feeds `input` in chunks, flushing now and then, and checks the decoder's contract: no
/// events after a terminal one, and `finish` ends with `Stop` or `Error` unless one came.
/// Returns whether the stream ended with `Stop`.
fn drive(dec: &mut dyn WireDecoder, input: &[u8]) -> bool {
    let mut ended = false;
    let mut stopped = false;
    for (i, r) in mutate::chunks(input).into_iter().enumerate() {
        let events = dec.feed(&input[r]);
        assert!(
            !ended || events.is_empty(),
            "events after the terminal one: {events:?}"
        );
        ended |= events.iter().any(terminal);
        stopped |= events.iter().any(|e| matches!(e, StreamEvent::Stop { .. }));
        if i % 5 == 4 {
            let held = dec.flush();
            assert!(
                !held.iter().any(terminal),
                "flush returned a terminal event"
            );
        }
        let _ = (dec.stats(), dec.is_blank());
    }
    let end = dec.finish();
    if ended {
        assert!(end.is_empty(), "finish after the terminal event: {end:?}");
    } else {
        assert!(
            end.last().is_some_and(terminal),
            "finish did not end with Stop or Error: {end:?}"
        );
        stopped |= matches!(end.last(), Some(StreamEvent::Stop { .. }));
    }
    stopped
}

fn stream_input(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    match rng.u8(..8) {
        0 => mutate::json_doc(rng, seeds),
        1 => {
            let mut b = mutate::pick(rng, seeds).clone();
            mutate::bytes(rng, &mut b, 9);
            b
        }
        _ => mutate::records(rng, seeds, "\n\n"),
    }
}

#[test]
fn fuzz_anthropic_stream() {
    let seeds = stream_seeds(&["anthropic_", "fork_"]);
    engine::run(
        "anthropic_stream",
        3000,
        |rng| stream_input(rng, &seeds),
        |input| drive(&mut AnthropicDecoder::new(), input),
    );
}

#[test]
fn fuzz_openai_stream() {
    let seeds = stream_seeds(&["openai_", "groq_", "magistral_", "openrouter_"]);
    engine::run(
        "openai_stream",
        3000,
        |rng| stream_input(rng, &seeds),
        |input| {
            drive(
                &mut OpenAiDecoder::new(input.len().is_multiple_of(2)),
                input,
            )
        },
    );
}

#[test]
fn fuzz_ollama_stream() {
    let seeds = stream_seeds(&["ollama_"]);
    engine::run(
        "ollama_stream",
        3000,
        |rng| match rng.u8(..4) {
            0 => mutate::json_doc(rng, &seeds),
            _ => mutate::records(rng, &seeds, "\n"),
        },
        |input| {
            drive(
                &mut OllamaDecoder::new(input.len().is_multiple_of(2)),
                input,
            )
        },
    );
}

/// The splitter's segments, merged, for `text` pushed in the pieces `cuts` gives.
fn split(text: &str, assume_open: bool, cuts: &[usize]) -> Vec<Segment> {
    let mut s = ThinkSplitter::new(assume_open);
    let mut acc = Vec::new();
    let mut at = 0;
    for &c in cuts.iter().chain(std::iter::once(&text.len())) {
        let c = c.clamp(at, text.len());
        if !text.is_char_boundary(c) {
            continue;
        }
        for seg in s.push(&text[at..c]) {
            merge_into(&mut acc, seg);
        }
        at = c;
    }
    for seg in s.finish() {
        merge_into(&mut acc, seg);
    }
    let _ = (s.in_thinking(), s.stray_closes(), s.opened());
    acc
}

#[test]
fn fuzz_think_tags() {
    const PARTS: &[&str] = &[
        "<think>",
        "</think>",
        "<think",
        "</thin",
        "<",
        "</",
        ">",
        "think>",
        "<thinking>",
        "answer",
        "reasoning ",
        " ",
        "\n",
        "\n\n",
        "é",
        "😀",
        "<<think>>",
        "</think></think>",
    ];
    let mut seeds: Vec<Vec<u8>> = vec![
        b"<think>a</think>b".to_vec(),
        b"plan</think>answer".to_vec(),
        b"<think>\n\nx\n</think>\n\ny".to_vec(),
    ];
    seeds.extend(stream_seeds(&["openai_think"]));
    engine::run(
        "think_tags",
        3000,
        |rng| {
            if rng.bool() {
                let mut s = String::new();
                for _ in 0..rng.usize(1..40) {
                    let part: &&str = mutate::pick(rng, PARTS);
                    s.push_str(part);
                }
                s.into_bytes()
            } else {
                let mut b = mutate::pick(rng, &seeds).clone();
                mutate::bytes(rng, &mut b, 7);
                b
            }
        },
        |input| {
            let text = String::from_utf8_lossy(input);
            let assume_open = input.first().is_some_and(|b| b % 2 == 1);
            let whole = split(&text, assume_open, &[]);
            let cuts: Vec<usize> = mutate::chunks(input).iter().map(|r| r.end).collect();
            let pieces = split(&text, assume_open, &cuts);
            assert_eq!(
                whole, pieces,
                "the result depends on where the text was cut"
            );
            let ones: Vec<usize> = (0..text.len()).collect();
            let bytewise = split(&text, assume_open, &ones);
            assert_eq!(
                whole, bytewise,
                "the result differs when fed a char at a time"
            );
            whole.iter().any(|s| matches!(s, Segment::Thinking(_)))
        },
    );
}

/// A store in a temp dir, opened again after every `every` inputs so it stays small.
struct Scratch {
    dir: tempfile::TempDir,
    store: Option<Store>,
    uses: u64,
    every: u64,
    generation: u64,
}

impl Scratch {
    fn new(every: u64) -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            store: None,
            uses: 0,
            every,
            generation: 0,
        }
    }

    fn store(&mut self) -> Store {
        if self.store.is_none() || self.uses >= self.every {
            self.store = None;
            self.generation += 1;
            let sub = self.dir.path().join(format!("g{}", self.generation));
            std::fs::create_dir_all(&sub).unwrap();
            let old = self.dir.path().join(format!("g{}", self.generation - 1));
            let _ = std::fs::remove_dir_all(old);
            self.store = Some(Store::open(&sub.join("store.redb")).unwrap());
            self.uses = 0;
        }
        self.uses += 1;
        self.store.clone().unwrap()
    }

    fn files(&self) -> PathBuf {
        self.dir.path().join(format!("g{}", self.generation))
    }
}

const CC: &str = "tests/fixtures/claude_code/projects";
const CC_IDS: &[&str] = &[
    "11111111-1111-4111-8111-111111111111",
    "22222222-2222-4222-8222-222222222222",
    "33333333-3333-4333-8333-333333333333",
];

fn transcript_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for (proj, id) in [
        ("-home-ann-calc", 0),
        ("-home-ann-web", 1),
        ("-home-ann-api", 2),
    ] {
        seeds.push(mutate::fixture(&format!(
            "{CC}/{proj}/{}.jsonl",
            CC_IDS[id]
        )));
    }
    seeds.push(mutate::fixture(&format!(
        "{CC}/-home-ann-api/{}/subagents/agent-a1b2c3.jsonl",
        CC_IDS[2]
    )));
    seeds.push(mutate::fixture(
        "tests/fixtures/claude_code/appended_line_3.txt",
    ));
    seeds
}

/// Imports `input` as a transcript file: its name and whether it arrives in two parts (the
/// second appended after a first import) are derived from the input itself. Returns whether
/// every line was taken (none reported malformed).
fn import_transcript(scratch: &mut Scratch, input: &[u8]) -> bool {
    let store = scratch.store();
    let h = input.iter().fold(input.len() as u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let id = CC_IDS[(h % 3) as usize];
    let dir = scratch.files().join("projects").join("-fuzz");
    let path = if h.is_multiple_of(7) {
        dir.join(id).join("subagents").join("agent-fz.jsonl")
    } else {
        dir.join(format!("{id}.jsonl"))
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let cut = if h.is_multiple_of(4) {
        input
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .nth((h as usize / 4) % 5)
            .unwrap_or(input.len())
    } else {
        input.len()
    };
    std::fs::write(&path, &input[..cut]).unwrap();
    let mut importer = Importer::new(store.clone()).unwrap().keep_state();
    importer.sync_file(&path).unwrap();
    if cut < input.len() {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&input[cut..]).unwrap();
        drop(f);
        importer.sync_file(&path).unwrap();
        // A fresh importer resumes from the stored cursor and replays the prefix.
        let mut again = Importer::new(store).unwrap();
        again
            .import_files(std::slice::from_ref(&path), None)
            .unwrap();
    }
    let summary = importer.take_summary();
    for e in &summary.errors {
        assert!(!e.contains('\n'), "a multi-line error: {e:?}");
    }
    let _ = std::fs::remove_file(&path);
    summary.errors.is_empty()
}

#[test]
fn fuzz_claude_code_lines() {
    let seeds = transcript_seeds();
    let mut scratch = Scratch::new(300);
    engine::run(
        "claude_code_lines",
        150,
        |rng| {
            // One line of a fixture mutated hard, the rest of its file as it is.
            let seed = String::from_utf8_lossy(mutate::pick(rng, &seeds).as_slice()).into_owned();
            let mut lines: Vec<Vec<u8>> = seed.lines().map(|l| l.as_bytes().to_vec()).collect();
            let i = rng.usize(..lines.len().max(1));
            if let Some(line) = lines.get_mut(i) {
                if rng.bool() {
                    let mut v: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
                    for _ in 0..rng.usize(1..8) {
                        mutate::mutate_value(rng, &mut v);
                    }
                    *line = serde_json::to_vec(&v).unwrap();
                } else {
                    mutate::bytes(rng, line, 11);
                }
            }
            let mut out = lines.join(&b'\n');
            out.push(b'\n');
            out
        },
        |input| import_transcript(&mut scratch, input),
    );
}

#[test]
fn fuzz_claude_code_sessions() {
    let seeds = transcript_seeds();
    let mut scratch = Scratch::new(300);
    engine::run(
        "claude_code_sessions",
        150,
        |rng| mutate::records(rng, &seeds, "\n"),
        |input| import_transcript(&mut scratch, input),
    );
}

/// JSON exports of the fixture sessions, made by importing them into a scratch store.
fn export_seeds() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store.redb")).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(CC);
    let mut errors = Vec::new();
    let files = glassbox::engines::transcript::discover(&[root], &mut errors).unwrap();
    let mut importer = Importer::new(store.clone()).unwrap();
    importer.import_files(&files, None).unwrap();
    let seeds: Vec<Vec<u8>> = store
        .sessions()
        .unwrap()
        .iter()
        .map(|s| {
            let e = export::collect(&store, s.id).unwrap();
            export::to_json(&e).unwrap().into_bytes()
        })
        .collect();
    assert!(!seeds.is_empty());
    seeds
}

#[test]
fn fuzz_import_json() {
    let seeds = export_seeds();
    let mut scratch = Scratch::new(300);
    engine::run(
        "import_json",
        200,
        |rng| mutate::json_doc(rng, &seeds),
        |input| {
            let text = String::from_utf8_lossy(input);
            let Ok(parsed) = export::parse_json(&text, "fuzz.json") else {
                return false;
            };
            let _ = export::to_markdown(&parsed);
            let store = scratch.store();
            let imported = export::import(&store, &parsed, true).is_ok();
            if imported {
                let back = export::collect(&store, parsed.session.id).unwrap();
                export::to_json(&back).unwrap();
            }
            imported
        },
    );
}

fn mcp_seeds() -> Vec<Vec<u8>> {
    let thought = r#"{"thought":"First, check the inputs.","nextThoughtNeeded":true,"thoughtNumber":1,"totalThoughts":3}"#;
    let revision = r#"{"thought":"Actually the input is sorted.","nextThoughtNeeded":"true","thoughtNumber":"2","totalThoughts":3.0,"isRevision":true,"revisesThought":1}"#;
    let branch = r#"{"thought":"Try the other way.","nextThoughtNeeded":false,"thoughtNumber":3,"totalThoughts":3,"branchFromThought":1,"branchId":"alt","needsMoreThoughts":null,"thoughtType":"hypothesis","critique":false}"#;
    let checkpoint =
        r#"{"thoughtNumber":1,"verdict":"questionable","correction":"check the edge case"}"#;
    let list = r#"{"all":true,"limit":5,"query":"input","sessionId":"0192"}"#;
    let mut seeds: Vec<Vec<u8>> = [thought, revision, branch, checkpoint, list]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    // session_import: an export as an object and as a string.
    if let Some(e) = export_seeds().first()
        && let Ok(v) = serde_json::from_slice::<Value>(e)
    {
        seeds.push(serde_json::to_vec(&serde_json::json!({ "data": v, "replace": true })).unwrap());
        seeds.push(serde_json::to_vec(&serde_json::json!({ "data": v.to_string() })).unwrap());
    }
    seeds
}

#[test]
fn fuzz_mcp_arguments() {
    let seeds = mcp_seeds();
    let mut scratch = Scratch::new(500);
    engine::run(
        "mcp_arguments",
        300,
        |rng| mutate::json_doc(rng, &seeds),
        |input| {
            let Ok(Value::Object(args)) = serde_json::from_slice::<Value>(input) else {
                return false;
            };
            mcp_call(&mut scratch, &args)
        },
    );
}

/// What the ledger server does with a tool call's arguments, short of the transport.
/// Returns whether a thought was recorded or a session imported.
fn mcp_call(scratch: &mut Scratch, args: &Map<String, Value>) -> bool {
    let mut stored = false;
    for key in [
        "thought",
        "sessionId",
        "title",
        "query",
        "verdict",
        "correction",
        "branchId",
    ] {
        let _ = (optional_string(args, key), optional_label(args, key));
    }
    for key in ["all", "replace", "critique", "nextThoughtNeeded"] {
        let _ = optional_bool(args, key);
    }
    for key in ["limit", "thoughtNumber", "totalThoughts", "revisesThought"] {
        let _ = optional_count(args, key);
    }
    let verdict = optional_string(args, "verdict")
        .ok()
        .flatten()
        .and_then(|v| Verdict::parse(&v));
    let _ = ThoughtArgs::parse(args);
    let store = scratch.store();
    if let Ok(t) = ThoughtArgs::parse_ledger(args) {
        let target = SessionTarget::Create(Session::new("", SessionSource::Mcp));
        if let Ok(rec) = ledger::record_thought(&store, &target, &t, "thought", NodeId::new()) {
            stored = true;
            let _ = ledger::record_thought(
                &store,
                &SessionTarget::Existing(rec.session),
                &t,
                "thought",
                NodeId::new(),
            );
            if let Some(v) = verdict {
                let correction = optional_string(args, "correction").ok().flatten();
                let _ = ledger::checkpoint(
                    &store,
                    rec.node.id,
                    NodeId::new(),
                    v,
                    correction.as_deref(),
                );
            }
            if let Ok(Some(n)) = optional_count(args, "thoughtNumber") {
                let _ = ledger::thought_by_number(&store, rec.session, n);
            }
        }
    }
    if let Some(data) = args.get("data") {
        let replace = optional_bool(args, "replace")
            .ok()
            .flatten()
            .unwrap_or(false);
        stored |= ledger::import_session(&store, data, replace).is_ok();
    }
    stored
}

fn hash(input: &[u8]) -> u64 {
    input.iter().fold(input.len() as u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `GLASSBOX_*` variable names for every key of the default config.
fn env_names() -> Vec<String> {
    fn walk(prefix: &str, t: &toml::Table, out: &mut Vec<String>) {
        for (k, v) in t {
            let name = if prefix.is_empty() {
                k.to_uppercase()
            } else {
                format!("{prefix}__{}", k.to_uppercase())
            };
            match v {
                toml::Value::Table(inner) => walk(&name, inner, out),
                _ => out.push(format!("GLASSBOX_{name}")),
            }
        }
    }
    let text = String::from_utf8(mutate::fixture("configs/default.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let mut out = Vec::new();
    walk("", &table, &mut out);
    out
}

#[test]
fn fuzz_config_file() {
    let seeds = vec![
        mutate::fixture("configs/default.toml"),
        b"[general]\nprovider = \"ollama\"\n[profiles.fast]\ngeneral.effort = \"low\"\n".to_vec(),
    ];
    let names = env_names();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    const VALUES: &[&str] = &[
        "",
        "0",
        "-1",
        "true",
        "none",
        "1e999",
        "é",
        "[1]",
        "{a=1}",
        "99999999999999999999",
    ];
    engine::run(
        "config_file",
        200,
        |rng| mutate::toml_doc(rng, &seeds),
        |input| {
            std::fs::write(&path, input).unwrap();
            let h = hash(input);
            let mut env = Vec::new();
            if h.is_multiple_of(3) {
                let name = &names[(h as usize / 3) % names.len()];
                env.push((
                    name.clone(),
                    VALUES[(h as usize / 7) % VALUES.len()].to_string(),
                ));
            }
            let profile = h.is_multiple_of(5).then(|| "fast".to_string());
            let src = ConfigSources {
                explicit_file: Some(path.clone()),
                config_dir: dir.path().to_path_buf(),
                env,
                flags: Vec::new(),
                profile,
            };
            match load(&src) {
                Ok(loaded) => {
                    let _ = (loaded.render_text(), loaded.to_json());
                    true
                }
                Err(e) => {
                    let _ = e.to_string();
                    false
                }
            }
        },
    );
}

#[test]
fn fuzz_keymap_file() {
    let seeds = vec![
        mutate::fixture("configs/keymap.toml"),
        b"[global]\nquit = \"ctrl+q\"\n[think]\n\"g g\" = \"none\"\n".to_vec(),
    ];
    let base = Keymap::builtin();
    engine::run(
        "keymap_file",
        300,
        |rng| mutate::toml_doc(rng, &seeds),
        |input| {
            let text = String::from_utf8_lossy(input);
            let mut km = base.clone();
            let merged = km.merge(Path::new("keymap.toml"), &text).is_ok();
            if merged {
                let _ = help_sections(&km);
            }
            merged
        },
    );
}

#[test]
fn fuzz_theme_file() {
    let seeds = mutate::fixtures("themes", |n| n.ends_with(".toml"));
    const NAMES: &[&str] = &["dark", "light", "high-contrast", "mine"];
    const DEPTHS: &[ColorDepth] = &[
        ColorDepth::TrueColor,
        ColorDepth::Ansi256,
        ColorDepth::Ansi16,
        ColorDepth::NoColor,
    ];
    engine::run(
        "theme_file",
        300,
        |rng| mutate::toml_doc(rng, &seeds),
        |input| {
            let text = String::from_utf8_lossy(input).into_owned();
            let h = hash(input) as usize;
            let name = NAMES[h % NAMES.len()];
            let depth = DEPTHS[(h / 4) % DEPTHS.len()];
            Theme::resolve(name, Path::new("themes/mine.toml"), Some(text), depth).is_ok()
        },
    );
}
