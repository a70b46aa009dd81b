//! Claude Code transcript import: exact counts over the fixtures (1.0.x, 2.0.x, 2.1.x),
//! idempotent re-import, appended lines, truncated and rewritten files, and `--watch` in a
//! separate process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use glassbox::engines::transcript::{ImportSummary, Importer, discover};
use glassbox::store::{EdgeType, Node, NodeType, PreparedNode, Session, Store};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude_code");
const S1: &str = "11111111-1111-4111-8111-111111111111";
const S2: &str = "22222222-2222-4222-8222-222222222222";
const S3: &str = "33333333-3333-4333-8333-333333333333";

/// Copies the fixture projects folder into a temp dir (tests append to and rewrite files).
fn copy_fixtures(dir: &Path) -> PathBuf {
    let root = dir.join("projects");
    support::copy_dir(&Path::new(FIXTURES).join("projects"), &root);
    root
}

fn import(store: &Store, root: &Path) -> ImportSummary {
    let mut errors = Vec::new();
    let files = discover(&[root.to_path_buf()], &mut errors).unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let mut importer = Importer::new(store.clone()).unwrap();
    importer.import_files(&files, None).unwrap();
    importer.take_summary()
}

fn session_by_claude_id(store: &Store, claude: &str) -> Session {
    store
        .sessions()
        .unwrap()
        .into_iter()
        .find(|s| s.meta.get("claude_session_id").and_then(|v| v.as_str()) == Some(claude))
        .unwrap_or_else(|| panic!("no session for {claude}"))
}

fn count(nodes: &[Node], kind: NodeType) -> usize {
    nodes.iter().filter(|n| n.kind == kind).count()
}

fn by_uuid<'a>(nodes: &'a [Node], uuid: &str) -> &'a Node {
    nodes
        .iter()
        .find(|n| n.meta.get("uuid").and_then(|v| v.as_str()) == Some(uuid))
        .unwrap_or_else(|| panic!("no node for line {uuid}"))
}

fn by_type(s: &ImportSummary, kind: &str) -> u64 {
    s.nodes_by_type.get(kind).copied().unwrap_or(0)
}

