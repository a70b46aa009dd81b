//! The Ledger workspace's model: a session's ledger thoughts (from `glassbox mcp`) as a tree —
//! the main chain, branches nested under the thought they branch from, revisions marked and
//! linked, annotations under their thought — flattened into rows only when it changes.
//! Pure data: the Ledger workspace reads it from the store and hands it to
//! [`super::ledger::render`].

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};

use super::tree::TreeCursor;
use crate::store::{Edge, EdgeType, Node, NodeId, NodeType, Session, SessionId};

/// Identifies a row across reloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowKey {
    Thought(NodeId),
    /// A branch, keyed by its first thought.
    Branch(NodeId),
    Annotation(NodeId),
}

/// What a row shows, for drawing.
#[derive(Clone, Debug, PartialEq)]
pub enum RowKind {
    Thought {
        number: u32,
        total: u32,
        /// The number of the thought this one revises.
        revises: Option<u32>,
        /// Whether a later thought revises this one.
        revised: bool,
        thought_type: Option<String>,
        /// The thought said no further thought is needed.
        last: bool,
    },
    Branch {
        name: String,
        /// The number of the thought it branches from.
        from: Option<u32>,
        thoughts: usize,
    },
    Annotation {
        /// `verified`, `questionable`, `disagree`, or `critique` (from sampling).
        verdict: String,
        edge: EdgeType,
    },
}

/// One visible line of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: RowKey,
    pub depth: u8,
    pub expandable: bool,
    pub expanded: bool,
    pub kind: RowKind,
    /// The text's opening words.
    pub label: String,
}

/// A ledger thought.
#[derive(Clone, Debug, PartialEq)]
pub struct ThoughtEntry {
    pub id: NodeId,
    pub number: u32,
    pub total: u32,
    pub next_needed: bool,
    pub branch_id: Option<String>,
    pub branch_from: Option<u32>,
    pub is_revision: bool,
    pub revises_number: Option<u32>,
    /// The thought this one revises (its `revises` edge).
    pub revises: Option<NodeId>,
    /// Later thoughts that revise this one.
    pub revised_by: Vec<NodeId>,
    /// The thought this one branches from (its `branches_from` edge).
    pub origin: Option<NodeId>,
    pub thought_type: Option<String>,
    pub text: String,
    pub created_at: DateTime<Utc>,
}

/// A checkpoint verdict or a sampled critique attached to a thought.
#[derive(Clone, Debug, PartialEq)]
pub struct AnnotationEntry {
    pub id: NodeId,
    pub target: NodeId,
    pub verdict: String,
    pub edge: EdgeType,
    pub text: String,
    pub model: Option<String>,
}

/// A branch: thoughts sharing a branch id, hanging off the thought they branch from.
#[derive(Clone, Debug, PartialEq)]
pub struct BranchEntry {
    /// The first thought of the branch (its row key).
    pub first: NodeId,
    pub name: String,
    pub origin: Option<NodeId>,
    /// Indexes into the thoughts, in order.
    pub members: Vec<usize>,
}

/// The whole tree plus selection, scroll and the flattened rows.
#[derive(Clone, Debug, Default)]
pub struct LedgerModel {
    session: Option<SessionId>,
    title: String,
    thoughts: Vec<ThoughtEntry>,
    by_id: HashMap<NodeId, usize>,
    branches: Vec<BranchEntry>,
    /// Branch of each thought (index into `branches`), if it is in one.
    branch_of: HashMap<NodeId, usize>,
    annotations: HashMap<NodeId, Vec<AnnotationEntry>>,
    /// Rows the user closed (everything starts open).
    collapsed: HashSet<RowKey>,
    rows: Vec<Row>,
    pub selected: usize,
    pub offset: usize,
}

/// The text's opening words on one line, cut to `max` characters.
pub fn excerpt(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > max {
        let mut s: String = line.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    } else {
        line
    }
}

fn meta_u32(n: &Node, key: &str) -> Option<u32> {
    n.meta
        .get(key)
        .and_then(|v| v.as_u64())
        .and_then(|v| u32::try_from(v).ok())
}

