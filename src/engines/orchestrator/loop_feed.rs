//! Loop detection beside the turn: the thinking and the answer are read for loops on a
//! thread of its own, one piece behind the turn, as ThinkGraph is ([`super::graph_feed`]).
//!
//! On a fast stream the detectors were a quarter of what the turn's thread did, and that
//! thread is the one every piece waits on. Here the turn hands each piece over and takes back
//! what the piece before it found, so the reading of one piece overlaps the bookkeeping of the
//! next. Being exactly one piece behind keeps when a loop is reported the same on every run
//! (a replay reports it where the recording did); [`LoopFeed::settle`] catches up where a
//! call ends. Without the thread (it could not start, or loops are not looked for) the
//! pieces are read in place; a thread that died reports no further loops.

use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::thread::JoinHandle;

use super::TextPiece;
use super::behind::Behind;
use crate::engines::llm::loops::{LoopAction, LoopDetector, LoopParams, LoopReport};
use crate::store::NodeType;

/// A loop found, and the stream (thinking or answer) it was found in.
pub(super) type Found = (NodeType, LoopReport);

/// The loop detectors over a turn's thinking and answer. A loop is reported once per turn;
/// after that only the stream it was found in is read, to count its repeats.
struct LoopWatch {
    action: LoopAction,
    thinking: LoopDetector,
    text: LoopDetector,
    /// The node kind the loop was found in.
    found: Option<NodeType>,
}

impl LoopWatch {
    fn new(params: &LoopParams, action: LoopAction) -> Self {
        Self {
            action,
            thinking: LoopDetector::new(params),
            text: LoopDetector::new(params),
            found: None,
        }
    }

    /// Reads a delta of the thinking or the answer; returns the loop when it is first found.
    fn push(&mut self, kind: NodeType, delta: &str) -> Option<Found> {
        if self.action == LoopAction::Off || self.found.is_some_and(|k| k != kind) {
            return None;
        }
        let detector = if kind == NodeType::Thinking {
            &mut self.thinking
        } else {
            &mut self.text
        };
        let report = detector.push(delta)?;
        self.found = Some(kind);
        Some((kind, report))
    }

    /// The loop found this turn, with its repeats counted to the end of what arrived.
    fn found(&self) -> Option<Found> {
        let kind = self.found?;
        let detector = if kind == NodeType::Thinking {
            &self.thinking
        } else {
            &self.text
        };
        detector.found().map(|r| (kind, r))
    }
}

enum Feed {
    Thread {
        behind: Behind<(NodeType, TextPiece), Option<Found>>,
        done: JoinHandle<LoopWatch>,
    },
    /// No thread: the detectors run here.
    Here(Box<LoopWatch>),
    /// The thread died: no more loops are reported.
    Gone,
}

/// A turn's loop detection (see the module doc).
pub(super) struct LoopFeed {
    feed: Feed,
}

impl LoopFeed {
    pub(super) fn new(params: &LoopParams, action: LoopAction) -> Self {
        let watch = LoopWatch::new(params, action);
        if action == LoopAction::Off {
            return Self {
                feed: Feed::Here(Box::new(watch)),
            };
        }
        let spawned = Behind::spawn(
            "glassbox-loops",
            move |pieces: Receiver<(NodeType, TextPiece)>, answers| {
                let mut watch = watch;
                for (kind, piece) in pieces {
                    if answers.send(watch.push(kind, &piece)).is_err() {
                        break;
                    }
                }
                watch
            },
        );
        let feed = match spawned {
            Ok((behind, done)) => Feed::Thread { behind, done },
            Err(e) => {
                tracing::debug!("loop detection runs on the turn's thread: {e}");
                Feed::Here(Box::new(LoopWatch::new(params, action)))
            }
        };
        Self { feed }
    }

    /// Hands over the next piece of the thinking or the answer; returns the loop when the
    /// pieces before it made one first found.
    pub(super) fn push(&mut self, kind: NodeType, piece: &TextPiece) -> Option<Found> {
        match &mut self.feed {
            Feed::Thread { behind, .. } => {
                if behind.send((kind, Arc::clone(piece))).is_err() {
                    self.gone();
                    return None;
                }
                self.collect(1)
            }
            Feed::Here(watch) => watch.push(kind, piece),
            Feed::Gone => None,
        }
    }