#[test]
fn import_gives_exact_counts_and_structure() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let s = import(&store, &root);

    assert_eq!(s.files, 4);
    assert_eq!(
        s.lines, 67,
        "the truncated last line of the 2.1.x file is not read yet"
    );
    assert_eq!(s.sessions, 3);
    assert_eq!(s.sessions_created, 3);
    assert_eq!(by_type(&s, "query"), 10);
    assert_eq!(by_type(&s, "response"), 12);
    assert_eq!(by_type(&s, "thinking"), 5);
    assert_eq!(by_type(&s, "tool_call"), 4);
    assert_eq!(by_type(&s, "compaction"), 1);
    assert_eq!(s.new_nodes(), 32);
    assert_eq!(s.thinking_blocks, 5);
    assert_eq!(s.partial_lines, 1);
    assert_eq!(s.dangling_parents, 1);
    assert_eq!(s.skipped_by_reason.get("progress"), Some(&23));
    assert_eq!(s.skipped_by_reason.get("file-history-snapshot"), Some(&1));
    assert_eq!(s.skipped_by_reason.get("queue-operation"), Some(&1));
    assert_eq!(s.skipped_by_reason.get("system:turn_duration"), Some(&1));
    assert_eq!(
        s.skipped_by_reason.get("system:stop_hook_summary"),
        Some(&1)
    );
    assert_eq!(
        s.skipped_by_reason.get("unknown line type 'custom-title'"),
        None,
        "custom-title lines name the session"
    );
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    assert!(
        s.errors[0].ends_with(&format!(
            "{S2}.jsonl:33: invalid JSON: EOF while parsing a string at line 1 column 155"
        )),
        "{}",
        s.errors[0]
    );
    assert_eq!(store.counts().unwrap().sessions, 3);
    assert_eq!(store.counts().unwrap().nodes, 32);

    // 1.0.x: the last summary line is the title; one line per API message.
    let s1 = session_by_claude_id(&store, S1);
    assert_eq!(s1.title, "Fixing float rounding in the calculator");
    assert_eq!(s1.source.as_str(), "claude_code");
    assert_eq!(s1.model.as_deref(), Some("claude-opus-4-20250514"));
    assert_eq!(s1.meta["cwd"], "/home/ann/calc");
    assert_eq!(s1.meta["git_branch"], "main");
    assert_eq!(s1.meta["version"], "1.0.43");
    let n1 = store.session_nodes(s1.id).unwrap();
    assert_eq!(
        (
            count(&n1, NodeType::Query),
            count(&n1, NodeType::Response),
            count(&n1, NodeType::Thinking),
            count(&n1, NodeType::ToolCall)
        ),
        (2, 3, 1, 1)
    );
    let thinking = n1.iter().find(|n| n.kind == NodeType::Thinking).unwrap();
    assert_eq!(thinking.meta["signature"], "sig-placeholder-not-base64");
    let steps = thinking.meta["steps"].as_array().unwrap();
    assert!(steps.len() >= 2);
    // Kept by offset and length into the node's text, as rows [index, kind, start, len,
    // confidence] (no text: it is found at its offset); read back with their text.
    let row = steps[0].as_array().expect("a step is a row");
    assert_eq!(row.len(), 5, "{row:?}");
    assert!(
        row[0].is_u64() && row[1].is_string() && row[2].is_u64(),
        "{row:?}"
    );
    assert!(row[3].as_u64().unwrap() > 0 && row[4].is_f64(), "{row:?}");
    let read = glassbox::engines::thinkgraph::Step::of(thinking);
    assert_eq!(read.len(), steps.len());
    assert!(read.iter().all(|s| !s.text.is_empty()));
    assert!(thinking.text.contains(&read[0].text));
    assert!(thinking.confidence.is_some());
    assert!(
        !store.decision_points(thinking.id).unwrap().is_empty(),
        "thinking with a choice has decision points"
    );
    let tool = n1.iter().find(|n| n.kind == NodeType::ToolCall).unwrap();
    assert_eq!(tool.meta["tool"], "Read");
    assert!(
        tool.meta["result"]
            .as_str()
            .unwrap()
            .contains("return a + b")
    );
    assert_eq!(tool.meta["is_error"], false);
    // Usage is kept once per message, on its first node.
    assert_eq!(thinking.meta["usage"]["output_tokens"], 210);
    assert!(n1.iter().filter(|n| n.meta.contains_key("usage")).count() == 3);
    // Node order is time order.
    let mut sorted = n1.clone();
    sorted.sort_by_key(|n| n.created_at);
    assert_eq!(
        sorted.iter().map(|n| n.id).collect::<Vec<_>>(),
        n1.iter().map(|n| n.id).collect::<Vec<_>>()
    );

    // 2.0.x: a message split over three lines is one response, usage counted once (latest).
    let s2 = session_by_claude_id(&store, S2);
    assert_eq!(s2.title, "login form", "a custom-title line wins");
    assert_eq!(s2.meta["title_source"], "custom_title");
    let n2 = store.session_nodes(s2.id).unwrap();
    assert_eq!(n2.len(), 18);
    assert_eq!(
        (
            count(&n2, NodeType::Query),
            count(&n2, NodeType::Response),
            count(&n2, NodeType::Thinking),
            count(&n2, NodeType::ToolCall),
            count(&n2, NodeType::Compaction)
        ),
        (6, 7, 2, 2, 1)
    );
    let msg1: Vec<&Node> = n2
        .iter()
        .filter(|n| n.meta.get("message_id").and_then(|v| v.as_str()) == Some("msg_v2_1"))
        .collect();
    assert_eq!(
        msg1.len(),
        3,
        "thinking, response and tool call of one message"
    );
    assert_eq!(
        msg1.iter().filter(|n| n.meta.contains_key("usage")).count(),
        1
    );
    let holder = msg1.iter().find(|n| n.meta.contains_key("usage")).unwrap();
    assert_eq!(holder.meta["usage"]["output_tokens"], 60);
    assert_eq!(holder.meta["stop_reason"], "tool_use");
    // Inline sidechain: a branch from the Task call.
    let task = n2
        .iter()
        .find(|n| n.meta.get("tool").and_then(|v| v.as_str()) == Some("Task"))
        .unwrap();
    let side_root = by_uuid(&n2, "20000000-0000-4000-8000-000000000s01");
    assert_eq!(side_root.meta["sidechain"], true);
    let branch = store
        .edges_from(side_root.id, Some(EdgeType::BranchesFrom))
        .unwrap();
    assert_eq!(branch.len(), 1);
    assert_eq!(branch[0].dst, task.id);
    assert_eq!(task.meta["result"], "Found SignupForm.tsx.");
    // The explicit `is_error: null` of the sidechain's tool result reads as false.
    let glob = n2
        .iter()
        .find(|n| n.meta.get("tool").and_then(|v| v.as_str()) == Some("Glob"))
        .unwrap();
    assert_eq!(glob.meta["is_error"], false);
    // Rewind: two user turns continue from the same response.
    let done = by_uuid(&n2, "20000000-0000-4000-8000-000000000a06");
    assert!(
        done.text.contains("\u{1b}[32mDone") && done.text.contains("â€”"),
        "ANSI and mojibake kept as they are"
    );
    let mut siblings: Vec<String> = store
        .edges_from(done.id, Some(EdgeType::Influences))
        .unwrap()
        .iter()
        .map(|e| store.node(e.dst).unwrap().unwrap().text)
        .collect();
    siblings.sort();
    assert_eq!(
        siblings,
        [
            "Actually, make the email field required instead",
            "Make the password field required"
        ]
    );
    // Compaction: its text is the summary; it supersedes the chain it replaced (not the
    // abandoned rewind branch, not the sidechain).
    let compaction = n2.iter().find(|n| n.kind == NodeType::Compaction).unwrap();
    assert!(
        compaction
            .text
            .starts_with("This session is being continued")
    );
    assert_eq!(compaction.meta["trigger"], "auto");
    assert_eq!(compaction.meta["pre_tokens"], 155000);
    assert_eq!(
        compaction.meta["logical_parent_uuid"],
        "20000000-0000-4000-8000-000000000a11"
    );
    let superseded: Vec<_> = store
        .edges_from(compaction.id, Some(EdgeType::Supersedes))
        .unwrap()
        .iter()
        .map(|e| e.dst)
        .collect();
    assert_eq!(superseded.len(), 7);
    assert!(superseded.contains(&by_uuid(&n2, "20000000-0000-4000-8000-000000000a01").id));
    assert!(!superseded.contains(&by_uuid(&n2, "20000000-0000-4000-8000-000000000a08").id));
    assert!(!superseded.contains(&side_root.id));
    let after = by_uuid(&n2, "20000000-0000-4000-8000-000000000c03");
    assert_eq!(
        store
            .edges_to(after.id, Some(EdgeType::Influences))
            .unwrap()[0]
            .src,
        compaction.id
    );
    // A parent that is not in the file is kept, marked, and makes no edge.
    let orphan = by_uuid(&n2, "20000000-0000-4000-8000-000000000m01");
    assert_eq!(orphan.meta["dangling_parent"], true);
    assert_eq!(
        orphan.meta["parent_uuid"],
        "ffffffff-dead-4bee-8000-000000000000"
    );
    assert!(
        store
            .edges_to(orphan.id, None)
            .unwrap()
            .iter()
            .all(|e| e.kind == EdgeType::Answers)
    );

    // 2.1.x: the subagent file joins the session as a branch from its Task call.
    let s3 = session_by_claude_id(&store, S3);
    assert_eq!(s3.meta["slug"], "quiet-river");
    assert_eq!(s3.meta["files"].as_array().unwrap().len(), 2);
    let n3 = store.session_nodes(s3.id).unwrap();
    assert_eq!(n3.len(), 7);
    let agent_root = by_uuid(&n3, "30000000-0000-4000-8000-000000000g01");
    assert_eq!(agent_root.meta["agent_id"], "a1b2c3");
    let task3 = n3.iter().find(|n| n.kind == NodeType::ToolCall).unwrap();
    assert_eq!(task3.meta["agent_id"], "a1b2c3");
    assert_eq!(
        store
            .edges_from(agent_root.id, Some(EdgeType::BranchesFrom))
            .unwrap()[0]
            .dst,
        task3.id
    );
    let merged = n3
        .iter()
        .find(|n| {
            n.meta.get("message_id").and_then(|v| v.as_str()) == Some("msg3_s1")
                && n.kind == NodeType::Response
        })
        .unwrap();
    assert_eq!(
        merged.text,
        "4 endpoints:\n\nGET /users, POST /users, GET /items, DELETE /items."
    );
}

