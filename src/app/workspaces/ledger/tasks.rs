//! The Ledger workspace's store reads: which MCP session to show, and its ledger.

use crate::store::{SessionId, SessionSource, Store, StoreError};
use crate::views::ledger_model::LedgerModel;

impl LedgerModel {
    /// The ledger of `session`, read from the store.
    pub fn from_store(store: &Store, session: SessionId) -> Result<Self, StoreError> {
        let s = store.session(session)?;
        let nodes = store.session_nodes(session)?;
        let edges = store.session_edges(session)?;
        Ok(Self::from_parts(s.as_ref(), &nodes, &edges))
    }

    /// The session the Ledger workspace opens on: the most recently updated MCP session.
    pub fn latest_session(store: &Store) -> Result<Option<SessionId>, StoreError> {
        Ok(store
            .sessions()?
            .into_iter()
            .find(|s| s.source == SessionSource::Mcp)
            .map(|s| s.id))
    }
}

/// The ledger of `session`, or of the newest MCP session when none is given; an empty one
/// when there is no MCP session yet.
pub(super) fn load(store: &Store, session: Option<SessionId>) -> Result<LedgerModel, StoreError> {
    let session = match session {
        Some(id) => Some(id),
        None => LedgerModel::latest_session(store)?,
    };
    match session {
        Some(id) => LedgerModel::from_store(store, id),
        None => Ok(LedgerModel::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Edge, EdgeType, Node, NodeType, Session};
    use serde_json::json;

    /// An MCP session of three thoughts, the last revising the second, and a newer
    /// session of another source.
    fn seed(store: &Store) -> Session {
        let s = Session::new("ledger", SessionSource::Mcp);
        let mut other = Session::new("ask", SessionSource::Glassbox);
        other.updated_at = s.updated_at + chrono::Duration::seconds(5);
        let thoughts: Vec<Node> = (1..=3u32)
            .map(|n| {
                let mut node = Node::new(s.id, NodeType::LedgerThought, format!("thought {n}"));
                node.meta.insert("thoughtNumber".into(), json!(n));
                node.meta.insert("totalThoughts".into(), json!(3));
                node
            })
            .collect();
        let revises = Edge::new(thoughts[2].id, EdgeType::Revises, thoughts[1].id);
        store
            .write(|w| {
                w.put_session(&s)?;
                w.put_session(&other)?;
                for n in &thoughts {
                    w.put_node(n)?;
                }
                w.put_edge(&revises)
            })
            .unwrap();
        s
    }

    #[test]
    fn the_latest_mcp_session_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
        assert_eq!(LedgerModel::latest_session(&store).unwrap(), None);
        assert!(load(&store, None).unwrap().session().is_none());
        let s = seed(&store);
        assert_eq!(LedgerModel::latest_session(&store).unwrap(), Some(s.id));
        let m = load(&store, None).unwrap();
        assert_eq!(
            (
                m.session(),
                m.title(),
                m.thoughts().len(),
                m.revision_count()
            ),
            (Some(s.id), "ledger", 3, 1)
        );
        assert_eq!(load(&store, Some(s.id)).unwrap().rows().len(), 3);
    }
}
