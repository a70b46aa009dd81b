//! The graph pane's model: a session's nodes as a tree of turns → nodes → thinking steps →
//! decision points, flattened into rows only when it changes, so drawing touches only the
//! visible window however large the session is.

use std::collections::HashSet;

use crate::store::{DecisionPoint, Node, NodeHead, NodeId, NodeStatus, NodeType};

/// Identifies a row across rebuilds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowKey {
    Node(NodeId),
    Step(NodeId, u32),
    Decision(NodeId, u32),
}

/// What a row shows, for colouring.
#[derive(Clone, Debug, PartialEq)]
pub enum RowKind {
    Node(NodeType),
    Step(String),
    Decision,
}

/// One visible line of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: RowKey,
    pub depth: u8,
    pub expandable: bool,
    pub expanded: bool,
    pub kind: RowKind,
    pub label: String,
    pub confidence: Option<f64>,
    /// Marked when the node is streaming, interrupted or failed.
    pub status: Option<&'static str>,
    /// Memory entries shown to the model for this query (`meta.memory_used`).
    pub memory: usize,
}

/// A thinking step with its decision points.
#[derive(Clone, Debug, PartialEq)]
pub struct StepEntry {
    pub index: u32,
    pub kind: String,
    pub excerpt: String,
    pub confidence: Option<f64>,
    pub decisions: Vec<DecisionEntry>,
}

/// A decision point inside a step.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionEntry {
    pub index: u32,
    pub chosen: String,
    pub alternatives: usize,
    pub confidence: f64,
}

/// A node with its steps (thinking nodes) in the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeEntry {
    pub id: NodeId,
    pub kind: NodeType,
    pub excerpt: String,
    pub status: NodeStatus,
    pub confidence: Option<f64>,
    pub steps: Vec<StepEntry>,
    /// How many steps it has, known from its head before `steps` are read with its body.
    pub step_count: u32,
    /// Rests on a step a human checkpoint disputed (`meta.disputed_by`).
    pub disputed: bool,
    /// Memory entries the model was shown for it (queries: `meta.memory_used`).
    pub memory: usize,
}

/// A query and what followed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub query: NodeEntry,
    pub children: Vec<NodeEntry>,
}

/// A session's nodes grouped into turns, built one entry at a time (off the UI thread, from
/// heads) and then handed to [`GraphModel::load_tree`].
#[derive(Clone, Debug, Default)]
pub struct Tree {
    turns: Vec<Turn>,
    loose: Vec<NodeEntry>,
}

impl Tree {
    /// Adds the next node in creation order: a query starts a turn.
    pub fn push(&mut self, entry: NodeEntry) {
        if entry.kind == NodeType::Query {
            self.turns.push(Turn {
                query: entry,
                children: Vec::new(),
            });
        } else if let Some(t) = self.turns.last_mut() {
            t.children.push(entry);
        } else {
            self.loose.push(entry);
        }
    }
}

/// The whole tree plus selection, scroll and the flattened rows.
#[derive(Clone, Debug, Default)]
pub struct GraphModel {
    turns: Vec<Turn>,
    /// Nodes before the first query (imported transcripts may start that way).
    loose: Vec<NodeEntry>,
    /// Node rows that are open (nodes start closed).
    expanded: HashSet<RowKey>,
    /// Step rows that are closed (steps with decisions start open).
    collapsed_steps: HashSet<RowKey>,
    rows: Vec<Row>,
    pub selected: usize,
    pub offset: usize,
}

pub use crate::store::excerpt;

fn steps_from_meta(node: &Node) -> Vec<StepEntry> {
    crate::engines::thinkgraph::Step::of(node)
        .into_iter()
        .map(|s| StepEntry {
            index: s.index,
            kind: s.kind.as_str().to_string(),
            excerpt: excerpt(&s.text, 120),
            confidence: Some(s.confidence),
            decisions: Vec::new(),
        })
        .collect()
}