#[test]
fn reimport_adds_nothing_and_appended_lines_add_only_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    import(&store, &root);
    let before = store.counts().unwrap();

    let again = import(&store, &root);
    assert_eq!(again.new_nodes(), 0);
    assert_eq!(again.nodes_updated, 0);
    assert_eq!(again.lines, 0);
    assert_eq!(again.files_read, 0);
    assert_eq!(store.counts().unwrap().nodes, before.nodes);
    assert_eq!(store.counts().unwrap().edges, before.edges);

    // Finish the truncated line and add an answer: exactly one query and one response.
    let main = root.join("-home-ann-api").join(format!("{S3}.jsonl"));
    let extra = std::fs::read_to_string(Path::new(FIXTURES).join("appended_line_3.txt")).unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&main)
        .unwrap()
        .write_all(extra.as_bytes())
        .unwrap();
    let s = import(&store, &root);
    assert_eq!(s.lines, 2);
    assert_eq!(s.new_nodes(), 2);
    assert_eq!((by_type(&s, "query"), by_type(&s, "response")), (1, 1));
    assert_eq!(s.partial_lines, 0);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(store.counts().unwrap().nodes, before.nodes + 2);
    // The new turn continues the chain read by the earlier run (through a skipped line).
    let n3 = store
        .session_nodes(session_by_claude_id(&store, S3).id)
        .unwrap();
    let q = by_uuid(&n3, "30000000-0000-4000-8000-000000000b06");
    assert_eq!(q.text, "And the changelog?");
    let from = store.edges_to(q.id, Some(EdgeType::Influences)).unwrap();
    assert_eq!(from.len(), 1);
    assert_eq!(
        from[0].src,
        by_uuid(&n3, "30000000-0000-4000-8000-000000000b05").id
    );

    let last = import(&store, &root);
    assert_eq!(last.new_nodes(), 0);
}

#[test]
fn truncated_and_rewritten_file_is_read_again_safely() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    import(&store, &root);
    let before = store.counts().unwrap().nodes;
    let file = root.join("-home-ann-calc").join(format!("{S1}.jsonl"));
    let text = std::fs::read_to_string(&file).unwrap();
    let kept: Vec<&str> = text.lines().take(3).collect();
    // Truncate in place (same inode) to three lines, then write a new, different turn.
    let mut new = kept.join("\n");
    new.push('\n');
    new.push_str(r#"{"parentUuid":"10000000-0000-4000-8000-000000000001","isSidechain":false,"type":"assistant","uuid":"10000000-0000-4000-8000-0000000000a1","timestamp":"2025-06-01T11:00:00.000Z","sessionId":"11111111-1111-4111-8111-111111111111","message":{"id":"msg_v1_new","role":"assistant","model":"claude-opus-4-20250514","content":[{"type":"text","text":"A rewritten answer."}],"usage":{"input_tokens":1,"output_tokens":1}}}"#);
    new.push('\n');
    assert!((new.len() as u64) < std::fs::metadata(&file).unwrap().len());
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&file)
        .unwrap()
        .write_all(new.as_bytes())
        .unwrap();
    let s = import(&store, &root);
    assert_eq!(s.files_reread, 1);
    assert_eq!(
        s.new_nodes(),
        1,
        "only the new answer is new; the kept lines map to the same nodes"
    );
    assert_eq!(s.nodes_updated, 0);
    assert_eq!(
        store.counts().unwrap().nodes,
        before + 1,
        "nothing stored is lost"
    );
    let n1 = store
        .session_nodes(session_by_claude_id(&store, S1).id)
        .unwrap();
    assert!(n1.iter().any(|n| n.text == "A rewritten answer."));
    assert_eq!(import(&store, &root).new_nodes(), 0);

    // A replaced file (new inode) is read from the start too, without duplicates.
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, &new).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let s = import(&store, &root);
    assert_eq!(s.files_reread, 1);
    assert_eq!(s.new_nodes(), 0);
}

