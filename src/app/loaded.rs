//! The session open in the Think workspace, windowed: every node's id, kind and step count
//! (from its head), and the bodies of only the nodes on screen and a little around them. A
//! small session has every body; a large one opens by reading its heads and one turn's
//! bodies, and reads the rest a turn at a time as the selection moves.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::store::{DecisionPoint, Node, NodeHead, NodeId, NodeType, Session, SessionId, Store};

/// Sessions of at most this many nodes are read whole when opened.
pub const READ_WHOLE_UP_TO: usize = 2_000;
/// The most bodies a window asks for at once: the selection's turn first, then its
/// neighbours (look-ahead), then nothing more.
pub const WINDOW_BODIES: usize = 256;
/// Bodies kept before those outside the window are let go.
const KEEP_BODIES: usize = 4 * WINDOW_BODIES;

/// What the open session knows of one node without its body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot {
    pub id: NodeId,
    pub kind: NodeType,
    /// ThinkGraph steps stored on it.
    pub steps: u32,
}

impl From<&NodeHead> for Slot {
    fn from(h: &NodeHead) -> Self {
        Self {
            id: h.id,
            kind: h.kind,
            steps: h.steps,
        }
    }
}

/// The session open in the Think workspace.
#[derive(Clone, Debug, Default)]
pub struct LoadedSession {
    pub session: Option<Session>,
    /// Every node, in creation order.
    pub slots: Vec<Slot>,
    pub index: HashMap<NodeId, usize>,
    /// The bodies read so far.
    bodies: HashMap<NodeId, Node>,
    /// The bodies last asked for: asked again only when the window changes, so a read that
    /// a newer one replaced is asked for again when the selection comes back.
    requested: Vec<NodeId>,
}

/// Bodies read for a window, with the decision points of their thinking nodes.
#[derive(Debug, Default)]
pub struct Bodies {
    pub nodes: Vec<Node>,
    pub decisions: HashMap<NodeId, Vec<DecisionPoint>>,
}

impl Bodies {
    /// Reads the nodes `ids` and their decision points.
    pub fn read(store: &Store, ids: &[NodeId]) -> Result<Self, crate::store::StoreError> {
        let nodes = store.nodes(ids)?;
        let mut decisions = HashMap::new();
        for n in nodes.iter().filter(|n| n.kind == NodeType::Thinking) {
            let d = store.decision_points(n.id)?;
            if !d.is_empty() {
                decisions.insert(n.id, d);
            }
        }
        Ok(Self { nodes, decisions })
    }
}

impl LoadedSession {
    /// A session with every body.
    pub fn new(session: Session, nodes: Vec<Node>) -> Self {
        let slots = nodes
            .iter()
            .map(|n| Slot {
                id: n.id,
                kind: n.kind,
                steps: crate::engines::thinkgraph::Step::count(n) as u32,
            })
            .collect();
        let mut s = Self::from_slots(session, slots);
        s.bodies = nodes.into_iter().map(|n| (n.id, n)).collect();
        s
    }

    /// A session known by its heads, with no body yet.
    pub fn from_heads(session: Session, heads: &[NodeHead]) -> Self {
        Self::from_slots(session, heads.iter().map(Slot::from).collect())
    }

    /// A session known by its slots, with no body yet.
    pub fn from_slots(session: Session, slots: Vec<Slot>) -> Self {
        let index = slots.iter().enumerate().map(|(i, s)| (s.id, i)).collect();
        Self {
            session: Some(session),
            slots,
            index,
            bodies: HashMap::new(),
            requested: Vec::new(),
        }
    }