impl NodeEntry {
    pub fn from_node(node: &Node, decisions: &[DecisionPoint]) -> Self {
        let mut steps = steps_from_meta(node);
        for (i, d) in decisions.iter().enumerate() {
            let entry = DecisionEntry {
                index: i as u32,
                chosen: excerpt(&d.chosen_path, 100),
                alternatives: d.alternatives.len(),
                confidence: d.confidence,
            };
            match steps.iter_mut().find(|s| s.index == d.step_number) {
                Some(s) => s.decisions.push(entry),
                None => match steps.last_mut() {
                    Some(s) => s.decisions.push(entry),
                    None => steps.push(StepEntry {
                        index: d.step_number,
                        kind: "step".into(),
                        excerpt: String::new(),
                        confidence: None,
                        decisions: vec![entry],
                    }),
                },
            }
        }
        Self {
            id: node.id,
            kind: node.kind,
            excerpt: excerpt(&node.text, 120),
            status: node.status.clone(),
            confidence: node.confidence,
            step_count: steps.len() as u32,
            steps,
            disputed: node.meta.contains_key("disputed_by"),
            memory: node
                .meta
                .get(crate::engines::orchestrator::MEMORY_USED)
                .and_then(|v| v.as_array())
                .map_or(0, Vec::len),
        }
    }

    /// The entry of a node known by its head: steps arrive with its body ([`GraphModel::fill`]).
    pub fn from_head(h: &NodeHead) -> Self {
        Self {
            id: h.id,
            kind: h.kind,
            excerpt: h.excerpt.clone(),
            status: h.status.clone(),
            confidence: h.confidence,
            steps: Vec::new(),
            step_count: h.steps,
            disputed: h.disputed,
            memory: h.memory as usize,
        }
    }

    fn decision_count(&self) -> usize {
        self.steps.iter().map(|s| s.decisions.len()).sum()
    }
}

impl GraphModel {
    /// Rebuilds the tree from a session's nodes (in creation order) and each thinking node's
    /// decision points. The latest turn and its thinking start expanded.
    pub fn load(&mut self, nodes: &[Node], decisions: impl Fn(NodeId) -> Vec<DecisionPoint>) {
        self.load_entries(nodes.iter().map(|n| {
            NodeEntry::from_node(
                n,
                &if n.kind == NodeType::Thinking {
                    decisions(n.id)
                } else {
                    Vec::new()
                },
            )
        }));
    }