/// Counts the nodes of the session imported from `claude`, or 0 while it is not there yet.
fn node_count(store_path: &Path, claude: &str) -> usize {
    let Ok(store) = support::store::open(store_path) else {
        return 0;
    };
    let Ok(sessions) = store.sessions() else {
        return 0;
    };
    sessions
        .iter()
        .find(|s| s.meta.get("claude_session_id").and_then(|v| v.as_str()) == Some(claude))
        .map(|s| store.session_node_count(s.id).unwrap_or(0) as usize)
        .unwrap_or(0)
}

fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn watch_in_another_process_picks_up_appended_lines() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let data = dir.path().join("data");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Kill(
        std::process::Command::new(env!("CARGO_BIN_EXE_glassbox"))
            .args([
                "import",
                "claude-code",
                "--watch",
                "--json",
                "--reconcile-secs",
                "1",
            ])
            .arg(&root)
            .env("GLASSBOX_DATA_DIR", &data)
            .envs(support::bin::store_env(&data))
            .env("GLASSBOX_CONFIG_DIR", dir.path().join("config"))
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let store_path = data.join("glassbox.redb");
    let timeout = Duration::from_secs(30);
    wait_for("the initial import", timeout, || {
        node_count(&store_path, S3) == 7
    });

    let main = root.join("-home-ann-api").join(format!("{S3}.jsonl"));
    let extra = std::fs::read_to_string(Path::new(FIXTURES).join("appended_line_3.txt")).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&main)
        .unwrap();
    f.write_all(extra.as_bytes()).unwrap();
    f.flush().unwrap();
    wait_for("the appended lines", timeout, || {
        node_count(&store_path, S3) == 9
    });

    // A new transcript file in a new project folder shows up too.
    let other = root.join("-home-ann-new");
    std::fs::create_dir_all(&other).unwrap();
    let src =
        std::fs::read_to_string(root.join("-home-ann-calc").join(format!("{S1}.jsonl"))).unwrap();
    std::fs::write(
        other.join("44444444-4444-4444-8444-444444444444.jsonl"),
        src.replace(S1, "44444444-4444-4444-8444-444444444444"),
    )
    .unwrap();
    wait_for("the new file", timeout, || {
        node_count(&store_path, "44444444-4444-4444-8444-444444444444") == 7
    });
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the watcher keeps running"
    );
}

#[test]
fn an_import_stopped_between_files_keeps_them_whole_and_the_next_run_reads_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let mut errors = Vec::new();
    let files = discover(std::slice::from_ref(&root), &mut errors).unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let mut importer = Importer::new(store.clone()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    importer.stop_on(stop.clone());
    // Ctrl-C as the first file is done.
    importer.on_progress(move |p| {
        if p.files_done == 1 {
            stop.store(true, Ordering::Relaxed);
        }
    });
    importer.import_files(&files, None).unwrap();
    let first = importer.take_summary();
    assert!(first.interrupted);
    assert_eq!((first.files, first.files_read), (1, 1));
    assert!(
        serde_json::to_value(&first).unwrap()["interrupted"] == true,
        "--json says so"
    );
    let rest = import(&store, &root);
    assert!(!rest.interrupted);
    assert_eq!(
        rest.files_read, 3,
        "the next run reads only the files not read"
    );
    assert_eq!(first.lines + rest.lines, 67);
    assert_eq!(import(&store, &root).lines, 0, "and then nothing is left");

    // The same store as one import without a stop.
    let whole = support::store::open(&dir.path().join("whole.redb")).unwrap();
    import(&whole, &root);
    let shape = |store: &Store| {
        let mut v: Vec<_> = store
            .sessions()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.title.clone(), store.session_nodes(s.id).unwrap()))
            .collect();
        v.sort_by_key(|s| s.0);
        v
    };
    assert_eq!(shape(&store), shape(&whole));
    assert!(
        serde_json::to_value(import(&whole, &root))
            .unwrap()
            .get("interrupted")
            .is_none()
    );
}

#[test]
fn a_deleted_session_comes_back_on_the_next_import() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    import(&store, &root);
    let s1 = session_by_claude_id(&store, S1);
    let nodes = store.session_nodes(s1.id).unwrap();
    store.write(|w| w.delete_session(s1.id)).unwrap();
    let s = import(&store, &root);
    assert_eq!(
        s.files_reread, 1,
        "only the deleted session's file is read again"
    );
    assert_eq!(s.new_nodes(), 7);
    let back = session_by_claude_id(&store, S1);
    assert_eq!(back.id, s1.id, "ids are deterministic");
    assert_eq!(store.session_nodes(back.id).unwrap(), nodes);
    assert_eq!(import(&store, &root).new_nodes(), 0);
}

