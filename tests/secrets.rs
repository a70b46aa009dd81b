//! API keys stay secret and the user's files stay the user's: a planted key goes through
//! ask (streaming, verbose logs, a refusal that echoes the key back), export in every
//! format, doctor, config show and the MCP token, and then no file under the data and config
//! dirs and nothing any command printed holds it. The data dir and everything in it is for
//! its owner only. (MCP's loopback-only bind and its token are tested in tests/mcp.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::bin::glassbox;
use support::{ChunkBy, Script, ScriptedServer, Step};

const ANTHROPIC_KEY: &str = "sk-ant-planted-Zq8v3K1mW9xR4tY7uJ2n";
const OPENAI_KEY: &str = "sk-proj-planted-Hc5gL0pA6sD8fQ3wE1r";

/// Everything the commands printed, to search with the files.
#[derive(Default)]
struct Printed(Vec<(String, Vec<u8>)>);

impl Printed {
    /// Runs `cmd` with both keys planted; keeps its output under `what`.
    fn run(&mut self, what: &str, mut cmd: Command) -> Output {
        cmd.env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .env("OPENAI_API_KEY", OPENAI_KEY);
        let out = cmd.output().unwrap();
        self.0
            .push((format!("{what} (stdout)"), out.stdout.clone()));
        self.0
            .push((format!("{what} (stderr)"), out.stderr.clone()));
        out
    }

