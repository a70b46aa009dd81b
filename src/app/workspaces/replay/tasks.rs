//! The Replay workspace's background work: reading a session's timeline from the store, and
//! the timer that makes the next event due.

use super::{ReplayEffect, ReplayMsg, timeline};
use crate::app::runtime::Services;
use crate::app::workspaces::Outbox;

/// Carries out one effect; what it finds comes back as a [`ReplayMsg`].
pub(super) fn run(e: ReplayEffect, svc: &Services, out: Outbox<ReplayMsg>) {
    match e {
        ReplayEffect::Load {
            session,
            from,
            max_gap,
            autoplay,
        } => {
            let store = svc.store.clone();
            out.blocking(move || match timeline(&store, session, from, max_gap) {
                Ok(timeline) => ReplayMsg::Loaded { timeline, autoplay },
                Err(e) => ReplayMsg::Failed(format!("cannot replay: {e:#}")),
            });
        }
        ReplayEffect::Wake { generation, after } => {
            tokio::spawn(async move {
                if !after.is_zero() {
                    tokio::time::sleep(after).await;
                }
                out.send(ReplayMsg::Tick { generation });
            });
        }
    }
}
