//! Store tests across processes: kill -9 a writer mid-run, two concurrent writers and a
//! journal follower. Child processes are this test binary re-run in a child mode.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use glassbox::store::{
    ChangeKind, Node, NodeId, NodeType, Session, SessionId, SessionSource, Store,
};

const MODE: &str = "GLASSBOX_TEST_CHILD";
const STORE: &str = "GLASSBOX_TEST_STORE";
const COUNT: &str = "GLASSBOX_TEST_COUNT";
const BATCH: &str = "GLASSBOX_TEST_BATCH";
const SESSION: &str = "GLASSBOX_TEST_SESSION";

/// Spawns this test binary running only `child_entry`, in `mode`.
fn spawn_child(mode: &str, store: &Path, count: usize, batch: usize, session: SessionId) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_entry", "--exact", "--nocapture", "--test-threads=1"])
        .env(MODE, mode)
        .env(STORE, store)
        .env(COUNT, count.to_string())
        .env(BATCH, batch.to_string())
        .env(SESSION, session.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The child side: `write` appends nodes in batches and prints each committed id on its own
/// line ("id <uuid>"); `follow` follows the journal until it has seen `count` node puts and
/// prints "seen <n>".
#[test]
fn child_entry() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let store = Store::open(Path::new(&std::env::var(STORE).unwrap())).unwrap();
    let count: usize = std::env::var(COUNT).unwrap().parse().unwrap();
    let batch: usize = std::env::var(BATCH).unwrap().parse().unwrap();
    let session: SessionId = std::env::var(SESSION).unwrap().parse().unwrap();
    match mode.as_str() {
        "write" => {
            let mut written = 0;
            while count == 0 || written < count {
                let nodes: Vec<Node> = (0..batch)
                    .map(|i| Node::new(session, NodeType::Thinking, format!("n{}", written + i)))
                    .collect();
                store
                    .write(|w| {
                        for n in &nodes {
                            w.put_node(n)?;
                        }
                        Ok(())
                    })
                    .unwrap();
                // Printed only after the commit returned: every printed id is durable.
                let mut out = String::new();
                for n in &nodes {
                    out.push_str(&format!("id {}\n", n.id));
                }
                print!("{out}");
                written += batch;
            }
        }
        "follow" => {
            let mut since = 0;
            let mut seen = HashSet::new();
            let deadline = Instant::now() + Duration::from_secs(300);
            while seen.len() < count && Instant::now() < deadline {
                let changes = store.follow(since, 1000).unwrap();
                if changes.is_empty() {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                for (seq, c) in changes {
                    since = seq;
                    if c.kind == ChangeKind::NodePut {
                        seen.insert(c.id.unwrap());
                    }
                }
            }
            println!("seen {}", seen.len());
        }
        other => panic!("unknown child mode {other}"),
    }
}

fn new_store_with_session() -> (tempfile::TempDir, std::path::PathBuf, SessionId) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("glassbox.redb");
    let store = Store::open(&path).unwrap();
    let s = Session::new("processes", SessionSource::Glassbox);
    store.write(|w| w.put_session(&s)).unwrap();
    (dir, path, s.id)
}

#[test]
fn killed_writer_loses_nothing_committed() {
    for round in 0..20 {
        let (_dir, path, session) = new_store_with_session();
        let mut child = spawn_child("write", &path, 0, 10, session);
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut ids = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The test harness may print its own text ahead of the first line.
                if let Some((_, id)) = line.rsplit_once("id ") {
                    // A line cut by the kill is not a committed id.
                    if let Ok(id) = id.parse::<NodeId>() {
                        ids.push(id);
                    }
                }
            }
            ids
        });
        // Let it write for a random while, then kill -9 mid-run.
        std::thread::sleep(Duration::from_millis(30 + fastrand::u64(0..250)));
        child.kill().unwrap();
        child.wait().unwrap();
        let printed = reader.join().unwrap();
        assert!(
            !printed.is_empty() || round > 0,
            "the writer printed nothing"
        );
        let mut store = Store::open(&path).unwrap();
        let present: HashSet<NodeId> = store
            .session_nodes(session)
            .unwrap()
            .iter()
            .map(|n| n.id)
            .collect();
        for id in &printed {
            assert!(
                present.contains(id),
                "round {round}: committed node {id} missing after kill -9"
            );
        }
        assert!(
            store.check_integrity().unwrap(),
            "round {round}: integrity check failed"
        );
    }
}

#[test]
fn two_writers_and_a_follower() {
    let (_dir, path, session) = new_store_with_session();
    let follower = spawn_child("follow", &path, 10_000, 0, session);
    let a = spawn_child("write", &path, 5_000, 10, session);
    let b = spawn_child("write", &path, 5_000, 10, session);
    let mut ids = Vec::new();
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        ids.extend(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .filter_map(|l| l.rsplit_once("id ").map(|(_, id)| id))
                .map(|s| s.parse::<NodeId>().unwrap()),
        );
    }
    assert_eq!(ids.len(), 10_000);
    let out = follower.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("seen 10000"), "follower output: {text}");
    let store = Store::open(&path).unwrap();
    let nodes = store.session_nodes(session).unwrap();
    assert_eq!(nodes.len(), 10_000);
    let unique: HashSet<NodeId> = nodes.iter().map(|n| n.id).collect();
    assert_eq!(unique.len(), 10_000);
    assert_eq!(unique, ids.into_iter().collect::<HashSet<_>>());
    assert_eq!(store.counts().unwrap().nodes, 10_000);
}