fn meta_str(n: &Node, key: &str) -> Option<String> {
    n.meta.get(key).and_then(|v| v.as_str()).map(str::to_string)
}

impl ThoughtEntry {
    fn from_node(n: &Node) -> Self {
        let number = meta_u32(n, "thoughtNumber").unwrap_or(0);
        Self {
            id: n.id,
            number,
            total: meta_u32(n, "totalThoughts").unwrap_or(number),
            next_needed: n
                .meta
                .get("nextThoughtNeeded")
                .and_then(|v| v.as_bool())
                .unwrap_or(true),
            branch_id: meta_str(n, "branchId"),
            branch_from: meta_u32(n, "branchFromThought"),
            is_revision: n
                .meta
                .get("isRevision")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
            revises_number: meta_u32(n, "revisesThought"),
            revises: None,
            revised_by: Vec::new(),
            origin: None,
            thought_type: meta_str(n, "thoughtType"),
            text: n.text.clone(),
            created_at: n.created_at,
        }
    }
}

impl LedgerModel {
    /// The ledger of a session's nodes (creation order) and edges.
    pub fn from_parts(session: Option<&Session>, nodes: &[Node], edges: &[Edge]) -> Self {
        let mut m = Self::default();
        m.load(session, nodes, edges);
        m
    }

    /// Rebuilds from a session's nodes and edges, keeping what is open and the selection; a
    /// selection on the last row follows new thoughts as they arrive.
    pub fn load(&mut self, session: Option<&Session>, nodes: &[Node], edges: &[Edge]) {
        let keep = self.selected_key();
        let follow = self.rows.is_empty() || self.selected + 1 >= self.rows.len();
        let new_session = session.map(|s| s.id);
        if new_session != self.session {
            self.collapsed.clear();
            self.offset = 0;
        }
        self.session = new_session;
        self.title = session.map(|s| s.title.clone()).unwrap_or_default();
        self.build(nodes, edges);
        self.rebuild();
        if follow {
            self.select_last();
        } else {
            self.reselect(keep);
        }
    }

