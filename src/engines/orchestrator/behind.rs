//! A worker on a thread of its own that the turn keeps a set number of pieces behind it
//! (ThinkGraph, `graph_feed.rs`, and the loop detectors, `loop_feed.rs`): the turn hands a
//! piece over and then takes the answers to those before it, so the worker's reading of one
//! piece overlaps the turn's handling of the next, while what the turn reports, and when,
//! does not depend on the worker's speed.

use std::sync::mpsc;
use std::thread::JoinHandle;

/// The worker's thread is gone (its work panicked): it answers nothing more.
pub(super) struct Gone;

/// The turn's end of a worker: pieces go in, one answer per piece comes back in order.
pub(super) struct Behind<P, A> {
    pieces: mpsc::Sender<P>,
    answers: mpsc::Receiver<A>,
    /// Pieces handed over and not answered yet.
    pending: usize,
}

impl<P: Send + 'static, A: Send + 'static> Behind<P, A> {
    /// Starts `work` on a thread named `name`. It is to answer each piece it reads, in
    /// order, and may answer once more when the pieces end ([`Behind::close`]); what it
    /// returns is the thread's result.
    pub(super) fn spawn<R: Send + 'static>(
        name: &str,
        work: impl FnOnce(mpsc::Receiver<P>, mpsc::Sender<A>) -> R + Send + 'static,
    ) -> std::io::Result<(Self, JoinHandle<R>)> {
        let (pieces, rx) = mpsc::channel();
        let (tx, answers) = mpsc::channel();
        let done = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(rx, tx))?;
        let behind = Self {
            pieces,
            answers,
            pending: 0,
        };
        Ok((behind, done))
    }

    /// Hands a piece over.
    pub(super) fn send(&mut self, piece: P) -> Result<(), Gone> {
        self.pieces.send(piece).map_err(|_| Gone)?;
        self.pending += 1;
        Ok(())
    }

    /// Waits until at most `behind` pieces are unanswered, giving each answer to `f` in
    /// order.
    pub(super) fn collect(&mut self, behind: usize, mut f: impl FnMut(A)) -> Result<(), Gone> {
        while self.pending > behind {
            let answer = self.answers.recv().map_err(|_| Gone)?;
            self.pending -= 1;
            f(answer);
        }
        Ok(())
    }

    /// Ends the pieces; the worker's answer to their end, if it gives one.
    pub(super) fn close(self) -> Option<A> {
        drop(self.pieces);
        self.answers.recv().ok()
    }
}