#[test]
fn a_renamed_transcript_is_not_read_again_when_unchanged() {
    // A copy named by something other than its session id: the second run reads nothing.
    let dir = tempfile::tempdir().unwrap();
    let fixtures = copy_fixtures(dir.path());
    let root = dir.path().join("renamed");
    std::fs::create_dir_all(root.join("-home-ann-calc")).unwrap();
    std::fs::copy(
        fixtures.join("-home-ann-calc").join(format!("{S1}.jsonl")),
        root.join("-home-ann-calc").join("calc-notes.jsonl"),
    )
    .unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    assert_eq!(import(&store, &root).new_nodes(), 7);
    let again = import(&store, &root);
    assert_eq!(
        (again.files_read, again.files_reread, again.lines),
        (0, 0, 0),
        "an unchanged file is not read again"
    );
}

#[test]
fn a_subagent_file_imported_later_still_branches_from_its_task_call() {
    // The session's main file first, on its own; its subagent file arrives in a later run,
    // so the Task call it branches from has to be found in the store.
    let dir = tempfile::tempdir().unwrap();
    let root = copy_fixtures(dir.path());
    let session_dir = root.join("-home-ann-api").join(S3);
    let held = dir.path().join("held-back");
    std::fs::rename(&session_dir, &held).unwrap();
    let store = support::store::open(&dir.path().join("glassbox.redb")).unwrap();
    let first = import(&store, &root);
    // Only the fixture's deliberately malformed line.
    assert_eq!(first.errors.len(), 1, "{:?}", first.errors);
    std::fs::rename(&held, &session_dir).unwrap();
    let second = import(&store, &root);
    assert_eq!(second.errors, Vec::<String>::new());
    assert!(second.new_nodes() > 0);

    let s3 = session_by_claude_id(&store, S3);
    let n3 = store.session_nodes(s3.id).unwrap();
    assert_eq!(n3.len(), 7);
    let agent_root = by_uuid(&n3, "30000000-0000-4000-8000-000000000g01");
    let task3 = n3.iter().find(|n| n.kind == NodeType::ToolCall).unwrap();
    let branch = store
        .edges_from(agent_root.id, Some(EdgeType::BranchesFrom))
        .unwrap();
    assert_eq!(branch.len(), 1);
    assert_eq!(branch[0].dst, task3.id);

    // The same records as importing everything at once.
    let other = tempfile::tempdir().unwrap();
    let at_once = support::store::open(&other.path().join("glassbox.redb")).unwrap();
    import(&at_once, &copy_fixtures(other.path()));
    let at_once_nodes = at_once
        .session_nodes(session_by_claude_id(&at_once, S3).id)
        .unwrap();
    assert_eq!(n3, at_once_nodes);
}

