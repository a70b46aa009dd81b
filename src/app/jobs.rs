//! Background jobs where only the newest request matters: search as you type, loading the
//! session the user moved to. One job runs at a time; a request made while it runs waits in
//! a single slot, replacing any older waiting request, so a burst of keystrokes costs at
//! most two runs (the one under way and the last request), never one per key.

use std::sync::{Arc, Mutex, PoisonError};

/// A latest-wins queue of blocking jobs of one kind. Cloning shares the queue.
pub struct LatestJob<R> {
    slot: Arc<Mutex<Slot<R>>>,
    work: Arc<dyn Fn(R) + Send + Sync>,
}

struct Slot<R> {
    running: bool,
    waiting: Option<R>,
}

impl<R> Clone for LatestJob<R> {
    fn clone(&self) -> Self {
        Self {
            slot: Arc::clone(&self.slot),
            work: Arc::clone(&self.work),
        }
    }
}

impl<R: Send + 'static> LatestJob<R> {
    /// A queue whose jobs run `work` off the async executor (`spawn_blocking`).
    pub fn new(work: impl Fn(R) + Send + Sync + 'static) -> Self {
        Self {
            slot: Arc::new(Mutex::new(Slot {
                running: false,
                waiting: None,
            })),
            work: Arc::new(work),
        }
    }

    /// Asks for `request`: runs it now when nothing runs, else keeps it as the one to run
    /// next (dropping the request that was waiting). Must be called inside a tokio runtime.
    pub fn submit(&self, request: R) {
        {
            let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.running {
                slot.waiting = Some(request);
                return;
            }
            slot.running = true;
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.drain(request));
    }

    /// Runs `first`, then whatever request is waiting each time one ends.
    fn drain(&self, first: R) {
        let mut next = Some(first);
        while let Some(request) = next {
            (self.work)(request);
            let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
            next = slot.waiting.take();
            if next.is_none() {
                slot.running = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_runs_the_first_and_the_last_request_only() {
        let (started_tx, started_rx) = mpsc::channel::<u32>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Mutex::new(release_rx);
        let (ran_tx, ran_rx) = mpsc::channel::<u32>();
        let job = LatestJob::new(move |n: u32| {
            started_tx.send(n).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
            ran_tx.send(n).unwrap();
        });
        job.submit(0);
        // The first job is under way (and held) before the burst arrives.
        assert_eq!(started_rx.recv_timeout(Duration::from_secs(5)).unwrap(), 0);
        for n in 1..=20 {
            job.submit(n);
        }
        release_tx.send(()).unwrap();
        assert_eq!(started_rx.recv_timeout(Duration::from_secs(5)).unwrap(), 20);
        release_tx.send(()).unwrap();
        let ran: Vec<u32> = (0..2)
            .map(|_| ran_rx.recv_timeout(Duration::from_secs(5)).unwrap())
            .collect();
        assert_eq!(ran, [0, 20]);
        // Nothing else was queued; the queue is idle again and takes a new request at once.
        assert!(ran_rx.recv_timeout(Duration::from_millis(100)).is_err());
        job.submit(21);
        assert_eq!(started_rx.recv_timeout(Duration::from_secs(5)).unwrap(), 21);
        release_tx.send(()).unwrap();
        assert_eq!(ran_rx.recv_timeout(Duration::from_secs(5)).unwrap(), 21);
    }
}
