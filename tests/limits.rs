//! Resource limits of the importers, through the real binary: a 50 MB line, 100,000 levels
//! of nested JSON, a binary file, invalid UTF-8 and an empty file, given to
//! `import claude-code`, `import json` and `memory import`. Each must end with one clear
//! line naming the file and the line (a warning for a skipped transcript line, an error for
//! an export file), a peak RSS under 500 MB, no crash, and what was stored still there.
//!
//! The big inputs are written to a temp dir by the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude_code/projects/-home-ann-calc/11111111-1111-4111-8111-111111111111.jsonl"
);
/// Peak resident memory allowed for one import.
const MAX_RSS_KB: u64 = 500 * 1024;
const BIG: usize = 50 << 20;

/// A data dir with the calc fixture session imported (what must survive every bad import).
struct Data {
    dir: tempfile::TempDir,
}

impl Data {
    fn new() -> Self {
        let d = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        let (out, _) = d.run(&["import", "claude-code", FIXTURE]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(d.sessions().len(), 1);
        d
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn cmd(&self, program: &str) -> Command {
        let data = self.data();
        let mut c = Command::new(program);
        c.env("GLASSBOX_DATA_DIR", &data)
            .envs(support::bin::store_env(&data))
            .env("GLASSBOX_CONFIG_DIR", data.join("config"))
            .env("GLASSBOX_EMBEDDINGS__PROVIDER", "none")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("GLASSBOX_PROVIDER")
            .env_remove("GLASSBOX_MODEL")
            .stdin(Stdio::null());
        c
    }

    /// Runs glassbox with `args`; returns its output and its peak RSS in kB.
    fn run(&self, args: &[&str]) -> (Output, u64) {
        let exe = env!("CARGO_BIN_EXE_glassbox");
        let time = Path::new("/usr/bin/time");
        if time.is_file() {
            let report = self.dir.path().join("time.txt");
            let mut c = self.cmd(time.to_str().unwrap());
            c.arg("-v").arg("-o").arg(&report).arg(exe).args(args);
            let out = c.output().unwrap();
            let rss = std::fs::read_to_string(&report)
                .unwrap()
                .lines()
                .find_map(|l| {
                    l.trim()
                        .strip_prefix("Maximum resident set size (kbytes): ")
                })
                .and_then(|v| v.trim().parse().ok())
                .expect("no RSS in /usr/bin/time's report");
            (out, rss)
        } else {
            peak_by_polling(self.cmd(exe).args(args))
        }
    }

    fn sessions(&self) -> Vec<Value> {
        let (out, _) = self.run(&["sessions", "list", "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .as_array()
            .cloned()
            .unwrap()
    }

    /// The calc session is still there with all its nodes.
    fn intact(&self) {
        let calc: Vec<Value> = self
            .sessions()
            .into_iter()
            .filter(|s| s["title"] == "Fixing float rounding in the calculator")
            .collect();
        assert_eq!(calc.len(), 1, "the stored session is gone");
        assert_eq!(calc[0]["nodes"], 7, "the stored session lost nodes");
    }
}

/// Without /usr/bin/time: the child's VmHWM (peak RSS), read until it exits.
fn peak_by_polling(cmd: &mut Command) -> (Output, u64) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let mut peak = 0;
    while !waiter.is_finished() {
        if let Ok(s) = std::fs::read_to_string(&status)
            && let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kb);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (waiter.join().unwrap(), peak)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Checks the run did not crash and stayed under the memory limit.
fn bounded(what: &str, out: &Output, rss_kb: u64) {
    let err = text(&out.stderr);
    assert!(
        out.status.code().is_some(),
        "{what}: killed by a signal: {err}"
    );
    assert!(!err.contains("panicked"), "{what}: panicked: {err}");
    assert!(!err.contains("overflow"), "{what}: {err}");
    assert!(
        rss_kb <= MAX_RSS_KB,
        "{what}: peak RSS {} MB is over {} MB",
        rss_kb / 1024,
        MAX_RSS_KB / 1024
    );
    eprintln!("{what}: peak RSS {:.1} MB", rss_kb as f64 / 1024.0);
}

/// The `warning: ` lines of an import's stderr.
fn warnings(out: &Output) -> Vec<String> {
    text(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .map(str::to_string)
        .collect()
}

/// A valid transcript line of a session of its own.
fn user_line(uuid: &str, text: &str) -> String {
    json!({
        "type": "user", "uuid": uuid, "parentUuid": null,
        "sessionId": "c0000000-0000-4000-8000-00000000000c",
        "timestamp": "2025-06-01T10:05:00Z", "cwd": "/home/ann/calc",
        "message": {"role": "user", "content": text}
    })
    .to_string()
}

fn nested_array(levels: usize) -> String {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels))
}

fn nested_object(levels: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels))
}

/// Bytes that are not text: every byte value, NULs and 0xff, a few newlines.
fn binary(len: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut b: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
    b[0] = 0xff;
    b
}

#[test]
fn claude_code_skips_a_50_mb_line_without_holding_it() {
    let d = Data::new();
    let mut file = user_line("a0000000-0000-4000-8000-000000000001", "before").into_bytes();
    file.push(b'\n');
    file.extend_from_slice(
        user_line("a0000000-0000-4000-8000-000000000002", &"x".repeat(BIG)).as_bytes(),
    );
    file.push(b'\n');
    file.extend_from_slice(user_line("a0000000-0000-4000-8000-000000000003", "after").as_bytes());
    file.push(b'\n');
    let path = d.file("big.jsonl", &file);
    let started = Instant::now();
    let (out, rss) = d.run(&["import", "claude-code", path.to_str().unwrap()]);
    bounded("claude-code, a 50 MB line", &out, rss);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let w = warnings(&out);
    let want = format!(
        "{}:2: line of 52.4 MB is longer than the 32 MB a line may have; skipped",
        path.display()
    );
    assert_eq!(w, vec![want]);
    // The lines around it are imported: 3 lines read, 2 new nodes.
    assert!(
        text(&out.stdout).contains("3 lines"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("2 new nodes"),
        "{}",
        text(&out.stdout)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    d.intact();
}

#[test]
fn claude_code_reports_deeply_nested_lines() {
    let d = Data::new();
    // Deep under a field glassbox reads (a message's content), at the top, and under a
    // field it ignores (read past without recursion, so only the missing type is left).
    let content = format!(
        r#"{{"type":"user","sessionId":"s","message":{{"content":{}}}}}"#,
        nested_object(100_000)
    );
    let ignored = format!(r#"{{"other":{}}}"#, nested_array(100_000));
    let file = format!("{content}\n{}\n{ignored}\n", nested_array(100_000));
    let path = d.file("nested.jsonl", file.as_bytes());
    let (out, rss) = d.run(&["import", "claude-code", path.to_str().unwrap()]);
    bounded("claude-code, 100,000 levels", &out, rss);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let w = warnings(&out);
    let p = path.display();
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].starts_with(&format!("{p}:1: invalid JSON: recursion limit exceeded")),
        "{w:?}"
    );
    assert_eq!(w[1], format!("{p}:2: not a JSON object (an array)"));
    let summary = text(&out.stdout);
    assert!(summary.contains("line without a type 1"), "{summary}");
    d.intact();
}

#[test]
fn claude_code_reports_a_binary_file_line_by_line() {
    let d = Data::new();
    let path = d.file("binary.jsonl", &binary(1 << 20));
    let (out, rss) = d.run(&["import", "claude-code", path.to_str().unwrap()]);
    bounded("claude-code, a binary file", &out, rss);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let w = warnings(&out);
    let p = path.display().to_string();
    assert_eq!(w.len(), 20, "the first 20 problems are shown: {w:?}");
    assert!(w[0].starts_with(&format!("{p}:1: not UTF-8")), "{w:?}");
    for line in &w {
        assert!(line.starts_with(&format!("{p}:")), "{line}");
    }
    assert!(
        text(&out.stderr).contains("more (use --json for the full list)"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("0 new nodes"));
    d.intact();
}

#[test]
fn claude_code_reports_invalid_utf8_with_its_line() {
    let d = Data::new();
    let mut file = user_line("b0000000-0000-4000-8000-000000000001", "fine").into_bytes();
    file.push(b'\n');
    file.extend_from_slice(b"{\"type\":\"user\",\"x\":\"\xc3\x28\"}\n");
    let path = d.file("utf8.jsonl", &file);
    let (out, rss) = d.run(&["import", "claude-code", path.to_str().unwrap()]);
    bounded("claude-code, invalid UTF-8", &out, rss);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        warnings(&out),
        vec![format!(
            "{}:2: not UTF-8 (invalid byte at column 21)",
            path.display()
        )]
    );
    assert!(
        text(&out.stdout).contains("1 new nodes"),
        "{}",
        text(&out.stdout)
    );
    d.intact();
}

#[test]
fn claude_code_skips_an_empty_file() {
    let d = Data::new();
    let path = d.file("empty.jsonl", b"");
    let (out, rss) = d.run(&["import", "claude-code", path.to_str().unwrap()]);
    bounded("claude-code, an empty file", &out, rss);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(warnings(&out).is_empty(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("skipped: empty file 1"),
        "{}",
        text(&out.stdout)
    );
    d.intact();
}

/// An export of the calc session.
fn exported(d: &Data) -> Value {
    let id = d.sessions()[0]["id"].as_str().unwrap().to_string();
    let (out, _) = d.run(&["export", &id, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `import json` on `bytes`; returns the output after the common checks.
fn import_json(d: &Data, name: &str, bytes: &[u8], what: &str) -> (Output, PathBuf) {
    let path = d.file(name, bytes);
    let (out, rss) = d.run(&["import", "json", path.to_str().unwrap()]);
    bounded(what, &out, rss);
    (out, path)
}

/// The single error line of a failed `import json`.
fn one_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    lines[0]
        .strip_prefix("glassbox: error: ")
        .unwrap_or(lines[0])
        .to_string()
}

#[test]
fn import_json_takes_a_50_mb_line() {
    let d = Data::new();
    // Another session (new ids) whose one node holds 50 MB of text, all on one line.
    let mut e = exported(&d);
    let sid = "01972aef-1100-7000-8000-00000000beef";
    let node = "01972aef-1100-7000-8000-00000000cafe";
    e["session"]["id"] = json!(sid);
    e["session"]["title"] = json!("big");
    let mut n = e["nodes"][0].clone();
    n["id"] = json!(node);
    n["session"] = json!(sid);
    n["text"] = json!("y".repeat(BIG));
    e["nodes"] = json!([n]);
    for k in [
        "edges",
        "decision_points",
        "insights",
        "runs",
        "raw_streams",
    ] {
        e[k] = json!([]);
    }
    let line = serde_json::to_vec(&e).unwrap();
    assert!(line.len() > BIG && !line.contains(&b'\n'));
    let (out, _) = import_json(&d, "big.json", &line, "import json, a 50 MB line");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("\"big\": 1 nodes"),
        "{}",
        text(&out.stdout)
    );
    d.intact();
}

#[test]
fn import_json_reports_deep_nesting() {
    let d = Data::new();
    for (name, doc) in [
        ("arrays.json", nested_array(100_000)),
        ("objects.json", nested_object(100_000)),
    ] {
        let (out, path) = import_json(&d, name, doc.as_bytes(), "import json, 100,000 levels");
        let e = one_error(&out);
        let p = path.display().to_string();
        let (at, reason) = e.split_once(": ").unwrap();
        let column = at
            .strip_prefix(&format!("{p}:1:"))
            .unwrap_or_else(|| panic!("{e}"));
        assert!(column.parse::<u32>().is_ok(), "{e}");
        assert_eq!(reason, "not JSON: recursion limit exceeded", "{e}");
    }
    d.intact();
}

#[test]
fn import_json_reports_a_binary_file() {
    let d = Data::new();
    let (out, path) = import_json(&d, "binary.json", &binary(1 << 20), "import json, binary");
    assert_eq!(
        one_error(&out),
        format!(
            "{}:1: not UTF-8 (invalid byte at column 1); is this a session export?",
            path.display()
        )
    );
    d.intact();
}

#[test]
fn import_json_reports_invalid_utf8_with_its_line() {
    let d = Data::new();
    let mut e = serde_json::to_string_pretty(&exported(&d))
        .unwrap()
        .into_bytes();
    // Break the title's first character, on the line that holds it.
    let at = e.windows(9).position(|w| w == b"\"title\": ").unwrap() + 10;
    let line = e[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    let column = at - e[..at].iter().rposition(|&b| b == b'\n').unwrap();
    e[at] = 0xff;
    let (out, path) = import_json(&d, "utf8.json", &e, "import json, invalid UTF-8");
    assert_eq!(
        one_error(&out),
        format!(
            "{}:{line}: not UTF-8 (invalid byte at column {column}); is this a session export?",
            path.display()
        )
    );
    d.intact();
}

#[test]
fn import_json_reports_an_empty_file() {
    let d = Data::new();
    let (out, path) = import_json(&d, "empty.json", b"", "import json, empty");
    assert_eq!(
        one_error(&out),
        format!(
            "{}: empty file, not a session export (expected the JSON of `glassbox export --format json`)",
            path.display()
        )
    );
    d.intact();
}

/// `memory import` (JSON Lines of `memory export`) checks every line before storing any: each
/// bad input is one error naming the file and the line, and an empty file imports nothing.
#[test]
fn memory_import_reports_each_bad_input() {
    let d = Data::new();
    let big = format!(r#"{{"entry":{{"content":"{}"}}}}"#, "m".repeat(BIG));
    let deep = format!(r#"{{"entry":{}}}"#, nested_object(100_000));
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("big.jsonl", big.into_bytes(), "line 1: missing field"),
        (
            "arrays.jsonl",
            nested_array(100_000).into_bytes(),
            "line 1: invalid type",
        ),
        (
            "objects.jsonl",
            deep.into_bytes(),
            "line 1: recursion limit exceeded",
        ),
        (
            "binary.jsonl",
            binary(1 << 20),
            "line 1: stream did not contain valid UTF-8",
        ),
        (
            "utf8.jsonl",
            b"{\"entry\":\"\xc3\x28\"}\n".to_vec(),
            "line 1: stream did not contain valid UTF-8",
        ),
    ];
    for (name, bytes, reason) in cases {
        let path = d.file(name, &bytes);
        let (out, rss) = d.run(&["memory", "import", path.to_str().unwrap()]);
        bounded(&format!("memory import, {name}"), &out, rss);
        let e = one_error(&out);
        assert!(
            e.starts_with(&format!("import of {}: {reason}", path.display())),
            "{e}"
        );
    }
    let path = d.file("empty.jsonl", b"");
    let (out, rss) = d.run(&["memory", "import", path.to_str().unwrap()]);
    bounded("memory import, empty", &out, rss);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("imported 0 entries"));
    d.intact();
}
