//! Nodes still streaming and the process writing them. A node put with status `Streaming`
//! gets a lease naming its writer (pid and process start time, and where that pid means
//! something: the kernel boot, the pid namespace and the machine); any other put ends it.
//! When a writer is killed mid-stream its nodes would stay "streaming" for ever: opening
//! the store settles them instead — a lease whose process is gone marks its node
//! interrupted (its text is what was committed) and makes it searchable. Leases of a live
//! process, or of one this process cannot check (another machine or container sharing a
//! PostgreSQL store), are left alone.

use std::sync::OnceLock;

use serde_json::json;

use super::kv::{ReadableTable, WriteTxn};
use super::tables::LIVE_NODES;
use super::{NodeId, NodeStatus, Result, Store, StoreError};
use crate::store::Node;

/// Where a pid names one process: a boot of one kernel and one pid namespace in it; and
/// the machine, so a lease from before a reboot of this machine is known to be over. A
/// field the system does not tell is all zeros.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    boot: [u8; 16],
    pid_namespace: u64,
    machine: [u8; 16],
}

impl Place {
    /// Where this process runs (read once).
    fn here() -> Place {
        static HERE: OnceLock<Place> = OnceLock::new();
        *HERE.get_or_init(|| Place {
            boot: read_id("/proc/sys/kernel/random/boot_id"),
            pid_namespace: std::fs::read_link("/proc/self/ns/pid")
                .ok()
                .and_then(|link| {
                    // `pid:[4026531836]`
                    let link = link.to_string_lossy().into_owned();
                    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
                })
                .unwrap_or(0),
            machine: {
                let id = read_id("/etc/machine-id");
                if id == [0; 16] {
                    read_id("/var/lib/dbus/machine-id")
                } else {
                    id
                }
            },
        })
    }

    /// Whether a pid from `self` can be looked up in this process's `/proc`.
    fn same_pid_space(&self, here: &Place) -> bool {
        self.boot != [0; 16] && self.boot == here.boot && self.pid_namespace == here.pid_namespace
    }

    /// Whether this machine has booted again since a lease from `self` was taken.
    fn rebooted_since(&self, here: &Place) -> bool {
        self.machine != [0; 16]
            && self.machine == here.machine
            && self.boot != [0; 16]
            && self.boot != here.boot
    }
}

/// The 128-bit id in a file of hex digits (dashes allowed); zeros when it cannot be read.
fn read_id(path: &str) -> [u8; 16] {
    let mut id = [0u8; 16];
    let Ok(text) = std::fs::read_to_string(path) else {
        return id;
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(u8::is_ascii_hexdigit)
        .map(|b| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b - b'A' + 10,
        })
        .collect();
    if digits.len() != 32 {
        return id;
    }
    for (byte, pair) in id.iter_mut().zip(digits.chunks(2)) {
        *byte = pair[0] << 4 | pair[1];
    }
    id
}

/// A lease: the writer's pid and start time (in clock ticks since boot; 0 where the
/// system does not say), and its place (`None` in a lease written before leases had one:
/// it was taken on this machine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lease {
    pid: u32,
    start: u64,
    place: Option<Place>,
}

/// The length of an encoded lease with a place; one without has the first 12 bytes.
const LEASE_BYTES: usize = 4 + 8 + 16 + 8 + 16;