    fn build(&mut self, nodes: &[Node], edges: &[Edge]) {
        self.thoughts = nodes
            .iter()
            .filter(|n| n.kind == NodeType::LedgerThought)
            .map(ThoughtEntry::from_node)
            .collect();
        self.by_id = self
            .thoughts
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id, i))
            .collect();
        let kinds: HashMap<NodeId, &Node> = nodes.iter().map(|n| (n.id, n)).collect();
        self.annotations.clear();
        for e in edges {
            let (Some(&s), Some(&d)) = (self.by_id.get(&e.src), self.by_id.get(&e.dst)) else {
                if let (Some(a), true) = (kinds.get(&e.src), self.by_id.contains_key(&e.dst))
                    && a.kind == NodeType::HumanAnnotation
                {
                    let verdict = meta_str(a, "verdict").unwrap_or_else(|| {
                        match meta_str(a, "source").as_deref() {
                            Some("sampling") => "critique".to_string(),
                            _ => "note".to_string(),
                        }
                    });
                    self.annotations
                        .entry(e.dst)
                        .or_default()
                        .push(AnnotationEntry {
                            id: a.id,
                            target: e.dst,
                            verdict,
                            edge: e.kind,
                            text: a.text.clone(),
                            model: a.model.clone(),
                        });
                }
                continue;
            };
            match e.kind {
                EdgeType::Revises => {
                    self.thoughts[s].revises = Some(e.dst);
                    self.thoughts[d].revised_by.push(e.src);
                }
                EdgeType::BranchesFrom => self.thoughts[s].origin = Some(e.dst),
                _ => {}
            }
        }
        for list in self.annotations.values_mut() {
            list.sort_by_key(|a| a.id);
        }
        self.link_by_numbers();
        self.group_branches();
    }

    /// Links revisions and branch origins named only in meta (imported data without edges).
    fn link_by_numbers(&mut self) {
        for i in 0..self.thoughts.len() {
            let (branch, rev, from) = {
                let t = &self.thoughts[i];
                (
                    t.branch_id.clone(),
                    t.revises_number
                        .filter(|_| t.is_revision && t.revises.is_none()),
                    t.branch_from.filter(|_| t.origin.is_none()),
                )
            };
            let (rev_target, origin) = {
                let earlier = &self.thoughts[..i];
                let find = |n: u32, same_branch: bool| {
                    earlier
                        .iter()
                        .rev()
                        .find(|t| t.number == n && (t.branch_id == branch) == same_branch)
                        .or_else(|| {
                            earlier
                                .iter()
                                .rev()
                                .find(|t| t.number == n && t.branch_id.is_none())
                        })
                        .map(|t| t.id)
                };
                (
                    rev.and_then(|n| find(n, true)),
                    from.and_then(|n| find(n, false)),
                )
            };
            if let Some(target) = rev_target {
                self.thoughts[i].revises = Some(target);
                if let Some(&j) = self.by_id.get(&target) {
                    let id = self.thoughts[i].id;
                    self.thoughts[j].revised_by.push(id);
                }
            }
            if origin.is_some() {
                self.thoughts[i].origin = origin;
            }
        }
    }

    fn group_branches(&mut self) {
        self.branches.clear();
        self.branch_of.clear();
        let mut named: HashMap<String, usize> = HashMap::new();
        for (i, t) in self.thoughts.iter().enumerate() {
            let b = match (&t.branch_id, t.origin) {
                (Some(name), _) => *named.entry(name.clone()).or_insert_with(|| {
                    self.branches.push(BranchEntry {
                        first: t.id,
                        name: name.clone(),
                        origin: None,
                        members: Vec::new(),
                    });
                    self.branches.len() - 1
                }),
                (None, Some(_)) => {
                    self.branches.push(BranchEntry {
                        first: t.id,
                        name: "(unnamed)".into(),
                        origin: None,
                        members: Vec::new(),
                    });
                    self.branches.len() - 1
                }
                (None, None) => continue,
            };
            let entry = &mut self.branches[b];
            entry.members.push(i);
            if entry.origin.is_none() {
                entry.origin = t.origin;
            }
            self.branch_of.insert(t.id, b);
        }
        // A branch whose origin lies inside itself hangs at the top level.
        for b in &mut self.branches {
            if b.origin
                .is_some_and(|o| b.members.iter().any(|&i| self.thoughts[i].id == o))
            {
                b.origin = None;
            }
        }
    }

    fn number_of(&self, id: NodeId) -> Option<u32> {
        self.by_id.get(&id).map(|&i| self.thoughts[i].number)
    }

    fn thought_row(&self, i: usize, depth: u8) -> Row {
        let t = &self.thoughts[i];
        let key = RowKey::Thought(t.id);
        let has_children = self.annotations.get(&t.id).is_some_and(|a| !a.is_empty())
            || self.branches.iter().any(|b| b.origin == Some(t.id));
        Row {
            key,
            depth,
            expandable: has_children,
            expanded: has_children && !self.collapsed.contains(&key),
            kind: RowKind::Thought {
                number: t.number,
                total: t.total,
                revises: t
                    .revises
                    .and_then(|r| self.number_of(r))
                    .or(t.revises_number.filter(|_| t.is_revision)),
                revised: !t.revised_by.is_empty(),
                thought_type: t.thought_type.clone(),
                last: !t.next_needed,
            },
            label: excerpt(&t.text, 200),
        }
    }

    fn push_thought(&self, rows: &mut Vec<Row>, i: usize, depth: u8, done: &mut HashSet<usize>) {
        let row = self.thought_row(i, depth);
        let open = row.expanded;
        let id = self.thoughts[i].id;
        rows.push(row);
        if !open {
            // Hidden branches still count as placed.
            self.mark_hidden(id, done);
            return;
        }
        for a in self.annotations.get(&id).into_iter().flatten() {
            rows.push(Row {
                key: RowKey::Annotation(a.id),
                depth: depth.saturating_add(1),
                expandable: false,
                expanded: false,
                kind: RowKind::Annotation {
                    verdict: a.verdict.clone(),
                    edge: a.edge,
                },
                label: excerpt(&a.text, 200),
            });
        }
        for (b, branch) in self.branches.iter().enumerate() {
            if branch.origin == Some(id) && !done.contains(&b) {
                self.push_branch(rows, b, depth.saturating_add(1), done);
            }
        }
    }

    fn mark_hidden(&self, id: NodeId, done: &mut HashSet<usize>) {
        for (b, branch) in self.branches.iter().enumerate() {
            if branch.origin == Some(id) && done.insert(b) {
                for &i in &branch.members {
                    self.mark_hidden(self.thoughts[i].id, done);
                }
            }
        }
    }

    fn push_branch(&self, rows: &mut Vec<Row>, b: usize, depth: u8, done: &mut HashSet<usize>) {
        done.insert(b);
        let branch = &self.branches[b];
        let key = RowKey::Branch(branch.first);
        let open = !self.collapsed.contains(&key);
        rows.push(Row {
            key,
            depth,
            expandable: true,
            expanded: open,
            kind: RowKind::Branch {
                name: branch.name.clone(),
                from: branch.origin.and_then(|o| self.number_of(o)),
                thoughts: branch.members.len(),
            },
            label: String::new(),
        });
        if open {
            for &i in &branch.members {
                self.push_thought(rows, i, depth.saturating_add(1), done);
            }
        } else {
            for &i in &branch.members {
                self.mark_hidden(self.thoughts[i].id, done);
            }
        }
    }

    /// Re-flattens the tree into rows.
    pub fn rebuild(&mut self) {
        let mut rows = Vec::with_capacity(self.thoughts.len() + 8);
        let mut done = HashSet::new();
        for (i, t) in self.thoughts.iter().enumerate() {
            match self.branch_of.get(&t.id) {
                None => self.push_thought(&mut rows, i, 0, &mut done),
                // A branch with no origin in the tree sits where its first thought came.
                Some(&b) => {
                    let orphan = self.branches[b]
                        .origin
                        .is_none_or(|o| !self.by_id.contains_key(&o));
                    if orphan && self.branches[b].first == t.id && !done.contains(&b) {
                        self.push_branch(&mut rows, b, 0, &mut done);
                    }
                }
            }
        }
        // Branches caught in an origin cycle are shown at the end rather than lost.
        for b in 0..self.branches.len() {
            if !done.contains(&b) {
                self.push_branch(&mut rows, b, 0, &mut done);
            }
        }
        self.rows = rows;
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    /// The session shown, if any.
    pub fn session(&self) -> Option<SessionId> {
        self.session
    }

    /// The session's title (empty when none is loaded).
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The visible rows, in drawing order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Every ledger thought, in the order they were stored.
    pub fn thoughts(&self) -> &[ThoughtEntry] {
        &self.thoughts
    }

    /// The thought with this node id.
    pub fn thought(&self, id: NodeId) -> Option<&ThoughtEntry> {
        self.by_id.get(&id).map(|&i| &self.thoughts[i])
    }

    /// The branches, in the order they started.
    pub fn branches(&self) -> &[BranchEntry] {
        &self.branches
    }

    /// Annotations on a thought, oldest first.
    pub fn annotations_of(&self, id: NodeId) -> &[AnnotationEntry] {
        self.annotations.get(&id).map_or(&[], Vec::as_slice)
    }

    /// The annotation with this id.
    pub fn annotation(&self, id: NodeId) -> Option<&AnnotationEntry> {
        self.annotations.values().flatten().find(|a| a.id == id)
    }

    /// How many thoughts revise an earlier one.
    pub fn revision_count(&self) -> usize {
        self.thoughts
            .iter()
            .filter(|t| t.revises.is_some() || (t.is_revision && t.revises_number.is_some()))
            .count()
    }

    /// The number of a thought, for "revises #3" style labels.
    pub fn number(&self, id: NodeId) -> Option<u32> {
        self.number_of(id)
    }

    /// The key of the selected row.
    pub fn selected_key(&self) -> Option<RowKey> {
        self.rows.get(self.selected).map(|r| r.key)
    }

    /// The node behind the selected row (a branch row: its first thought).
    pub fn selected_node(&self) -> Option<NodeId> {
        self.selected_key().map(|k| match k {
            RowKey::Thought(id) | RowKey::Branch(id) | RowKey::Annotation(id) => id,
        })
    }

    /// The selected thought, if a thought row is selected.
    pub fn selected_thought(&self) -> Option<&ThoughtEntry> {
        match self.selected_key()? {
            RowKey::Thought(id) => self.thought(id),
            _ => None,
        }
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

    /// Opens or closes `key`'s row and flattens the tree again, keeping the selected row.
    fn open_row(&mut self, key: RowKey, open: bool) {
        match open {
            true => self.collapsed.remove(&key),
            false => self.collapsed.insert(key),
        };
        self.rebuild_keep();
    }

    /// Opens everything that hides `key`'s row.
    fn reveal(&mut self, key: RowKey) {
        let mut next = match key {
            RowKey::Annotation(id) => self.annotation(id).map(|a| a.target),
            RowKey::Branch(first) => Some(first),
            RowKey::Thought(id) => Some(id),
        };
        if let RowKey::Annotation(_) = key
            && let Some(t) = next
        {
            self.collapsed.remove(&RowKey::Thought(t));
        }
        let mut guard = 0;
        while let Some(id) = next.take() {
            guard += 1;
            if guard > self.branches.len() + 1 {
                break;
            }
            let Some(&b) = self.branch_of.get(&id) else {
                break;
            };
            let branch = &self.branches[b];
            self.collapsed.remove(&RowKey::Branch(branch.first));
            if let Some(o) = branch.origin {
                self.collapsed.remove(&RowKey::Thought(o));
                next = Some(o);
            }
        }
    }

    /// Selects the row of a node (thought, annotation or branch's first thought), opening what
    /// hides it. False when it is not in this ledger.
    pub fn select_node(&mut self, id: NodeId) -> bool {
        let key = if self.by_id.contains_key(&id) {
            RowKey::Thought(id)
        } else if self.annotation(id).is_some() {
            RowKey::Annotation(id)
        } else {
            return false;
        };
        self.reveal(key);
        self.rebuild();
        match self.rows.iter().position(|r| r.key == key) {
            Some(i) => {
                self.selected = i;
                true
            }
            None => false,
        }
    }

    /// From a revision, selects the thought it revises. False when the selection is not a
    /// revision.
    pub fn jump_to_revised(&mut self) -> bool {
        match self.selected_thought().and_then(|t| t.revises) {
            Some(target) => self.select_node(target),
            None => false,
        }
    }

    /// From a branch (its row or one of its thoughts), selects the thought it branches from.
    pub fn jump_to_origin(&mut self) -> bool {
        let first = match self.selected_key() {
            Some(RowKey::Branch(first)) | Some(RowKey::Thought(first)) => first,
            _ => return false,
        };
        let origin = self
            .branch_of
            .get(&first)
            .and_then(|&b| self.branches[b].origin);
        match origin {
            Some(o) => self.select_node(o),
            None => false,
        }
    }
}

super::tree::flat_tree!(LedgerModel, Row, RowKey);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SessionSource;
    use serde_json::json;

    /// Main 1 2 3, branch "alt" (4, 5) from 2, revision 6 of 3, a critique on 2.
    fn ledger() -> (Session, Vec<Node>, Vec<Edge>) {
        let s = Session::new("ledger", SessionSource::Mcp);
        let t = |n: u32, extra: serde_json::Value| {
            let mut node = Node::new(s.id, NodeType::LedgerThought, format!("thought {n}"));
            node.meta.insert("thoughtNumber".into(), json!(n));
            node.meta.insert("totalThoughts".into(), json!(6));
            node.meta.insert("nextThoughtNeeded".into(), json!(n < 6));
            if let serde_json::Value::Object(m) = extra {
                node.meta.extend(m);
            }
            node
        };
        let n1 = t(1, json!({}));
        let n2 = t(2, json!({}));
        let n3 = t(3, json!({}));
        let b4 = t(4, json!({"branchId": "alt", "branchFromThought": 2}));
        let b5 = t(5, json!({"branchId": "alt", "branchFromThought": 2}));
        let r6 = t(6, json!({"isRevision": true, "revisesThought": 3}));
        let mut crit = Node::new(s.id, NodeType::HumanAnnotation, "Consider the cold cache.");
        crit.meta.insert("source".into(), json!("sampling"));
        let edges = vec![
            Edge::new(b4.id, EdgeType::BranchesFrom, n2.id),
            Edge::new(b5.id, EdgeType::BranchesFrom, n2.id),
            Edge::new(r6.id, EdgeType::Revises, n3.id),
            Edge::new(crit.id, EdgeType::Refines, n2.id),
        ];
        (s, vec![n1, n2, n3, b4, b5, r6, crit], edges)
    }

    fn shape(m: &LedgerModel) -> Vec<(u8, String)> {
        m.rows()
            .iter()
            .map(|r| {
                let what = match &r.kind {
                    RowKind::Thought {
                        number,
                        revises,
                        revised,
                        ..
                    } => {
                        format!(
                            "#{number}{}{}",
                            revises.map_or(String::new(), |n| format!(" revises #{n}")),
                            if *revised { " (revised)" } else { "" }
                        )
                    }
                    RowKind::Branch {
                        name,
                        from,
                        thoughts,
                    } => format!("branch {name} from #{} ({thoughts})", from.unwrap_or(0)),
                    RowKind::Annotation { verdict, .. } => verdict.clone(),
                };
                (r.depth, what)
            })
            .collect()
    }

    #[test]
    fn branches_nest_under_their_origin_and_revisions_link() {
        let (s, nodes, edges) = ledger();
        let m = LedgerModel::from_parts(Some(&s), &nodes, &edges);
        let want: Vec<(u8, String)> = vec![
            (0, "#1".into()),
            (0, "#2".into()),
            (1, "critique".into()),
            (1, "branch alt from #2 (2)".into()),
            (2, "#4".into()),
            (2, "#5".into()),
            (0, "#3 (revised)".into()),
            (0, "#6 revises #3".into()),
        ];
        assert_eq!(shape(&m), want);
        assert_eq!(m.revision_count(), 1);
        assert_eq!(m.branches().len(), 1);
        // A fresh model follows the newest thought.
        assert_eq!(m.selected, m.rows().len() - 1);
    }

    #[test]
    fn edges_missing_from_imported_data_come_from_the_numbers() {
        let (s, nodes, _) = ledger();
        let m = LedgerModel::from_parts(Some(&s), &nodes, &[]);
        let labels = shape(&m);
        assert!(labels.contains(&(1, "branch alt from #2 (2)".to_string())));
        assert!(labels.contains(&(0, "#6 revises #3".to_string())));
    }

    #[test]
    fn navigation_collapse_and_jumps() {
        let (s, nodes, edges) = ledger();
        let mut m = LedgerModel::from_parts(Some(&s), &nodes, &edges);
        assert!(m.jump_to_revised());
        assert_eq!(m.selected_thought().map(|t| t.number), Some(3));
        // Collapse thought 2: its critique and branch disappear.
        m.select_node(nodes[1].id);
        m.collapse();
        assert_eq!(m.rows().len(), 4);
        // Selecting a hidden branch thought reopens the path to it.
        assert!(m.select_node(nodes[4].id));
        assert_eq!(m.rows().len(), 8);
        assert!(m.jump_to_origin());
        assert_eq!(m.selected_thought().map(|t| t.number), Some(2));
        m.move_by(1);
        assert!(matches!(m.selected_key(), Some(RowKey::Annotation(_))));
        m.collapse();
        assert_eq!(m.selected_thought().map(|t| t.number), Some(2));
        assert!(!m.select_node(NodeId::new()));
    }

    #[test]
    fn live_reloads_follow_the_tail_or_keep_the_selection() {
        let (s, nodes, edges) = ledger();
        let mut m = LedgerModel::from_parts(Some(&s), &nodes[..3], &[]);
        assert_eq!(m.selected, 2);
        m.load(Some(&s), &nodes, &edges);
        assert_eq!(m.selected_key(), Some(RowKey::Thought(nodes[5].id)));
        m.select_first();
        let mut more = nodes.clone();
        let mut n7 = Node::new(s.id, NodeType::LedgerThought, "thought 7");
        n7.meta.insert("thoughtNumber".into(), json!(7));
        more.push(n7);
        m.load(Some(&s), &more, &edges);
        assert_eq!(m.selected, 0);
    }
}
