//! ThinkGraph beside the turn: a streamed thinking text is analysed on a thread of its own
//! while the turn reads on, one piece behind it.
//!
//! The turn's thread hands each piece over and takes back what the piece before it made
//! final, so the analysis of one piece overlaps the loop detection, printing and bookkeeping
//! of the next. Being exactly one piece behind keeps the order of a turn's events the same
//! on every run (a replay reports what the recording did), and [`GraphFeed::settle`] catches
//! up where the thinking pauses. Without the thread (it could not start) the pieces are
//! analysed in place; a thread that died (a panic in the analysis) leaves the rest of the
//! text without steps rather than steps at wrong offsets.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use super::TextPiece;
use super::behind::Behind;
use crate::engines::thinkgraph::{GraphUpdate, ThinkGraphBuilder};

/// What the thread answers for each piece (and for the end): the updates it made final
/// and the node confidence after it.
type Answer = (Vec<GraphUpdate>, f64);

enum Feed {
    /// Not started: no thinking yet.
    Idle,
    Thread {
        behind: Behind<TextPiece, Answer>,
        done: JoinHandle<()>,
    },
    /// The thread could not start: the builder runs here.
    Here(ThinkGraphBuilder),
    /// The thread died: no more updates.
    Gone,
}

/// Steps and decisions of a streaming thinking text (see the module doc).
pub(super) struct GraphFeed {
    feed: Feed,
    confidence: f64,
}

impl GraphFeed {
    pub(super) fn new() -> Self {
        Self {
            feed: Feed::Idle,
            confidence: ThinkGraphBuilder::new().confidence(),
        }
    }

    fn start() -> Feed {
        let spawned = Behind::spawn("glassbox-graph", |pieces: Receiver<TextPiece>, answers| {
            let mut graph = ThinkGraphBuilder::new();
            for piece in pieces {
                let updates = graph.push(&piece);
                if answers.send((updates, graph.confidence())).is_err() {
                    return;
                }
            }
            // The turn closed the feed: the last paragraph is final.
            let updates = graph.finish();
            let _ = answers.send((updates, graph.confidence()));
        });
        match spawned {
            Ok((behind, done)) => Feed::Thread { behind, done },
            Err(e) => {
                tracing::debug!("ThinkGraph runs on the turn's thread: {e}");
                Feed::Here(ThinkGraphBuilder::new())
            }
        }
    }

    /// Hands over the next piece of thinking; returns what the pieces before it made final.
    pub(super) fn push(&mut self, piece: &TextPiece) -> Vec<GraphUpdate> {
        if matches!(self.feed, Feed::Idle) {
            self.feed = Self::start();
        }
        let mut out = Vec::new();
        match &mut self.feed {
            Feed::Thread { behind, .. } => {
                if behind.send(Arc::clone(piece)).is_ok() {
                    self.collect(1, &mut out);
                } else {
                    self.gone();
                }
            }
            Feed::Here(graph) => {
                out.extend(graph.push(piece));
                self.confidence = graph.confidence();
            }
            Feed::Idle | Feed::Gone => {}
        }
        out
    }

    /// Waits until at most `behind` pieces are unanswered, adding the answers to `out`.
    fn collect(&mut self, behind: usize, out: &mut Vec<GraphUpdate>) {
        let Feed::Thread { behind: feed, .. } = &mut self.feed else {
            return;
        };
        let confidence = &mut self.confidence;
        let answered = feed.collect(behind, |(updates, c)| {
            out.extend(updates);
            *confidence = c;
        });
        if answered.is_err() {
            self.gone();
        }
    }

    fn gone(&mut self) {
        tracing::warn!("ThinkGraph stopped: this thinking has no further steps");
        self.feed = Feed::Gone;
    }

    /// What every piece handed over made final: the thinking paused (an answer or a tool
    /// call comes next).
    pub(super) fn settle(&mut self) -> Vec<GraphUpdate> {
        let mut out = Vec::new();
        self.collect(0, &mut out);
        out
    }

    /// Ends the text: everything outstanding, then the last paragraph made final.
    pub(super) fn finish(&mut self) -> Vec<GraphUpdate> {
        let mut out = self.settle();
        match std::mem::replace(&mut self.feed, Feed::Idle) {
            Feed::Idle | Feed::Gone => {}
            Feed::Thread { behind, done } => {
                if let Some((updates, confidence)) = behind.close() {
                    out.extend(updates);
                    self.confidence = confidence;
                }
                let _ = done.join();
            }
            Feed::Here(mut graph) => {
                out.extend(graph.finish());
                self.confidence = graph.confidence();
            }
        }
        out
    }

    /// Node confidence of the text analysed so far.
    pub(super) fn confidence(&self) -> f64 {
        self.confidence
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::thinkgraph::analyze;

    const TEXT: &str = "First, I weigh the two options. I chose the cache over the index because it is \
        simpler.\n\nWait, the index is faster. Actually, maybe both work.\n\nSo the answer is \
        the cache, since reads dominate. I decided to keep it.\n\nFinally, check the edge case.";

    fn steps_and_decisions(updates: &[GraphUpdate]) -> (usize, usize) {
        let steps = updates
            .iter()
            .filter(|u| matches!(u, GraphUpdate::Step(_)))
            .count();
        (steps, updates.len() - steps)
    }

    /// Fed in pieces, on its thread and one piece behind, the feed reports exactly what
    /// ThinkGraph finds in the whole text, with the same confidence.
    #[test]
    fn a_text_fed_in_pieces_gives_the_whole_texts_graph() {
        let whole = analyze(TEXT);
        for size in [1, 7, 40, TEXT.len()] {
            let mut feed = GraphFeed::new();
            let mut got = Vec::new();
            let mut at = 0;
            while at < TEXT.len() {
                let mut end = (at + size).min(TEXT.len());
                while !TEXT.is_char_boundary(end) {
                    end += 1;
                }
                got.extend(feed.push(&TextPiece::new(TEXT[at..end].to_string())));
                at = end;
            }
            got.extend(feed.settle());
            got.extend(feed.finish());
            let steps: Vec<_> = got
                .iter()
                .filter_map(|u| match u {
                    GraphUpdate::Step(s) => Some(s.clone()),
                    GraphUpdate::Decision(_) => None,
                })
                .collect();
            assert_eq!(steps, whole.steps, "pieces of {size}");
            assert_eq!(
                steps_and_decisions(&got).1,
                whole.decisions.len(),
                "pieces of {size}"
            );
            assert_eq!(feed.confidence(), whole.confidence, "pieces of {size}");
        }
    }

    /// A piece's updates come back with the next piece (or when the thinking settles), never
    /// later: the order of a turn's events does not depend on the thread's speed.
    #[test]
    fn updates_come_exactly_one_piece_behind() {
        let mut feed = GraphFeed::new();
        let first = "One step here.\n\nAnother step there.\n\n";
        assert!(feed.push(&TextPiece::new(first.to_string())).is_empty());
        let (steps, _) = steps_and_decisions(&feed.push(&TextPiece::new("More".to_string())));
        assert_eq!(steps, 2);
        assert!(feed.settle().is_empty());
        let (steps, _) = steps_and_decisions(&feed.finish());
        assert_eq!(steps, 1);
    }
}