    /// Like [`Printed::run`], failing the test when the command fails.
    fn ok(&mut self, what: &str, cmd: Command) -> Output {
        let out = self.run(what, cmd);
        assert!(
            out.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The key's distinctive middle part: a key cut short or wrapped still shows it.
fn fragments() -> [&'static str; 4] {
    [
        ANTHROPIC_KEY,
        OPENAI_KEY,
        &ANTHROPIC_KEY[15..],
        &OPENAI_KEY[16..],
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_keys_appear_in_no_file_and_no_output() {
    let answer = Step::sse(support::fixture("anthropic_thinking.sse")).rechunk(ChunkBy::Lines);
    let openai = Step::sse(support::fixture("openai_reasoning_content.sse"));
    // A refusal quoting the key back, as some gateways do.
    let echo = |key: &str| {
        Step::json(
            401,
            format!(
                r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {key}"}}}}"#
            ),
        )
    };
    let anthropic_server = ScriptedServer::start(Script::forever(answer)).await;
    let openai_server = ScriptedServer::start(Script::forever(openai)).await;
    let refusing = ScriptedServer::start(Script::forever(echo(ANTHROPIC_KEY))).await;
    let refusing_openai = ScriptedServer::start(Script::forever(echo(OPENAI_KEY))).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = data.join("config");
    let (a_url, o_url) = (
        anthropic_server.url(),
        format!("{}/v1", openai_server.url()),
    );
    let (r_url, ro_url) = (refusing.url(), format!("{}/v1", refusing_openai.url()));

    let printed = tokio::task::spawn_blocking(move || {
        let mut p = Printed::default();
        let cmd = |args: &[&str]| {
            let mut c = glassbox(&data);
            c.args(args);
            c
        };
        let asked = p.ok(
            "ask",
            cmd(&[
                "-vv",
                "ask",
                "--json",
                "--provider",
                "anthropic",
                "--base-url",
                &a_url,
                "q",
            ]),
        );
        let done = String::from_utf8(asked.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["type"] == "done")
            .unwrap();
        let session = done["session"].as_str().unwrap().to_string();
        p.ok(
            "ask openai",
            cmd(&[
                "-vv",
                "ask",
                "--provider",
                "openai",
                "--base-url",
                &o_url,
                "q2",
            ]),
        );
        for (what, url, provider) in [
            ("refused ask", r_url.as_str(), "anthropic"),
            ("refused openai ask", ro_url.as_str(), "openai"),
        ] {
            let out = p.run(
                what,
                cmd(&[
                    "-vv",
                    "ask",
                    "--provider",
                    provider,
                    "--base-url",
                    url,
                    "q3",
                ]),
            );
            assert_eq!(out.status.code(), Some(1), "{what}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("HTTP 401"), "{what}: {err}");
        }
        for format in ["md", "json", "dot", "mermaid"] {
            p.ok(
                &format!("export {format}"),
                cmd(&["export", &session, "--format", format]),
            );
        }
        p.ok(
            "sessions show",
            cmd(&["sessions", "show", &session, "--json"]),
        );
        p.ok("doctor", cmd(&["doctor"]));
        p.ok("doctor --json", cmd(&["doctor", "--json"]));
        p.ok("config show", cmd(&["config", "show"]));
        p.ok("config show --json", cmd(&["config", "show", "--json"]));
        p.ok("mcp token", cmd(&["mcp", "--print-token"]));
        p.run("search", cmd(&["search", "planted"]));
        p
    })
    .await
    .unwrap();

    let data = dir.path().join("data");
    let mut files = Vec::new();
    files_under(&data, &mut files);
    files_under(&config, &mut files);
    // On a PostgreSQL run the store is searched in a copy of the database.
    let snapshot = tempfile::tempdir().unwrap();
    if support::pg::suite_on_postgres() {
        let copy = snapshot.path().join("glassbox.redb");
        std::fs::write(&copy, support::store::bytes_of(&data)).unwrap();
        files.push(copy);
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("glassbox.redb"))
            && names.iter().any(|n| n.ends_with("glassbox.log")),
        "the store and the log are searched: {names:?}"
    );
    let log = std::fs::read_to_string(data.join("glassbox.log")).unwrap();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "-vv wrote a verbose log to search"
    );
    let mut hits = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for needle in fragments() {
            if holds(&bytes, needle) {
                hits.push(format!("{} holds {needle}", f.display()));
            }
        }
    }
    for (what, bytes) in &printed.0 {
        for needle in fragments() {
            if holds(bytes, needle) {
                hits.push(format!("{what} holds {needle}"));
            }
        }
    }
    assert!(hits.is_empty(), "planted keys found:\n{}", hits.join("\n"));

    // The refusals still say what went wrong, with the key blanked out.
    let refused = &printed
        .0
        .iter()
        .find(|(w, _)| w == "refused ask (stderr)")
        .unwrap()
        .1;
    assert!(
        String::from_utf8_lossy(refused).contains("invalid x-api-key [redacted]"),
        "{}",
        String::from_utf8_lossy(refused)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_dir_is_its_owners_only() {
    let server = ScriptedServer::start(Script::forever(Step::sse(support::fixture(
        "anthropic_thinking.sse",
    ))))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested").join("data");
    let url = server.url();
    let d = data.clone();
    tokio::task::spawn_blocking(move || {
        support::bin::ok(
            glassbox(&d)
                .args(["ask", "--provider", "anthropic", "--base-url", &url, "q"])
                .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
        );
        support::bin::ok(glassbox(&d).args(["mcp", "--print-token"]));
    })
    .await
    .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "data dir");
    if !support::pg::suite_on_postgres() {
        assert_eq!(mode(&data.join("glassbox.redb")), 0o600, "store");
    }
    assert_eq!(mode(&data.join("glassbox.log")), 0o600, "log");
    // Whatever else lives there (the MCP token among it) is not for group or others.
    let mut files = Vec::new();
    files_under(&data, &mut files);
    // The store file (on redb), the log and the MCP token at least.
    let least = if support::pg::suite_on_postgres() {
        2
    } else {
        3
    };
    assert!(files.len() >= least, "{files:?}");
    for f in &files {
        assert_eq!(mode(f) & 0o077, 0, "{} is {:o}", f.display(), mode(f));
        let mut parent = f.parent();
        while let Some(p) = parent
            && p.starts_with(&data)
        {
            assert_eq!(mode(p) & 0o077, 0, "{} is {:o}", p.display(), mode(p));
            parent = p.parent();
        }
    }
}
