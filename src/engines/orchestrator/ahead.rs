//! The start of an answer handed to the knowledge source while the answer streams
//! ([`KnowledgeContext::anticipate`]), so that what it does with the finished turn
//! ([`KnowledgeContext::remember`]) is partly done by the time the answer ends.

use std::sync::Arc;

use futures::FutureExt;
use tokio::task::JoinHandle;

use super::KnowledgeContext;

/// Bytes of the answer's start handed over: far more than an embedder reads of it.
const AHEAD_BYTES: usize = 32 * 1024;

/// Hand-overs of one turn: one at a time on the blocking pool, until the source wants no more.
pub(super) struct Ahead {
    knowledge: Option<Arc<dyn KnowledgeContext>>,
    task: Option<JoinHandle<bool>>,
    done: bool,
}

impl Ahead {
    pub(super) fn new(knowledge: Option<Arc<dyn KnowledgeContext>>) -> Self {
        Self {
            knowledge,
            task: None,
            done: false,
        }
    }

    /// Hands over the start of `answer` (the answer so far), unless the last hand-over is
    /// still under way or the source said it wants no more.
    pub(super) fn offer(&mut self, answer: &str) {
        if self.done || answer.is_empty() {
            return;
        }
        if let Some(task) = &mut self.task {
            match task.now_or_never() {
                None => return,
                // A task that panicked is not asked again.
                Some(wanted_no_more) => {
                    self.task = None;
                    if wanted_no_more.unwrap_or(true) {
                        self.done = true;
                        return;
                    }
                }
            }
        }
        let Some(k) = self.knowledge.clone() else {
            self.done = true;
            return;
        };
        let mut end = answer.len().min(AHEAD_BYTES);
        while !answer.is_char_boundary(end) {
            end -= 1;
        }
        let start = answer[..end].to_owned();
        self.task = Some(tokio::task::spawn_blocking(move || k.anticipate(&start)));
    }

    /// Waits for the hand-over under way, so that `remember` finds what it prepared rather
    /// than doing it a second time beside it. A turn that will not be remembered drops it
    /// unwaited (a hand-over in progress finishes on the blocking pool).
    pub(super) async fn settle(&mut self) {
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
