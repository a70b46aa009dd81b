//! Nodes still streaming and the process writing them. A node put with status `Streaming`
//! gets a lease naming its writer (pid and process start time); any other put ends it.
//! When a writer is killed mid-stream its nodes would stay "streaming" for ever: opening
//! the store settles them instead — a lease whose process is gone marks its node
//! interrupted (its text is what was committed) and makes it searchable. Leases of a live
//! process, or of one this machine cannot check, are left alone.

use serde_json::json;

use super::kv::{ReadableTable, WriteTxn};
use super::tables::LIVE_NODES;
use super::{NodeId, NodeStatus, Result, Store, StoreError};
use crate::store::Node;

/// This process as a lease names it: (pid, start time in clock ticks since boot; 0 where
/// the system does not say).
fn this_process() -> (u32, u64) {
    let pid = std::process::id();
    (pid, process_start(pid).unwrap_or(0))
}

/// When process `pid` started (field 22 of /proc/PID/stat), if it is running. A killed
/// process waiting to be reaped (state Z or X) is not.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.next(), Some("Z" | "X" | "x")) {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Whether the writer a lease names has ended. A start time of 0 cannot be checked.
fn writer_gone(pid: u32, start: u64) -> bool {
    start != 0 && process_start(pid) != Some(start)
}

/// Takes or ends `n`'s lease as its status says, in the put's transaction.
pub(super) fn note(txn: &WriteTxn, n: &Node) -> Result<()> {
    let mut t = txn.open_table(LIVE_NODES)?;
    if n.status == NodeStatus::Streaming {
        let (pid, start) = this_process();
        let mut v = [0u8; 12];
        v[..4].copy_from_slice(&pid.to_le_bytes());
        v[4..].copy_from_slice(&start.to_le_bytes());
        t.insert(n.id.to_bytes(), v.as_slice())?;
    } else {
        t.remove(n.id.to_bytes())?;
    }
    Ok(())
}

fn decode(v: &[u8]) -> Option<(u32, u64)> {
    let pid = u32::from_le_bytes(v.get(..4)?.try_into().ok()?);
    let start = u64::from_le_bytes(v.get(4..12)?.try_into().ok()?);
    Some((pid, start))
}

impl Store {
    /// Marks interrupted the nodes left streaming by a process that has ended; returns them.
    pub fn settle_orphans(&self) -> Result<Vec<NodeId>> {
        let orphans: Vec<NodeId> = {
            let r = self.read()?;
            let Some(t) = r.open_table_if_exists(LIVE_NODES)? else {
                return Ok(Vec::new());
            };
            let mut out = Vec::new();
            for row in t.iter()? {
                let (k, v) = row?;
                if decode(v.value()).is_some_and(|(pid, start)| writer_gone(pid, start)) {
                    out.push(NodeId::from_bytes(k.value()));
                }
            }
            out
        };
        if orphans.is_empty() {
            return Ok(orphans);
        }
        self.write(|w| {
            for id in &orphans {
                match w.node(*id)? {
                    Some(mut n) if n.status == NodeStatus::Streaming => {
                        n.status = NodeStatus::Interrupted;
                        n.meta.insert(
                            "interrupted".into(),
                            json!("the process writing it ended before the stream did"),
                        );
                        // Ends the lease and indexes the text.
                        w.put_node(&n)?;
                    }
                    _ => {
                        w.txn.open_table(LIVE_NODES)?.remove(id.to_bytes())?;
                    }
                }
            }
            Ok::<_, StoreError>(())
        })?;
        tracing::info!(
            nodes = orphans.len(),
            "settled nodes left streaming by an ended process"
        );
        Ok(orphans)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::store::testing::{Fixture, on_every_arm};
    use crate::store::{NodeType, Session, SessionSource};

    on_every_arm!(a_node_left_streaming_by_an_ended_writer_is_interrupted_on_open,);

    #[test]
    fn a_killed_child_is_gone_before_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = process_start(pid).unwrap();
        assert!(!writer_gone(pid, start));
        child.kill().unwrap();
        // Not reaped yet: a zombie, which counts as ended.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !writer_gone(pid, start) {
            assert!(
                std::time::Instant::now() < deadline,
                "a zombie still counts as alive"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(writer_gone(pid, start));
    }

    #[test]
    fn this_process_is_alive_and_a_made_up_one_is_gone() {
        let (pid, start) = this_process();
        assert!(start > 0, "Linux reports a start time");
        assert!(!writer_gone(pid, start));
        assert!(
            writer_gone(pid, start + 1),
            "a reused pid is another process"
        );
        assert!(!writer_gone(pid, 0), "an unknown start cannot be judged");
    }

    fn a_node_left_streaming_by_an_ended_writer_is_interrupted_on_open(fx: &Fixture) {
        let store = fx.open();
        let s = Session::new("q", SessionSource::Glassbox);
        let mut orphan = Node::new(s.id, NodeType::Thinking, "half a thought about zebras");
        orphan.status = NodeStatus::Streaming;
        let mut live = Node::new(s.id, NodeType::Response, "still coming");
        live.status = NodeStatus::Streaming;
        let mut done = Node::new(s.id, NodeType::Query, "finished");
        done.status = NodeStatus::Streaming;
        store
            .write(|w| {
                w.put_session(&s)?;
                w.put_node(&orphan)?;
                w.put_node(&live)?;
                w.put_node(&done)?;
                done.status = NodeStatus::Complete;
                w.put_node(&done)
            })
            .unwrap();
        // The orphan's writer: a process that has ended.
        let (pid, start) = this_process();
        let mut v = [0u8; 12];
        v[..4].copy_from_slice(&pid.to_le_bytes());
        v[4..].copy_from_slice(&(start + 1).to_le_bytes());
        store
            .write(|w| {
                w.txn
                    .open_table(LIVE_NODES)?
                    .insert(orphan.id.to_bytes(), v.as_slice())?;
                Ok(())
            })
            .unwrap();
        assert!(store.search("zebras", None, 5).unwrap().is_empty());
        drop(store);

        let store = fx.open();
        let settled = store.node(orphan.id).unwrap().unwrap();
        assert_eq!(settled.status, NodeStatus::Interrupted);
        assert!(
            settled.meta["interrupted"]
                .as_str()
                .unwrap()
                .contains("ended")
        );
        assert_eq!(store.search("zebras", None, 5).unwrap().len(), 1);
        // This process's node goes on streaming; a finished node has no lease.
        assert_eq!(
            store.node(live.id).unwrap().unwrap().status,
            NodeStatus::Streaming
        );
        assert!(store.settle_orphans().unwrap().is_empty());
        let r = store.read().unwrap();
        let t = r.open_table(LIVE_NODES).unwrap();
        assert!(t.get(live.id.to_bytes()).unwrap().is_some());
        assert!(t.get(done.id.to_bytes()).unwrap().is_none());
        assert!(t.get(orphan.id.to_bytes()).unwrap().is_none());
    }
}