/// One API message over four lines, as Claude Code writes it: a whitespace-only text line,
/// the thinking, the text, a tool call, all sharing `message.id`.
#[test]
fn a_split_message_reads_thinking_first_and_its_checkpoint_reaches_what_follows() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects");
    let project = root.join("-home-ann-split");
    std::fs::create_dir_all(&project).unwrap();
    let sid = "99999999-9999-4999-8999-999999999999";
    let line =
        |uuid: &str, parent: Option<&str>, kind: &str, ts: &str, message: serde_json::Value| {
            serde_json::json!({
                "parentUuid": parent, "isSidechain": false, "cwd": "/home/ann/split",
                "sessionId": sid, "version": "2.1.39", "type": kind, "uuid": uuid,
                "timestamp": ts, "message": message
            })
            .to_string()
        };
    let msg = |content: serde_json::Value| {
        serde_json::json!({"id": "msg_split", "type": "message", "role": "assistant",
                           "model": "claude-opus-4-5", "content": content})
    };
    let lines = [
        line(
            "u1",
            None,
            "user",
            "2026-01-01T10:00:00.000Z",
            serde_json::json!({"role": "user", "content": "List the files"}),
        ),
        line(
            "a1",
            Some("u1"),
            "assistant",
            "2026-01-01T10:00:01.000Z",
            msg(serde_json::json!([{"type": "text", "text": "\n\n"}])),
        ),
        line(
            "a2",
            Some("a1"),
            "assistant",
            "2026-01-01T10:00:01.100Z",
            msg(
                serde_json::json!([{"type": "thinking", "thinking": "I should run ls first.", "signature": "s"}]),
            ),
        ),
        line(
            "a3",
            Some("a2"),
            "assistant",
            "2026-01-01T10:00:01.200Z",
            msg(serde_json::json!([{"type": "text", "text": "Listing them now."}])),
        ),
        line(
            "a4",
            Some("a3"),
            "assistant",
            "2026-01-01T10:00:01.300Z",
            msg(
                serde_json::json!([{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]),
            ),
        ),
    ];
    std::fs::write(
        project.join(format!("{sid}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    import(&store, &root);
    let session = session_by_claude_id(&store, sid);
    let nodes = store.session_nodes(session.id).unwrap();
    // No node for the whitespace line: one query, one thinking, one response, one call.
    assert_eq!(nodes.len(), 4, "{nodes:#?}");
    let of = |k: NodeType| nodes.iter().find(|n| n.kind == k).unwrap().id;
    let (q, t, r, c) = (
        of(NodeType::Query),
        of(NodeType::Thinking),
        of(NodeType::Response),
        of(NodeType::ToolCall),
    );
    assert_eq!(store.node(r).unwrap().unwrap().text, "Listing them now.");
    let out = |n| -> Vec<(EdgeType, glassbox::store::NodeId)> {
        let mut v: Vec<_> = store
            .edges_from(n, None)
            .unwrap()
            .into_iter()
            .map(|e| (e.kind, e.dst))
            .collect();
        v.sort();
        v
    };
    assert_eq!(out(q), [(EdgeType::Influences, t)]);
    assert_eq!(out(t), [(EdgeType::Influences, r)]);
    let mut want = vec![(EdgeType::Influences, c), (EdgeType::Answers, q)];
    want.sort();
    assert_eq!(out(r), want);
    // A checkpoint on the thinking disputes the text and the call that followed it.
    let downstream = glassbox::engines::fork::downstream_of(&store, t).unwrap();
    assert!(
        downstream.contains(&r) && downstream.contains(&c),
        "{downstream:?}"
    );
}

/// One transcript line of session `sid`.
fn line(sid: &str, uuid: &str, parent: Option<&str>, ts: &str, content: &str) -> String {
    serde_json::json!({
        "type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": sid,
        "timestamp": ts, "cwd": "/nowhere/proj-x", "slug": "brave-fox",
        "message": {"role": "user", "content": content},
    })
    .to_string()
}

#[test]
fn titles_skip_system_payloads_and_render_slash_commands() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects/-nowhere-proj-x");
    std::fs::create_dir_all(&root).unwrap();
    let a = "aaaaaaaa-0000-4000-8000-000000000001";
    let b = "bbbbbbbb-0000-4000-8000-000000000002";
    let c = "cccccccc-0000-4000-8000-000000000003";
    // a: payloads first, then a slash command.
    let lines_a = [
        line(
            a,
            "00000000-0000-4000-8000-00000000000a",
            None,
            "2026-01-01T10:00:00Z",
            "<task-notification>\n<task-id>b1</task-id>\n</task-notification>",
        ),
        line(
            a,
            "00000000-0000-4000-8000-00000000000b",
            Some("00000000-0000-4000-8000-00000000000a"),
            "2026-01-01T10:00:01Z",
            "<local-command-stdout>done</local-command-stdout>",
        ),
        line(
            a,
            "00000000-0000-4000-8000-00000000000c",
            Some("00000000-0000-4000-8000-00000000000b"),
            "2026-01-01T10:00:02Z",
            "<command-message>create-beads is running…</command-message>\n<command-name>/create-beads</command-name>\n<command-args>foo</command-args>",
        ),
        line(
            a,
            "00000000-0000-4000-8000-00000000000d",
            Some("00000000-0000-4000-8000-00000000000c"),
            "2026-01-01T10:00:03Z",
            "and now a typed question",
        ),
    ];
    std::fs::write(root.join(format!("{a}.jsonl")), lines_a.join("\n") + "\n").unwrap();
    // b: only payloads: the slug.
    let lines_b = [line(
        b,
        "00000000-0000-4000-8000-0000000000b1",
        None,
        "2026-01-02T10:00:00Z",
        "<system-reminder>be brief</system-reminder>",
    )];
    std::fs::write(root.join(format!("{b}.jsonl")), lines_b.join("\n") + "\n").unwrap();
    // c: a typed prompt, then a custom title set later in the file.
    let mut lines_c = vec![line(
        c,
        "00000000-0000-4000-8000-0000000000c1",
        None,
        "2026-01-03T10:00:00Z",
        "Fix the login form\nplease",
    )];
    lines_c.push(r#"{"type":"custom-title","customTitle":"login work","sessionId":"cccccccc-0000-4000-8000-000000000003"}"#.to_string());
    std::fs::write(root.join(format!("{c}.jsonl")), lines_c.join("\n") + "\n").unwrap();

    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    let projects = dir.path().join("projects");
    import(&store, &projects);
    let sa = session_by_claude_id(&store, a);
    assert_eq!(sa.title, "/create-beads foo");
    assert_eq!(sa.meta["title_source"], "prompt");
    let nodes = store.session_nodes(sa.id).unwrap();
    let first = by_uuid(&nodes, "00000000-0000-4000-8000-00000000000a");
    assert_eq!(first.meta["system_payload"], "task-notification");
    assert!(
        first.text.starts_with("<task-notification>"),
        "the text is kept as written"
    );
    let cmd = by_uuid(&nodes, "00000000-0000-4000-8000-00000000000c");
    assert_eq!(cmd.meta["command"], "/create-beads foo");
    assert!(
        by_uuid(&nodes, "00000000-0000-4000-8000-00000000000d")
            .meta
            .get("system_payload")
            .is_none()
    );

    let sb = session_by_claude_id(&store, b);
    assert_eq!(sb.title, "brave-fox");
    assert_eq!(sb.meta["title_source"], "slug");

    let sc = session_by_claude_id(&store, c);
    assert_eq!(sc.title, "login work");

    // A typed prompt appended to b later replaces the slug; a re-import changes nothing.
    let more = line(
        b,
        "00000000-0000-4000-8000-0000000000b2",
        Some("00000000-0000-4000-8000-0000000000b1"),
        "2026-01-02T10:01:00Z",
        "What is a monad?",
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(format!("{b}.jsonl")))
        .unwrap();
    writeln!(f, "{more}").unwrap();
    drop(f);
    import(&store, &projects);
    import(&store, &projects);
    assert_eq!(session_by_claude_id(&store, b).title, "What is a monad?");
    assert_eq!(session_by_claude_id(&store, a).title, "/create-beads foo");
    assert_eq!(session_by_claude_id(&store, c).title, "login work");
}

/// The Claude session id of the prose session numbered `s` ([`write_prose_sessions`]).
fn prose_session_id(s: u32) -> String {
    format!("{s:08x}-0000-4000-8000-000000000000")
}

/// Writes sessions `range` into `root`, each of `questions` questions of about a kilobyte of
/// varied prose, numbered so that no two are alike; returns the files written.
fn write_prose_sessions(root: &Path, range: std::ops::Range<u32>, questions: u32) -> Vec<PathBuf> {
    let words = [
        "the", "importer", "reads", "each", "line", "maps", "its", "message", "and", "writes",
        "nodes", "with", "their", "edges", "cursor", "batch", "commit", "index",
    ];
    let mut written = Vec::new();
    for s in range {
        let sid = prose_session_id(s);
        let lines: Vec<String> = (0..questions)
            .map(|i| {
                let text: Vec<String> = (0..160u32)
                    .map(|j| match (s * 300 + i + j * 7) % 19 {
                        0 => format!("item{}", s * 100_000 + i * 160 + j),
                        k => words[k as usize % words.len()].to_string(),
                    })
                    .collect();
                line(
                    &sid,
                    &format!("{s:08x}-{i:04x}-4000-8000-000000000000"),
                    (i > 0)
                        .then(|| format!("{s:08x}-{:04x}-4000-8000-000000000000", i - 1))
                        .as_deref(),
                    &format!("2026-01-0{}T10:{:02}:{:02}Z", s % 9 + 1, i / 60, i % 60),
                    &text.join(" "),
                )
            })
            .collect();
        let path = root.join(format!("{sid}.jsonl"));
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        written.push(path);
    }
    written
}

#[test]
fn a_large_first_import_trains_the_stores_dictionary_and_reads_back_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects/-nowhere-proj-x");
    std::fs::create_dir_all(&root).unwrap();
    // Sessions of 300 questions of about a kilobyte each: four of them hold more records
    // than a dictionary is trained on.
    let write_sessions = |range| {
        write_prose_sessions(&root, range, 300);
    };
    write_sessions(0..4);
    let path = dir.path().join("s.redb");
    let store = support::store::open(&path).unwrap();
    assert!(store.record_dict().is_none());
    let first = import(&store, &dir.path().join("projects"));
    assert_eq!(first.new_nodes(), 1200);
    // Trained on a thread of its own while the import went on, and stored by its end even
    // when no record of this import was compressed with it.
    let dict = store
        .record_dict()
        .expect("a dictionary trained on the first records");
    assert!(dict.len() > 1000, "{} bytes", dict.len());
    // The records of the next import are compressed with it: they take less room than the
    // same records compressed without a dictionary.
    let all_nodes = |store: &Store| -> Vec<Node> {
        store
            .sessions()
            .unwrap()
            .iter()
            .flat_map(|s| store.session_nodes(s.id).unwrap())
            .collect()
    };
    let earlier: std::collections::HashSet<_> = all_nodes(&store).iter().map(|n| n.id).collect();
    let before = store.node_compression().unwrap().stored;
    write_sessions(4..8);
    let next = import(&store, &dir.path().join("projects"));
    assert_eq!(next.new_nodes(), 1200);
    let stored = store.node_compression().unwrap().stored - before;
    assert_eq!(store.sessions().unwrap().len(), 8);
    let nodes = all_nodes(&store);
    assert_eq!(nodes.len(), 2400);
    assert!(nodes.iter().all(|n| n.text.split(' ').count() == 160));
    let without: u64 = nodes
        .iter()
        .filter(|n| !earlier.contains(&n.id))
        .map(|n| PreparedNode::new(n, None).unwrap().encoded_len() as u64)
        .sum();
    assert!(
        stored * 10 < without * 8,
        "{stored} bytes stored, {without} without a dictionary"
    );
    // Records compressed with it or before it, an import of the same files changes nothing.
    let again = import(&store, &dir.path().join("projects"));
    assert_eq!(again.new_nodes(), 0);
    assert_eq!(again.nodes_updated, 0);
    // Opened again, the store still has it and reads every record.
    drop(store);
    let store = support::store::open(&path).unwrap();
    assert_eq!(store.record_dict().map(|d| d.id()), Some(dict.id()));
    let hits = store.search("item200814", None, 5).unwrap();
    assert_eq!(hits.len(), 1);
    let n = store.node(hits[0].node).unwrap().unwrap();
    assert!(n.text.contains("item200814"));
}

#[test]
fn syncs_file_by_file_add_up_to_a_dictionary() {
    // As `--watch` reads: a pipe per file, each with too few records to train on alone.
    let mut importer = None;
    dictionary_from_file_by_file_imports(|store, path| {
        importer
            .get_or_insert_with(|| Importer::new(store.clone()).unwrap().keep_state())
            .sync_file(path)
            .unwrap()
    });
}

#[test]
fn imports_a_session_at_a_time_train_on_the_records_stored() {
    // As the Claude Code hooks import: a process per session, none with enough records to
    // train on, and nothing handed from one to the next but the store.
    dictionary_from_file_by_file_imports(|store, path| {
        let mut importer = Importer::new(store.clone()).unwrap();
        importer.import_files(&[path.to_path_buf()], None).unwrap();
        importer.take_summary().new_nodes() > 0
    });
}

/// Imports ten files of 40 questions one at a time with `import`, each too small to train
/// a dictionary on; the store must then have one, and four more files imported the same way
/// must be stored at least a fifth smaller than without it.
fn dictionary_from_file_by_file_imports(mut import: impl FnMut(&Store, &Path) -> bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("projects/-nowhere-proj-x");
    std::fs::create_dir_all(&root).unwrap();
    let store = support::store::open(&dir.path().join("s.redb")).unwrap();
    for (i, path) in write_prose_sessions(&root, 0..10, 40).iter().enumerate() {
        assert!(import(&store, path));
        assert!(
            i > 0 || store.record_dict().is_none(),
            "one file trained one"
        );
    }
    assert_eq!(store.counts().unwrap().nodes, 400);
    let dict = store
        .record_dict()
        .expect("a dictionary trained on the records of all the imports");
    // The imports after it compress with it.
    let before = store.node_compression().unwrap().stored;
    let mut later = Vec::new();
    for (s, path) in (10..).zip(write_prose_sessions(&root, 10..14, 40)) {
        assert!(import(&store, &path));
        let session = session_by_claude_id(&store, &prose_session_id(s));
        later.extend(store.session_nodes(session.id).unwrap());
    }
    let stored = store.node_compression().unwrap().stored - before;
    let without: u64 = later
        .iter()
        .map(|n| PreparedNode::new(n, None).unwrap().encoded_len() as u64)
        .sum();
    assert_eq!(later.len(), 160);
    assert!(
        stored * 10 < without * 8,
        "{stored} bytes stored, {without} without a dictionary"
    );
    assert_eq!(store.record_dict().map(|d| d.id()), Some(dict.id()));
    // The records imported before it (`doctor --compact`) are compressed with it too.
    let older = store.node_compression().unwrap();
    assert!(older.without_dict > 0);
    let done = store.recompress_records(&|_| {}).unwrap();
    assert_eq!((done.dict, done.trained), (Some(dict.id()), false));
    assert!(done.records > 0 && done.bytes_after < done.bytes_before);
    let now = store.node_compression().unwrap();
    assert_eq!((now.without_dict, now.plain), (0, older.plain));
}

#[test]
fn a_hook_fed_store_gets_its_dictionary_and_doctor_compact_brings_the_rest_to_it() {
    // The real binary, a process per session as the hooks' queue imports them: the store
    // trains its dictionary once it holds enough, `doctor` says how much was written before
    // it, and `doctor --compact` compresses that with it.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let doctor = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["doctor", "--json"];
        all.extend(args);
        serde_json::from_slice(&support::bin::ok(support::bin::glassbox(&data).args(all)).stdout)
            .unwrap()
    };
    let root = dir.path().join("projects/-nowhere-proj-x");
    std::fs::create_dir_all(&root).unwrap();
    for (s, path) in (0..).zip(write_prose_sessions(&root, 0..10, 40)) {
        let one = dir.path().join(format!("one-{s}/-nowhere-proj-x"));
        std::fs::create_dir_all(&one).unwrap();
        std::fs::copy(&path, one.join(path.file_name().unwrap())).unwrap();
        support::bin::ok(support::bin::glassbox(&data).args([
            "import",
            "claude-code",
            one.parent().unwrap().to_str().unwrap(),
            "--json",
        ]));
    }
    let open = || support::store::open(&data.join("glassbox.redb")).unwrap();
    let (dict, before) = {
        let store = open();
        let dict = store
            .record_dict()
            .expect("trained from the stored sessions")
            .id();
        (dict, store.node_compression().unwrap())
    };
    assert!(before.without_dict > 0, "{before:?}");
    if !support::pg::suite_on_postgres() {
        // The report of a redb file says how much predates the dictionary.
        let nodes = &doctor(&[])["store"]["compression"];
        assert_eq!(nodes["node_bytes_without_dictionary"], before.without_dict);
        let text =
            String::from_utf8(support::bin::ok(support::bin::glassbox(&data).arg("doctor")).stdout)
                .unwrap();
        assert!(
            text.contains("of them written before the dictionary: `glassbox doctor --compact`"),
            "{text}"
        );
    }

    let compacted = doctor(&["--compact"]);
    let r = &compacted["compacted"]["recompressed"];
    assert_eq!(r["dict"], dict, "{compacted}");
    assert_eq!(r["trained"], false);
    assert!(r["records"].as_u64().unwrap() > 0, "{compacted}");
    assert!(
        r["bytes_after"].as_u64().unwrap() * 10 < r["bytes_before"].as_u64().unwrap() * 8,
        "{compacted}"
    );
    let store = open();
    let now = store.node_compression().unwrap();
    assert_eq!((now.without_dict, now.plain), (0, before.plain));
    assert!(now.stored < before.stored, "{now:?} {before:?}");
    assert_eq!(store.counts().unwrap().nodes, 400);
}
