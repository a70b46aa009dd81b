//! Test support the engines' unit tests share: a provider that answers from a script
//! without a network, and a run that catches any store commit made on the runtime thread.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use futures::StreamExt;

use crate::engines::llm::{
    CallCtx, ChatRequest, EventStream, Provider, StopReason, StreamEvent, Usage,
};
use crate::store::{Store, StoreError};

/// How long the lock holder of [`commits_during_polls`] waits for a poll to end before it
/// counts a stall; far longer than any poll that does not wait on the store.
pub(crate) const PATIENCE: Duration = Duration::from_secs(2);

/// One scripted answer: optional thinking, a compaction summary and a tool call, then the
/// text; thinking and text arrive in `pieces` deltas each (at least one).
#[derive(Clone, Debug, Default)]
pub(crate) struct Reply {
    pub thinking: String,
    pub compaction: Option<String>,
    pub tool: Option<(String, serde_json::Value)>,
    pub text: String,
    pub pieces: usize,
}

impl Reply {
    pub(crate) fn text(text: &str) -> Self {
        Self {
            text: text.to_string(),
            ..Self::default()
        }
    }
}

/// `text` cut into `pieces` parts on char boundaries (the last takes the rest).
fn split(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(pieces.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Answers each call with the next scripted reply, the last one again once they run out.
pub(crate) struct ScriptedProvider {
    replies: Mutex<VecDeque<Reply>>,
    last: Reply,
}

impl ScriptedProvider {
    pub(crate) fn new(replies: Vec<Reply>) -> Arc<Self> {
        let last = replies.last().cloned().unwrap_or_default();
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            last,
        })
    }

    /// The same text for every call.
    pub(crate) fn always(text: &str) -> Arc<Self> {
        Self::new(vec![Reply::text(text)])
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn stream(&self, _req: ChatRequest, _ctx: CallCtx) -> EventStream {
        let reply = self
            .replies
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front()
            .unwrap_or_else(|| self.last.clone());
        let mut events = Vec::new();
        for text in split(&reply.thinking, reply.pieces) {
            events.push(StreamEvent::ThinkingDelta { text });
        }
        if let Some(summary) = reply.compaction {
            events.push(StreamEvent::Compaction {
                summary,
                encrypted_content: None,
            });
        }
        if let Some((name, input)) = reply.tool {
            events.push(StreamEvent::ToolUse {
                id: format!("call-{name}"),
                name,
                input,
            });
        }
        for text in split(&reply.text, reply.pieces) {
            events.push(StreamEvent::TextDelta { text });
        }
        events.push(StreamEvent::Usage {
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
        });
        events.push(StreamEvent::Stop {
            reason: StopReason::EndTurn,
        });
        futures::stream::iter(events).boxed()
    }
}

/// What the poller tells the lock holder.
enum Hold {
    Grab,
    Release,
    Stop,
}

/// A thread that takes the store's write lock on `Grab` and keeps it until `Release`, or
/// until `patience` runs out, which it counts as a stall. It never commits: the transaction
/// it holds is dropped. Returns the stalls when told to stop.
fn lock_holder(
    store: Store,
    patience: Duration,
) -> (
    mpsc::Sender<Hold>,
    mpsc::Receiver<()>,
    thread::JoinHandle<usize>,
) {
    let (tell, orders) = mpsc::channel();
    let (held_tx, held) = mpsc::channel();
    let holder = thread::spawn(move || {
        let mut stalls = 0;
        loop {
            match orders.recv() {
                Ok(Hold::Grab) => {}
                // The release of a poll the holder already gave up on.
                Ok(Hold::Release) => continue,
                Ok(Hold::Stop) | Err(_) => return stalls,
            }
            let mut stop = false;
            let _ = store.write(|_| -> Result<(), StoreError> {
                let _ = held_tx.send(());
                match orders.recv_timeout(patience) {
                    Ok(Hold::Release | Hold::Grab) => {}
                    Ok(Hold::Stop) | Err(RecvTimeoutError::Disconnected) => stop = true,
                    Err(RecvTimeoutError::Timeout) => stalls += 1,
                }
                Err(StoreError::Io("the lock is let go without a commit".into()))
            });
            if stop {
                return stalls;
            }
        }
    });
    (tell, held, holder)
}

/// The work under test, polled only while the holder has the write lock.
struct Held<F> {
    work: Pin<Box<F>>,
    tell: mpsc::Sender<Hold>,
    held: mpsc::Receiver<()>,
}

impl<F: Future> Future for Held<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let _ = this.tell.send(Hold::Grab);
        // Waits while a commit from the blocking pool finishes: that is the point of it.
        let _ = this.held.recv();
        let out = this.work.as_mut().poll(cx);
        let _ = this.tell.send(Hold::Release);
        out
    }
}