    /// A node's body, when it has been read.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.bodies.get(&id)
    }

    /// The bodies read, in creation order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.slots.iter().filter_map(|s| self.bodies.get(&s.id))
    }

    pub fn id(&self) -> Option<SessionId> {
        self.session.as_ref().map(|s| s.id)
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether every node's body has been read.
    pub fn is_whole(&self) -> bool {
        self.bodies.len() == self.slots.len()
    }

    /// The positions of the turn holding the node at `at`: from its question up to the
    /// next question (from the start when no question comes before it).
    pub fn turn_of(&self, at: usize) -> Range<usize> {
        let slots = &self.slots;
        let at = at.min(slots.len().saturating_sub(1));
        let start = slots
            .get(..=at)
            .and_then(|before| before.iter().rposition(|n| n.kind == NodeType::Query))
            .unwrap_or(0);
        let end = slots
            .get(start + 1..)
            .and_then(|after| after.iter().position(|n| n.kind == NodeType::Query))
            .map_or(slots.len(), |p| start + 1 + p);
        start..end
    }

    /// The turn's nodes whose bodies the panes show (question, thinking, answer), in order.
    pub fn shown_in(&self, turn: Range<usize>) -> impl Iterator<Item = &Slot> {
        self.slots
            .get(turn)
            .unwrap_or(&[])
            .iter()
            .filter(|s| shows_body(s.kind))
    }

    /// The bodies the panes need around the node at `anchor` that are not read: the
    /// selected node, its turn's shown nodes, then those of the turns after and before; at
    /// most [`WINDOW_BODIES`]. Empty when they were just asked for.
    pub fn window_wanted(&mut self, anchor: usize, selected: Option<NodeId>) -> Vec<NodeId> {
        if self.slots.is_empty() || self.is_whole() {
            return Vec::new();
        }
        let turn = self.turn_of(anchor);
        let before = turn
            .start
            .checked_sub(1)
            .map(|p| self.turn_of(p))
            .unwrap_or(0..0);
        let after = if turn.end < self.slots.len() {
            self.turn_of(turn.end)
        } else {
            0..0
        };
        let mut wanted = Vec::new();
        let candidates = selected
            .filter(|id| self.index.contains_key(id))
            .into_iter()
            .chain(self.shown_in(turn).map(|s| s.id))
            .chain(self.shown_in(after).map(|s| s.id))
            .chain(self.shown_in(before).map(|s| s.id));
        let mut seen = HashSet::new();
        for id in candidates {
            if wanted.len() == WINDOW_BODIES {
                break;
            }
            if seen.insert(id) && !self.bodies.contains_key(&id) {
                wanted.push(id);
            }
        }
        if wanted.is_empty() || wanted == self.requested {
            return Vec::new();
        }
        self.requested = wanted.clone();
        wanted
    }

    /// The ids of the turns around `anchor` (the window and its neighbours), whose bodies are
    /// kept when others are let go.
    pub fn window_ids(&self, anchor: usize) -> HashSet<NodeId> {
        if self.slots.is_empty() {
            return HashSet::new();
        }
        let turn = self.turn_of(anchor);
        let from = turn
            .start
            .checked_sub(1)
            .map_or(0, |p| self.turn_of(p).start);
        let to = if turn.end < self.slots.len() {
            self.turn_of(turn.end).end
        } else {
            turn.end
        };
        self.slots[from..to].iter().map(|s| s.id).collect()
    }

    /// Keeps bodies that arrived, letting go of the oldest others when there are too many
    /// (never those of `keep`).
    pub fn add_bodies(&mut self, nodes: Vec<Node>, keep: &HashSet<NodeId>) {
        for n in nodes {
            if self.index.contains_key(&n.id) {
                self.bodies.insert(n.id, n);
            }
        }
        if self.bodies.len() > KEEP_BODIES {
            self.bodies.retain(|id, _| keep.contains(id));
        }
    }
}

/// Kinds whose text the thinking and answer panes show.
fn shows_body(kind: NodeType) -> bool {
    matches!(
        kind,
        NodeType::Query | NodeType::Thinking | NodeType::Response
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SessionSource;

    fn session_of(kinds: &[NodeType]) -> (LoadedSession, Vec<NodeHead>) {
        let s = Session::new("t", SessionSource::Glassbox);
        let heads: Vec<NodeHead> = kinds
            .iter()
            .map(|k| NodeHead::of(&Node::new(s.id, *k, "x")))
            .collect();
        (LoadedSession::from_heads(s, &heads), heads)
    }

    #[test]
    fn a_window_asks_for_the_turn_then_its_neighbours_once() {
        use NodeType::*;
        let kinds = [
            Query, Thinking, ToolCall, Response, Query, Response, Query, Response,
        ];
        let (mut l, heads) = session_of(&kinds);
        let ids: Vec<NodeId> = heads.iter().map(|h| h.id).collect();
        let wanted = l.window_wanted(4, Some(ids[4]));
        // The selected query, its answer, the next turn's, then the previous turn's shown
        // nodes (the tool call is not shown).
        assert_eq!(
            wanted,
            vec![ids[4], ids[5], ids[6], ids[7], ids[0], ids[1], ids[3]]
        );
        assert!(l.window_wanted(4, Some(ids[4])).is_empty());
        // Elsewhere, then back: asked again (the read may have been replaced by a newer one).
        assert_eq!(l.window_wanted(0, None).len(), 5);
        assert_eq!(l.window_wanted(4, Some(ids[4])).len(), 7);
        // Bodies that arrived are not asked for again.
        let s = l.session.clone().unwrap();
        let mut nodes = Vec::new();
        for h in &heads[4..6] {
            let mut n = Node::new(s.id, h.kind, "x");
            n.id = h.id;
            nodes.push(n);
        }
        l.add_bodies(nodes, &HashSet::new());
        assert_eq!(l.window_wanted(0, None).len(), 3);
    }

    #[test]
    fn a_whole_session_wants_nothing_and_finds_turns_by_kind() {
        use NodeType::*;
        let s = Session::new("t", SessionSource::Glassbox);
        let nodes: Vec<Node> = [Thinking, Query, Response, Query]
            .iter()
            .map(|k| Node::new(s.id, *k, "x"))
            .collect();
        let mut l = LoadedSession::new(s, nodes);
        assert!(l.is_whole());
        assert!(l.window_wanted(2, None).is_empty());
        assert_eq!(l.turn_of(0), 0..1);
        assert_eq!(l.turn_of(2), 1..3);
        assert_eq!(l.turn_of(3), 3..4);
    }
}
