//! `glassbox sessions list` with projects and filters, `sessions show`'s details, and
//! `import claude-code` on a Claude Code folder that holds no transcripts, through the binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use support::bin::{glassbox, ok};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/claude_code/projects"
);

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn imported(data: &Path) {
    ok(glassbox(data).args(["import", "claude-code", FIXTURES]));
}

fn list(data: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let out = ok(glassbox(data)
        .args(["sessions", "list", "--json"])
        .args(args));
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
}

#[test]
fn sessions_list_shows_projects_and_filters_by_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    imported(&data);

    let all = list(&data, &[]);
    assert_eq!(all.len(), 3);
    let mut projects: Vec<&str> = all.iter().map(|s| s["project"].as_str().unwrap()).collect();
    projects.sort_unstable();
    assert_eq!(projects, ["api", "calc", "web"]);
    let calc = all.iter().find(|s| s["project"] == "calc").unwrap();
    assert_eq!(calc["cwd"], "/home/ann/calc");
    assert_eq!(calc["git_branch"], "main");

    let text = stdout(&ok(glassbox(&data).args(["sessions", "list"])));
    let header = text.lines().next().unwrap();
    assert!(header.contains("PROJECT"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains(" calc ") && l.contains("Fixing float rounding")),
        "{text}"
    );

    let only = list(&data, &["--project", "CALC"]);
    assert_eq!(only.len(), 1);
    assert_eq!(only[0]["project"], "calc");
    assert!(list(&data, &["--project", "nope"]).is_empty());
    assert!(list(&data, &["--project", "-"]).is_empty());
    assert_eq!(list(&data, &["--source", "claude_code"]).len(), 3);
    assert_eq!(list(&data, &["--source", "claude-code"]).len(), 3);
    assert!(list(&data, &["--source", "glassbox"]).is_empty());
    assert_eq!(list(&data, &["--since", "2000-01-01"]).len(), 3);
    assert!(list(&data, &["--since", "2999-01-01"]).is_empty());
    let two = list(&data, &["--limit", "2"]);
    assert_eq!(two.len(), 2);
    assert_eq!(two[0]["id"], all[0]["id"], "the newest first");

    let bad = glassbox(&data)
        .args(["sessions", "list", "--source", "cursor"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected glassbox, claude_code"));
    let bad = glassbox(&data)
        .args(["sessions", "list", "--since", "yesterday"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let none = stdout(&ok(glassbox(&data).args([
        "sessions",
        "list",
        "--project",
        "x",
    ])));
    assert_eq!(none.trim(), "no sessions match");
}

#[test]
fn importing_an_empty_claude_code_folder_says_so_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    std::fs::create_dir_all(claude.join("projects/-home-x")).unwrap();
    let out = ok(glassbox(&dir.path().join("data"))
        .env("CLAUDE_CONFIG_DIR", &claude)
        .args(["import", "claude-code"]));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains("holds no Claude Code transcripts")
            && text.contains(&claude.join("projects").display().to_string()),
        "{text}"
    );
}

#[test]
fn importing_an_empty_folder_given_as_a_path_says_where_to_look() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = ok(glassbox(&dir.path().join("data"))
        .args(["import", "claude-code"])
        .arg(&empty));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "{} holds no Claude Code transcripts",
            empty.display()
        )) && text.contains("~/.claude/projects"),
        "{text}"
    );
}

#[test]
fn sessions_show_starts_with_the_details() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    imported(&data);
    let calc = list(&data, &["--project", "calc"]);
    let id = calc[0]["id"].as_str().unwrap().to_string();
    let text = stdout(&ok(glassbox(&data).args(["sessions", "show", &id])));
    let head: Vec<&str> = text.lines().take(6).collect();
    assert!(
        head[2].contains("project calc") && head[2].contains("cwd /home/ann/calc"),
        "{text}"
    );
    assert!(head[2].contains("branch main"), "{text}");
    assert!(
        text.contains("claude-opus-4-20250514") && text.contains("1.0.43"),
        "{text}"
    );
    assert!(
        text.contains("2 turns") && text.contains("1 thinking blocks"),
        "{text}"
    );
    assert!(text.contains("1 tool calls"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("tools ")), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("file ")
                && l.ends_with("11111111-1111-4111-8111-111111111111.jsonl")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("tool_call") && l.contains("] ")),
        "the tool's name: {text}"
    );

    let out = ok(glassbox(&data).args(["sessions", "show", &id, "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let st = &v["stats"];
    assert_eq!(st["project"], "calc");
    assert_eq!(st["git_branch"], "main");
    assert_eq!(st["turns"], 2);
    assert_eq!(st["thinking_blocks"], 1);
    assert_eq!(st["tool_calls"], 1);
    assert_eq!(st["tool_calls_by_tool"].as_object().unwrap().len(), 1);
    assert_eq!(st["files"].as_array().unwrap().len(), 1);
    assert!(st["duration_secs"].as_i64().unwrap() >= 0);
    assert!(st["tokens"]["output_tokens"].as_u64().unwrap() > 0, "{st}");
}

#[test]
fn a_title_set_with_rename_survives_a_reimport() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let root = dir.path().join("projects");
    let calc = root.join("-home-ann-calc");
    std::fs::create_dir_all(&calc).unwrap();
    let file = calc.join("11111111-1111-4111-8111-111111111111.jsonl");
    std::fs::copy(
        Path::new(FIXTURES).join("-home-ann-calc/11111111-1111-4111-8111-111111111111.jsonl"),
        &file,
    )
    .unwrap();
    ok(glassbox(&data).args(["import", "claude-code"]).arg(&root));
    let id = list(&data, &[])[0]["id"].as_str().unwrap().to_string();

    let out =
        ok(glassbox(&data).args(["sessions", "rename", &id[..8], "Rounding, fixed", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["title"], "Rounding, fixed");

    // Claude Code then records a custom title and a summary; the import reads them, and
    // keeps the person's title.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(
        "{\"type\": \"custom-title\", \"customTitle\": \"calc work\", \"sessionId\": \"11111111-1111-4111-8111-111111111111\"}\n\
         {\"type\": \"summary\", \"summary\": \"Float rounding\", \"leafUuid\": \"x\"}\n",
    );
    std::fs::write(&file, text).unwrap();
    ok(glassbox(&data).args(["import", "claude-code"]).arg(&root));
    let all = list(&data, &[]);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["title"], "Rounding, fixed");

    let blank = glassbox(&data)
        .args(["sessions", "rename", &id, "   "])
        .output()
        .unwrap();
    assert!(!blank.status.success());
    assert!(String::from_utf8_lossy(&blank.stderr).contains("a title needs"));
}
