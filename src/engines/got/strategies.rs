//! The three walks over a search: breadth-first keeping the top k of each level,
//! depth-first with backtracking, and best-first over a sorted open set.

use std::collections::HashSet;

use super::search::Search;
use super::{GotError, GotEvent, MIN_MERGE, ROOT_SCORE, Strategy, Thought, ThoughtState};
use crate::store::NodeId;

impl Search<'_> {
    /// Adds the root thought and walks the search with the request's strategy.
    pub(super) async fn run(&mut self) -> Result<(), GotError> {
        let root = self
            .add(Thought {
                id: NodeId::new(),
                parent: None,
                sources: Vec::new(),
                content: self.problem.clone(),
                score: Some(ROOT_SCORE),
                state: ThoughtState::Verified,
                depth: 0,
                pinned: true,
                boost: 0.0,
                reasoning: None,
            })
            .await?;
        self.emit(GotEvent::Started {
            session: self.session,
            run: self.run,
            root,
        });
        match self.params.strategy {
            Strategy::Bfs => self.bfs(root).await,
            Strategy::Dfs => self.dfs(root).await,
            Strategy::BestFirst => self.best_first(root).await,
        }
    }

    /// Moves revived thoughts into `open`.
    fn take_revived(&mut self, open: &mut Vec<NodeId>, depth: Option<u32>) {
        let revived = std::mem::take(&mut self.revived);
        for id in revived {
            let at = self.get(id).map(|t| t.depth);
            if depth.is_none() || at == depth {
                if !open.contains(&id) {
                    open.push(id);
                }
            } else {
                self.revived.push(id);
            }
        }
    }

    async fn bfs(&mut self, root: NodeId) -> Result<(), GotError> {
        let k = self.params.branching_factor as usize;
        let mut level = vec![root];
        for depth in 0..self.params.max_depth {
            let mut next = Vec::new();
            loop {
                if self.stopped || self.full() {
                    return Ok(());
                }
                level.retain(|&id| self.is_open(id));
                if level.is_empty() && self.revived.is_empty() {
                    break;
                }
                // Wait here, where there is a thought to expand, so a step expands one.
                if !self.checkpoint().await? {
                    return Ok(());
                }
                self.take_revived(&mut level, Some(depth));
                self.take_revived(&mut next, Some(depth + 1));
                level.retain(|&id| self.is_open(id));
                self.sort(&mut level);
                if level.is_empty() {
                    break;
                }
                let id = level.remove(0);
                next.extend(self.expand(id).await?);
            }
            next.retain(|&id| self.is_open(id));
            self.sort(&mut next);
            // Keep the top k, and every pinned thought.
            let mut kept = Vec::new();
            for (i, id) in next.into_iter().enumerate() {
                if i < k || self.get(id).is_some_and(|t| t.pinned) {
                    kept.push(id);
                }
            }
            if self.params.enable_aggregation
                && kept.len() >= MIN_MERGE
                && let Some(s) = self.aggregate(&kept.clone()).await?
            {
                kept = vec![s];
            }
            if kept.is_empty() {
                return Ok(());
            }
            level = kept;
        }
        Ok(())
    }

    async fn dfs(&mut self, root: NodeId) -> Result<(), GotError> {
        // Deepest open thought first, best of those first: that is depth-first search with
        // backtracking to the next-best sibling when a branch dies.
        let mut open = vec![root];
        loop {
            if self.stopped || self.full() || !self.checkpoint().await? {
                return Ok(());
            }
            self.take_revived(&mut open, None);
            open.retain(|&id| self.is_open(id));
            let Some(id) = open.iter().copied().max_by(|a, b| {
                let (ta, tb) = (self.get(*a), self.get(*b));
                let da = ta.map_or(0, |t| t.depth);
                let db = tb.map_or(0, |t| t.depth);
                da.cmp(&db)
                    .then(
                        ta.map_or(0.0, Thought::priority)
                            .total_cmp(&tb.map_or(0.0, Thought::priority)),
                    )
                    // Earlier thoughts win ties (max_by keeps the last maximum).
                    .then(self.index[b].cmp(&self.index[a]))
            }) else {
                return Ok(());
            };
            if self
                .get(id)
                .is_some_and(|t| t.depth >= self.params.max_depth)
            {
                return Ok(());
            }
            open.retain(|&o| o != id);
            let mut viable = self.expand(id).await?;
            if self.params.enable_aggregation
                && viable.len() >= MIN_MERGE
                && let Some(s) = self.aggregate(&viable.clone()).await?
            {
                viable = vec![s];
            }
            open.extend(viable);
        }
    }

    async fn best_first(&mut self, root: NodeId) -> Result<(), GotError> {
        let mut open: Vec<NodeId> = vec![root];
        let mut tried: HashSet<Vec<NodeId>> = HashSet::new();
        loop {
            if self.stopped || self.full() || !self.checkpoint().await? {
                return Ok(());
            }
            let revived = std::mem::take(&mut self.revived);
            for id in revived {
                self.insert_sorted(&mut open, id);
            }
            if std::mem::take(&mut self.reorder) {
                self.sort(&mut open);
            }
            open.retain(|&id| self.is_open(id));
            let Some(pos) = open.iter().position(|&id| {
                self.get(id)
                    .is_some_and(|t| t.depth < self.params.max_depth)
            }) else {
                return Ok(());
            };
            let id = open.remove(pos);
            for c in self.expand(id).await? {
                self.insert_sorted(&mut open, c);
            }
            if !self.params.enable_aggregation {
                continue;
            }
            let cfg = &self.engine.config;
            let high: Vec<NodeId> = open
                .iter()
                .copied()
                .filter(|&id| {
                    id != root
                        && self
                            .get(id)
                            .is_some_and(|t| t.score.unwrap_or(0.0) >= cfg.aggregation_min_score)
                })
                .take(cfg.aggregation_min_thoughts.max(MIN_MERGE))
                .collect();
            if high.len() < cfg.aggregation_min_thoughts.max(MIN_MERGE)
                || !tried.insert(high.clone())
            {
                continue;
            }
            if let Some(s) = self.aggregate(&high).await? {
                open.retain(|o| !high.contains(o));
                self.insert_sorted(&mut open, s);
            }
        }
    }

    /// Inserts by binary search, after every thought of equal or higher priority.
    fn insert_sorted(&self, open: &mut Vec<NodeId>, id: NodeId) {
        if open.contains(&id) {
            return;
        }
        let p = self.get(id).map_or(0.0, Thought::priority);
        let at = open.partition_point(|&o| self.get(o).map_or(0.0, Thought::priority) >= p);
        open.insert(at, id);
    }
}
