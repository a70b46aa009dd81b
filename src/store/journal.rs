//! The change journal: every write appends what it changed under the next sequence number,
//! and followers in other processes read the entries after the last one they saw.
//!
//! A follower reads with [`Store::follow`] and, when nothing is new, waits with
//! [`Store::wait_for_change`]. On a backend that tells of commits (PostgreSQL) reading the
//! journal first starts listening, so a commit made between the read and the wait still
//! ends the wait.

use std::time::Duration;

use chrono::Utc;

use super::kv::ReadableTable;
use super::tables::*;
use super::*;

impl Store {
    /// The newest journal sequence number (0 when empty).
    pub fn last_seq(&self) -> Result<u64> {
        self.listen()?;
        let r = self.read()?;
        let t = r.open_table(JOURNAL)?;
        Ok(t.last()?.map(|(k, _)| k.value()).unwrap_or(0))
    }

    /// Journal entries with sequence > `since`, at most `limit`, in order. A follower keeps
    /// the last sequence it saw and calls this again.
    pub fn follow(&self, since: u64, limit: usize) -> Result<Vec<(u64, Change)>> {
        self.listen()?;
        let r = self.read()?;
        let t = r.open_table(JOURNAL)?;
        let mut out = Vec::new();
        for row in t.range(since.saturating_add(1)..)?.take(limit) {
            let (k, v) = row?;
            out.push((k.value(), codec::decode("journal", v.value())?));
        }
        Ok(out)
    }

    /// Waits up to `timeout` for another commit, by this or any other instance, since the
    /// previous wait or journal read ([`Store::follow`], [`Store::last_seq`]); `true` when
    /// there was one (or some may have been missed: the follower reads again). On PostgreSQL
    /// a commit ends the wait at once; a redb file and the in-memory backend cannot tell, so
    /// the wait takes `timeout` and answers `false`: the follower then reads the journal
    /// anyway, as it would after any pause. When the backend fails the wait still takes
    /// `timeout` and answers `true`.
    pub fn wait_for_change(&self, timeout: Duration) -> bool {
        let kv::Db::Bytes(backend) = &*self.db else {
            std::thread::sleep(timeout);
            return false;
        };
        let start = std::time::Instant::now();
        match backend.wait_for_change(timeout) {
            Ok(changed) => changed,
            Err(e) => {
                tracing::warn!(store = %self.path.display(), error = %e, "waiting for a change");
                std::thread::sleep(timeout.saturating_sub(start.elapsed()));
                true
            }
        }
    }

    /// Whether [`Store::wait_for_change`] tells of commits (PostgreSQL), so that `false`
    /// means nothing changed; a redb file and the in-memory backend cannot tell.
    pub fn tells_of_changes(&self) -> bool {
        match &*self.db {
            kv::Db::Bytes(backend) => backend.tells_of_changes(),
            kv::Db::Redb(_) => false,
        }
    }

    /// Starts listening for commits on a backend that tells of them.
    fn listen(&self) -> Result<()> {
        match &*self.db {
            kv::Db::Bytes(backend) => backend.listen(),
            kv::Db::Redb(_) => Ok(()),
        }
    }
}

impl Writer<'_> {
    /// Appends one entry for a change this transaction made.
    pub(super) fn journal(
        &mut self,
        kind: ChangeKind,
        session: Option<SessionId>,
        id: Option<uuid::Uuid>,
    ) -> Result<()> {
        let change = Change {
            kind,
            session,
            id,
            at: Utc::now(),
        };
        let mut t = self.txn.open_table(JOURNAL)?;
        t.insert(self.next_seq, codec::encode(&change)?.as_slice())?;
        self.next_seq += 1;
        Ok(())
    }
}