    /// Waits until every piece handed over was read: a call ended.
    pub(super) fn settle(&mut self) -> Option<Found> {
        self.collect(0)
    }

    /// Waits until at most `behind` pieces are unanswered; the loop they found first, if any.
    fn collect(&mut self, behind: usize) -> Option<Found> {
        let Feed::Thread { behind: feed, .. } = &mut self.feed else {
            return None;
        };
        let mut found = None;
        if feed
            .collect(behind, |answer| found = found.or(answer))
            .is_err()
        {
            self.gone();
        }
        found
    }

    fn gone(&mut self) {
        tracing::warn!("loop detection stopped: no further loops are reported this turn");
        self.feed = Feed::Gone;
    }

    /// Ends the turn's detection: the loop found, with its repeats counted to the end of
    /// everything handed over.
    pub(super) fn finish(self) -> Option<Found> {
        match self.feed {
            Feed::Thread { behind, done } => {
                // The worker answers nothing at the end: its detectors come back.
                let _ = behind.close();
                done.join().ok()?.found()
            }
            Feed::Here(watch) => watch.found(),
            Feed::Gone => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tea(cycles: usize) -> String {
        let steps = [
            "Boil the water first.",
            "Warm the pot with it.",
            "Add the tea leaves.",
        ];
        (0..cycles * 3)
            .map(|i| format!("{}\n", steps[i % 3]))
            .collect()
    }

    /// Fed in pieces on its thread, the feed finds the loop the detector finds in the whole
    /// text, one piece later, and counts its repeats to the end.
    #[test]
    fn pieces_on_the_thread_find_what_the_whole_text_shows() {
        let params = LoopParams::default();
        let text = tea(10);
        let mut whole = LoopDetector::new(&params);
        let first = whole.push(&text).expect("the whole text loops");
        for size in [1, 9, 64, text.len()] {
            let mut feed = LoopFeed::new(&params, LoopAction::Warn);
            let mut reported = Vec::new();
            for piece in text.as_bytes().chunks(size) {
                let piece = std::str::from_utf8(piece).unwrap();
                reported.extend(feed.push(NodeType::Response, &TextPiece::new(piece.to_string())));
            }
            reported.extend(feed.settle());
            assert_eq!(reported.len(), 1, "pieces of {size}: {reported:?}");
            assert_eq!(reported[0].0, NodeType::Response);
            assert_eq!(reported[0].1.period, first.period, "pieces of {size}");
            let (kind, counted) = feed.finish().expect("found");
            assert_eq!(kind, NodeType::Response);
            assert_eq!(counted, whole.found().unwrap(), "pieces of {size}");
        }
    }

    /// A loop is reported with the piece after the one that completed it, never later: when
    /// it is reported does not depend on the thread's speed.
    #[test]
    fn a_loop_comes_back_exactly_one_piece_behind() {
        let params = LoopParams::default();
        let mut feed = LoopFeed::new(&params, LoopAction::Stop);
        assert_eq!(feed.push(NodeType::Thinking, &TextPiece::new(tea(6))), None);
        let (kind, report) = feed
            .push(NodeType::Thinking, &TextPiece::new("More".to_string()))
            .expect("reported now");
        assert_eq!(kind, NodeType::Thinking);
        assert_eq!(report.period, 3);
        assert_eq!(feed.settle(), None, "reported once");
        // After the loop, the other stream is not read.
        assert_eq!(feed.push(NodeType::Response, &TextPiece::new(tea(6))), None);
        assert_eq!(feed.settle(), None);
        assert_eq!(feed.finish().map(|f| f.0), Some(NodeType::Thinking));
    }

    /// With loops not looked for, nothing is reported and no thread is started.
    #[test]
    fn off_reports_nothing() {
        let params = LoopParams::default();
        let mut feed = LoopFeed::new(&params, LoopAction::Off);
        assert!(matches!(feed.feed, Feed::Here(_)));
        assert_eq!(
            feed.push(NodeType::Response, &TextPiece::new(tea(10))),
            None
        );
        assert_eq!(feed.settle(), None);
        assert_eq!(feed.finish(), None);
    }
}
