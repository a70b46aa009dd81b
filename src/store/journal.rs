//! The change journal: every write appends what it changed under the next sequence number,
//! and followers in other processes read the entries after the last one they saw.

use chrono::Utc;

use super::kv::ReadableTable;
use super::tables::*;
use super::*;

impl Store {
    /// The newest journal sequence number (0 when empty).
    pub fn last_seq(&self) -> Result<u64> {
        let r = self.read()?;
        let t = r.open_table(JOURNAL)?;
        Ok(t.last()?.map(|(k, _)| k.value()).unwrap_or(0))
    }

    /// Journal entries with sequence > `since`, at most `limit`, in order. A follower keeps
    /// the last sequence it saw and calls this again.
    pub fn follow(&self, since: u64, limit: usize) -> Result<Vec<(u64, Change)>> {
        let r = self.read()?;
        let t = r.open_table(JOURNAL)?;
        let mut out = Vec::new();
        for row in t.range(since.saturating_add(1)..)?.take(limit) {
            let (k, v) = row?;
            out.push((k.value(), codec::decode("journal", v.value())?));
        }
        Ok(out)
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