/// Runs `work` on a current-thread runtime while another thread holds the store's write
/// lock for the length of every poll of `work` and lets it go between polls. Commits `work`
/// hands to the blocking pool go through between polls; a commit made inside a poll — on
/// the runtime thread — waits for the lock until the holder gives up after `patience`.
/// Returns the output and how many polls that happened in.
pub(crate) fn commits_during_polls<F: Future>(
    store: &Store,
    patience: Duration,
    work: F,
) -> (F::Output, usize) {
    let (tell, held, holder) = lock_holder(store.clone(), patience);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let out = runtime.block_on(Held {
        work: Box::pin(work),
        tell: tell.clone(),
        held,
    });
    let _ = tell.send(Hold::Stop);
    let stalls = holder.join().expect("the lock holder thread");
    (out, stalls)
}

mod tests {
    use super::*;
    use crate::store::{Session, SessionSource};

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let store = crate::store::testing::open_at(&dir.path().join("s.redb"));
        (dir, store)
    }

    #[test]
    fn write_async_commits_between_polls() {
        let (_dir, store) = store();
        let s = Session::new("async", SessionSource::Glassbox);
        let id = s.id;
        let (out, stalls) = commits_during_polls(&store, PATIENCE, async {
            store.write_async(move |w| w.put_session(&s)).await
        });
        assert!(out.is_ok(), "{out:?}");
        assert_eq!(stalls, 0);
        assert!(store.session(id).ok().flatten().is_some());
    }

    #[test]
    fn a_commit_inside_a_poll_is_caught() {
        let (_dir, store) = store();
        let s = Session::new("inline", SessionSource::Glassbox);
        let id = s.id;
        let (out, stalls) = commits_during_polls(&store, Duration::from_millis(200), async {
            store.write(|w| w.put_session(&s))
        });
        // The commit still lands once the holder gives up; the stall is what gives it away.
        assert!(out.is_ok(), "{out:?}");
        assert_eq!(stalls, 1);
        assert!(store.session(id).ok().flatten().is_some());
    }

    #[test]
    fn another_task_runs_while_a_write_waits() {
        let (_dir, store) = store();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime");
        let (tx, rx) = mpsc::channel::<()>();
        let heard = runtime.block_on(async {
            // Only runs if the runtime's one thread is free while the write below waits.
            let ticker = tokio::spawn(async move {
                tokio::task::yield_now().await;
                let _ = tx.send(());
            });
            let heard = store
                .write_async(move |_| Ok(rx.recv_timeout(Duration::from_secs(5)).is_ok()))
                .await;
            let _ = ticker.await;
            heard
        });
        assert!(matches!(heard, Ok(true)), "{heard:?}");
    }

    #[test]
    fn run_blocking_works_outside_a_runtime() {
        let (_dir, store) = store();
        let count = futures::executor::block_on(store.run_blocking(|s| s.sessions()));
        assert_eq!(count.map(|s| s.len()).ok(), Some(0));
    }

    #[test]
    #[should_panic(expected = "inside the store task")]
    fn a_panic_in_store_work_reaches_the_caller() {
        let (_dir, store) = store();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime");
        let _ = runtime.block_on(
            store.run_blocking(|_| -> Result<(), StoreError> { panic!("inside the store task") }),
        );
    }
}