impl Lease {
    /// This process's lease.
    fn this_process() -> Lease {
        let pid = std::process::id();
        Lease {
            pid,
            start: process_start(pid).unwrap_or(0),
            place: Some(Place::here()),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(LEASE_BYTES);
        v.extend_from_slice(&self.pid.to_le_bytes());
        v.extend_from_slice(&self.start.to_le_bytes());
        if let Some(place) = &self.place {
            v.extend_from_slice(&place.boot);
            v.extend_from_slice(&place.pid_namespace.to_le_bytes());
            v.extend_from_slice(&place.machine);
        }
        v
    }

    fn decode(v: &[u8]) -> Option<Lease> {
        let pid = u32::from_le_bytes(v.get(..4)?.try_into().ok()?);
        let start = u64::from_le_bytes(v.get(4..12)?.try_into().ok()?);
        let place = match v.len() {
            12 => None,
            LEASE_BYTES => Some(Place {
                boot: v.get(12..28)?.try_into().ok()?,
                pid_namespace: u64::from_le_bytes(v.get(28..36)?.try_into().ok()?),
                machine: v.get(36..52)?.try_into().ok()?,
            }),
            _ => return None,
        };
        Some(Lease { pid, start, place })
    }

    /// Whether the writer has ended, as seen from `here`. A lease from another machine or
    /// pid namespace cannot be judged (unless this machine has rebooted since), nor can a
    /// start time of 0.
    fn writer_gone(&self, here: &Place) -> bool {
        match &self.place {
            Some(place) if place.rebooted_since(here) => true,
            Some(place) if !place.same_pid_space(here) => false,
            _ => writer_gone(self.pid, self.start),
        }
    }
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

/// Whether process `pid` of this pid space, started at `start`, has ended. A start time of
/// 0 cannot be checked.
fn writer_gone(pid: u32, start: u64) -> bool {
    start != 0 && process_start(pid) != Some(start)
}

/// Takes or ends `n`'s lease as its status says, in the put's transaction.
pub(super) fn note(txn: &WriteTxn, n: &Node) -> Result<()> {
    let mut t = txn.open_table(LIVE_NODES)?;
    if n.status == NodeStatus::Streaming {
        static THIS: OnceLock<Vec<u8>> = OnceLock::new();
        let lease = THIS.get_or_init(|| Lease::this_process().encode());
        t.insert(n.id.to_bytes(), lease.as_slice())?;
    } else {
        t.remove(n.id.to_bytes())?;
    }
    Ok(())
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
            let here = Place::here();
            for row in t.iter()? {
                let (k, v) = row?;
                if Lease::decode(v.value()).is_some_and(|lease| lease.writer_gone(&here)) {
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
        let Lease { pid, start, .. } = Lease::this_process();
        assert!(start > 0, "Linux reports a start time");
        assert!(!writer_gone(pid, start));
        assert!(
            writer_gone(pid, start + 1),
            "a reused pid is another process"
        );
        assert!(!writer_gone(pid, 0), "an unknown start cannot be judged");
    }

    #[test]
    fn a_lease_reads_back_with_or_without_its_place() {
        let me = Lease::this_process();
        assert_eq!(me.place, Some(Place::here()));
        assert_eq!(Lease::decode(&me.encode()), Some(me));
        let legacy = Lease { place: None, ..me };
        assert_eq!(legacy.encode().len(), 12);
        assert_eq!(Lease::decode(&legacy.encode()), Some(legacy));
        assert_eq!(Lease::decode(&me.encode()[..20]), None);
    }

    #[test]
    fn a_writer_elsewhere_is_left_alone_unless_this_machine_rebooted() {
        let here = Place {
            boot: [1; 16],
            pid_namespace: 7,
            machine: [2; 16],
        };
        let me = Lease::this_process();
        // A pid that is not this process's start time here: gone when it is of this place.
        let ended = |place| Lease {
            start: me.start + 1,
            place: Some(place),
            ..me
        };
        assert!(ended(here).writer_gone(&here));
        let other_namespace = Place {
            pid_namespace: 8,
            ..here
        };
        assert!(!ended(other_namespace).writer_gone(&here));
        let other_machine = Place {
            boot: [3; 16],
            machine: [4; 16],
            ..here
        };
        assert!(!ended(other_machine).writer_gone(&here));
        let unknown_boot = Place {
            boot: [0; 16],
            ..here
        };
        assert!(!ended(unknown_boot).writer_gone(&here));
        // This machine before its last boot: every process of then has ended, even one whose
        // pid and start time match a live process now.
        let before_reboot = Place {
            boot: [5; 16],
            ..here
        };
        let alive_then = Lease {
            place: Some(before_reboot),
            ..me
        };
        assert!(alive_then.writer_gone(&here));
        // The same machine id without a machine id to compare says nothing.
        let no_machine = Place {
            machine: [0; 16],
            ..here
        };
        assert!(
            !ended(Place {
                boot: [5; 16],
                ..no_machine
            })
            .writer_gone(&no_machine)
        );
        // And this process, here, is alive.
        assert!(!me.writer_gone(&Place::here()));
    }

    #[test]
    fn ids_are_read_from_hex_with_or_without_dashes() {
        let dir = tempfile::tempdir().unwrap();
        let dashed = dir.path().join("boot_id");
        std::fs::write(&dashed, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n").unwrap();
        assert_eq!(
            read_id(dashed.to_str().unwrap()),
            [
                0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2,
                0xe1, 0xf0
            ]
        );
        let short = dir.path().join("short");
        std::fs::write(&short, "abc\n").unwrap();
        assert_eq!(read_id(short.to_str().unwrap()), [0; 16]);
        assert_eq!(read_id("/no/such/file"), [0; 16]);
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
        let mut legacy = Node::new(s.id, NodeType::Thinking, "an older lease");
        legacy.status = NodeStatus::Streaming;
        let mut far = Node::new(s.id, NodeType::Thinking, "written on another machine");
        far.status = NodeStatus::Streaming;
        store
            .write(|w| {
                w.put_session(&s)?;
                for n in [&orphan, &live, &done, &legacy, &far] {
                    w.put_node(n)?;
                }
                done.status = NodeStatus::Complete;
                w.put_node(&done)
            })
            .unwrap();
        // The orphans' writer: a process of this machine that has ended, named by a lease
        // with its place and by one written before leases named it. The far node's writer
        // has the same pid and start on another machine: it cannot be judged from here.
        let me = Lease::this_process();
        let ended = Lease {
            start: me.start + 1,
            ..me
        };
        let elsewhere = Place {
            boot: [9; 16],
            machine: [9; 16],
            ..Place::here()
        };
        let leases = [
            (orphan.id, ended),
            (
                legacy.id,
                Lease {
                    place: None,
                    ..ended
                },
            ),
            (
                far.id,
                Lease {
                    place: Some(elsewhere),
                    ..ended
                },
            ),
        ];
        store
            .write(|w| {
                let mut t = w.txn.open_table(LIVE_NODES)?;
                for (id, lease) in &leases {
                    t.insert(id.to_bytes(), lease.encode().as_slice())?;
                }
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
        let status = |id| store.node(id).unwrap().unwrap().status;
        assert_eq!(status(legacy.id), NodeStatus::Interrupted);
        assert_eq!(status(far.id), NodeStatus::Streaming);
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