    /// Gives the nodes whose bodies arrived their steps and decision points.
    pub fn fill<'a>(
        &mut self,
        nodes: impl IntoIterator<Item = &'a Node>,
        decisions: impl Fn(NodeId) -> Vec<DecisionPoint>,
    ) {
        let mut read: std::collections::HashMap<NodeId, &Node> = nodes
            .into_iter()
            .filter(|n| n.kind == NodeType::Thinking)
            .map(|n| (n.id, n))
            .collect();
        if read.is_empty() {
            return;
        }
        for e in self
            .turns
            .iter_mut()
            .flat_map(|t| t.children.iter_mut())
            .chain(self.loose.iter_mut())
        {
            if let Some(n) = read.remove(&e.id) {
                let full = NodeEntry::from_node(n, &decisions(n.id));
                e.steps = full.steps;
                e.step_count = full.step_count;
                if read.is_empty() {
                    break;
                }
            }
        }
        self.rebuild_keep();
    }

    /// Rebuilds the tree from entries in creation order (see [`GraphModel::load`]); from
    /// heads ([`NodeEntry::from_head`]), [`GraphModel::fill`] adds the steps of the nodes whose
    /// bodies are read.
    pub fn load_entries(&mut self, entries: impl IntoIterator<Item = NodeEntry>) {
        let mut tree = Tree::default();
        for entry in entries {
            tree.push(entry);
        }
        self.load_tree(tree);
    }

    /// Takes `tree` as the session's nodes (see [`GraphModel::load`]), keeping the selection
    /// and what is open.
    pub fn load_tree(&mut self, tree: Tree) {
        let keep = self.selected_key();
        self.turns = tree.turns;
        self.loose = tree.loose;
        self.expand_latest();
        self.rebuild();
        self.reselect(keep);
    }

    /// Expands the newest turn and its thinking nodes.
    pub fn expand_latest(&mut self) {
        if let Some(t) = self.turns.last() {
            self.expanded.insert(RowKey::Node(t.query.id));
            for c in &t.children {
                if c.kind == NodeType::Thinking {
                    self.expanded.insert(RowKey::Node(c.id));
                }
            }
        }
    }

    /// Adds or updates a node of the newest turn (live streaming).
    pub fn upsert_live(&mut self, entry: NodeEntry) {
        if entry.kind == NodeType::Query {
            self.expanded.insert(RowKey::Node(entry.id));
            self.turns.push(Turn {
                query: entry,
                children: Vec::new(),
            });
        } else if let Some(t) = self.turns.last_mut() {
            if entry.kind == NodeType::Thinking {
                self.expanded.insert(RowKey::Node(entry.id));
            }
            match t.children.iter_mut().find(|c| c.id == entry.id) {
                Some(c) => {
                    let steps = std::mem::take(&mut c.steps);
                    *c = entry;
                    if c.steps.is_empty() {
                        c.steps = steps;
                    }
                }
                None => t.children.push(entry),
            }
        }
        self.rebuild_keep();
    }

    /// Appends a step to a live thinking node.
    pub fn push_step(&mut self, node: NodeId, step: StepEntry) {
        if let Some(n) = self.find_mut(node) {
            n.steps.push(step);
        }
        self.rebuild_keep();
    }

    /// Appends a decision point to the step it belongs to.
    pub fn push_decision(&mut self, node: NodeId, step_index: u32, mut d: DecisionEntry) {
        if let Some(n) = self.find_mut(node) {
            d.index = n.decision_count() as u32;
            match n.steps.iter_mut().find(|s| s.index == step_index) {
                Some(s) => s.decisions.push(d),
                None => n.steps.push(StepEntry {
                    index: step_index,
                    kind: "step".into(),
                    excerpt: String::new(),
                    confidence: None,
                    decisions: vec![d],
                }),
            }
        }
        self.rebuild_keep();
    }

    /// Updates a node's status, text excerpt and confidence.
    pub fn update_node(
        &mut self,
        id: NodeId,
        status: NodeStatus,
        text: &str,
        confidence: Option<f64>,
    ) {
        if let Some(n) = self.find_mut(id) {
            n.status = status;
            n.excerpt = excerpt(text, 120);
            n.confidence = confidence.or(n.confidence);
        }
        self.rebuild_keep();
    }

    fn find_mut(&mut self, id: NodeId) -> Option<&mut NodeEntry> {
        self.turns
            .iter_mut()
            .rev()
            .flat_map(|t| std::iter::once(&mut t.query).chain(t.children.iter_mut()))
            .chain(self.loose.iter_mut())
            .find(|n| n.id == id)
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    pub fn node_count(&self) -> usize {
        self.turns
            .iter()
            .map(|t| 1 + t.children.len())
            .sum::<usize>()
            + self.loose.len()
    }

    pub fn selected_key(&self) -> Option<RowKey> {
        self.rows.get(self.selected).map(|r| r.key)
    }

    /// The node of the selected row (for steps and decisions: their thinking node).
    pub fn selected_node(&self) -> Option<NodeId> {
        self.selected_key().map(|k| match k {
            RowKey::Node(id) | RowKey::Step(id, _) | RowKey::Decision(id, _) => id,
        })
    }

    fn reselect(&mut self, key: Option<RowKey>) {
        if let Some(k) = key
            && let Some(i) = self.rows.iter().position(|r| r.key == k)
        {
            self.selected = i;
            return;
        }
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    fn rebuild_keep(&mut self) {
        let keep = self.selected_key();
        self.rebuild();
        self.reselect(keep);
    }

    fn is_open(&self, key: RowKey) -> bool {
        match key {
            RowKey::Step(..) => !self.collapsed_steps.contains(&key),
            _ => self.expanded.contains(&key),
        }
    }

    fn push_node_rows(&self, rows: &mut Vec<Row>, n: &NodeEntry, depth: u8) {
        let key = RowKey::Node(n.id);
        let open = self.is_open(key);
        let status = match n.status {
            NodeStatus::Complete if n.disputed => Some("disputed"),
            NodeStatus::Complete => None,
            NodeStatus::Streaming => Some("streaming"),
            NodeStatus::Interrupted => Some("interrupted"),
            NodeStatus::Failed { .. } => Some("failed"),
        };
        let label = if n.kind == NodeType::Thinking && !n.steps.is_empty() {
            format!("{} steps, {} decisions", n.steps.len(), n.decision_count())
        } else if n.kind == NodeType::Thinking && n.step_count > 0 {
            // Known from the head; the decisions come with the body.
            format!("{} steps", n.step_count)
        } else {
            n.excerpt.clone()
        };
        rows.push(Row {
            key,
            depth,
            expandable: !n.steps.is_empty() || n.step_count > 0,
            expanded: open,
            kind: RowKind::Node(n.kind),
            label,
            confidence: n.confidence,
            status,
            memory: n.memory,
        });
        if !open {
            return;
        }
        for s in &n.steps {
            let skey = RowKey::Step(n.id, s.index);
            let sopen = !s.decisions.is_empty() && self.is_open(skey);
            rows.push(Row {
                key: skey,
                depth: depth + 1,
                expandable: !s.decisions.is_empty(),
                expanded: sopen,
                kind: RowKind::Step(s.kind.clone()),
                label: s.excerpt.clone(),
                confidence: s.confidence,
                status: None,
                memory: 0,
            });
            if sopen {
                for d in &s.decisions {
                    rows.push(Row {
                        key: RowKey::Decision(n.id, d.index),
                        depth: depth + 2,
                        expandable: false,
                        expanded: false,
                        kind: RowKind::Decision,
                        label: if d.alternatives > 0 {
                            format!("{}  (+{} alternatives)", d.chosen, d.alternatives)
                        } else {
                            d.chosen.clone()
                        },
                        confidence: Some(d.confidence),
                        status: None,
                        memory: 0,
                    });
                }
            }
        }
    }

    /// Re-flattens the tree into rows.
    pub fn rebuild(&mut self) {
        let mut rows = Vec::with_capacity(self.rows.len().max(16));
        for n in &self.loose {
            self.push_node_rows(&mut rows, n, 0);
        }
        for t in &self.turns {
            let key = RowKey::Node(t.query.id);
            let open = self.is_open(key);
            rows.push(Row {
                key,
                depth: 0,
                expandable: !t.children.is_empty(),
                expanded: open,
                kind: RowKind::Node(NodeType::Query),
                label: t.query.excerpt.clone(),
                confidence: None,
                status: t.query.disputed.then_some("disputed"),
                memory: t.query.memory,
            });
            if open {
                for c in &t.children {
                    self.push_node_rows(&mut rows, c, 1);
                }
            }
        }
        self.rows = rows;
    }

    /// Opens or closes `key`'s row and flattens the tree again, keeping the selected row.
    fn open_row(&mut self, key: RowKey, open: bool) {
        self.mark_open(key, open);
        self.rebuild_keep();
    }

    /// Marks `key`'s row open or closed (without flattening again).
    fn mark_open(&mut self, key: RowKey, open: bool) {
        match (key, open) {
            (RowKey::Step(..), true) => {
                self.collapsed_steps.remove(&key);
            }
            (RowKey::Step(..), false) => {
                self.collapsed_steps.insert(key);
            }
            (_, true) => {
                self.expanded.insert(key);
            }
            (_, false) => {
                self.expanded.remove(&key);
            }
        }
    }

    /// Selects the next (or previous) decision point, expanding what hides it. Returns false
    /// when there is none in that direction.
    pub fn jump_decision(&mut self, forward: bool) -> bool {
        // Every row key in tree order, as if everything were open, with what hides it.
        // For a decision: (its turn's query, its node, its step), the rows to open.
        type Opens = Option<(NodeId, NodeId, u32)>;
        let mut order: Vec<(RowKey, Opens)> = Vec::new();
        for t in &self.turns {
            order.push((RowKey::Node(t.query.id), None));
            for c in std::iter::once(&t.query).chain(t.children.iter()) {
                if c.id != t.query.id {
                    order.push((RowKey::Node(c.id), None));
                }
                for s in &c.steps {
                    order.push((RowKey::Step(c.id, s.index), None));
                    for d in &s.decisions {
                        order.push((
                            RowKey::Decision(c.id, d.index),
                            Some((t.query.id, c.id, s.index)),
                        ));
                    }
                }
            }
        }
        let current = self
            .selected_key()
            .and_then(|k| order.iter().position(|(key, _)| *key == k));
        let target = match (forward, current) {
            (true, None) => order.iter().find(|(_, d)| d.is_some()),
            (true, Some(c)) => order[c + 1..].iter().find(|(_, d)| d.is_some()),
            (false, None) => None,
            (false, Some(c)) => order[..c].iter().rev().find(|(_, d)| d.is_some()),
        };
        let Some(&(key, Some((turn, node, step)))) = target else {
            return false;
        };
        self.expanded.insert(RowKey::Node(turn));
        self.expanded.insert(RowKey::Node(node));
        self.collapsed_steps.remove(&RowKey::Step(node, step));
        self.rebuild();
        match self.rows.iter().position(|r| r.key == key) {
            Some(i) => {
                self.selected = i;
                true
            }
            None => false,
        }
    }
}

super::tree::flat_tree!(GraphModel, Row, RowKey);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Alternative, DecisionId, SessionId};
    use crate::views::tree::TreeCursor;

    fn session_nodes() -> (Vec<Node>, Vec<DecisionPoint>) {
        let s = SessionId::new();
        let q = Node::new(s, NodeType::Query, "why?");
        let mut t = Node::new(s, NodeType::Thinking, "a\n\nb");
        t.meta.insert(
            "steps".into(),
            serde_json::json!([
                {"index": 0, "kind": "analysis", "text": "first"},
                {"index": 1, "kind": "conclusion", "text": "second"}
            ]),
        );
        let r = Node::new(s, NodeType::Response, "because");
        let d = DecisionPoint {
            id: DecisionId::new(),
            node: t.id,
            step_number: 1,
            description: "d".into(),
            chosen_path: "go left".into(),
            alternatives: vec![Alternative {
                path: "right".into(),
                reason_rejected: None,
            }],
            confidence: 0.7,
            created_at: chrono::Utc::now(),
        };
        (vec![q, t, r], vec![d])
    }

    #[test]
    fn the_latest_turn_opens_with_steps_and_decisions() {
        let (nodes, ds) = session_nodes();
        let tid = nodes[1].id;
        let mut g = GraphModel::default();
        g.load(&nodes, |id| if id == tid { ds.clone() } else { vec![] });
        let labels: Vec<_> = g
            .rows()
            .iter()
            .map(|r| (r.depth, r.label.clone()))
            .collect();
        assert_eq!(
            labels,
            vec![
                (0, "why?".to_string()),
                (1, "2 steps, 1 decisions".to_string()),
                (2, "first".to_string()),
                (2, "second".to_string()),
                (3, "go left  (+1 alternatives)".to_string()),
                (1, "because".to_string()),
            ]
        );
    }

    #[test]
    fn a_query_counts_the_memories_it_was_shown() {
        let (mut nodes, _) = session_nodes();
        nodes[0]
            .meta
            .insert("memory_used".into(), serde_json::json!(["a", "b"]));
        let mut g = GraphModel::default();
        g.load(&nodes, |_| vec![]);
        let memory: Vec<usize> = g.rows().iter().map(|r| r.memory).collect();
        assert_eq!(memory[0], 2);
        assert!(memory[1..].iter().all(|m| *m == 0));
    }

    #[test]
    fn collapse_expand_and_decision_jumps() {
        let (nodes, ds) = session_nodes();
        let tid = nodes[1].id;
        let mut g = GraphModel::default();
        g.load(&nodes, |id| if id == tid { ds.clone() } else { vec![] });
        g.select_first();
        g.collapse();
        assert_eq!(g.rows().len(), 1);
        assert!(g.jump_decision(true));
        assert_eq!(g.rows()[g.selected].kind, RowKind::Decision);
        assert!(!g.jump_decision(true));
        g.select_first();
        g.expand();
        assert!(g.rows().len() > 1);
    }

    #[test]
    fn live_steps_and_decisions_append() {
        let s = SessionId::new();
        let q = Node::new(s, NodeType::Query, "q");
        let mut g = GraphModel::default();
        g.load(std::slice::from_ref(&q), |_| vec![]);
        let t = Node::new(s, NodeType::Thinking, "");
        g.upsert_live(NodeEntry::from_node(&t, &[]));
        g.push_step(
            t.id,
            StepEntry {
                index: 0,
                kind: "analysis".into(),
                excerpt: "x".into(),
                confidence: None,
                decisions: vec![],
            },
        );
        g.push_decision(
            t.id,
            0,
            DecisionEntry {
                index: 0,
                chosen: "c".into(),
                alternatives: 0,
                confidence: 0.5,
            },
        );
        let kinds: Vec<_> = g.rows().iter().map(|r| r.kind.clone()).collect();
        assert_eq!(
            kinds,
            vec![
                RowKind::Node(NodeType::Query),
                RowKind::Node(NodeType::Thinking),
                RowKind::Step("analysis".into()),
                RowKind::Decision
            ]
        );
    }
}
