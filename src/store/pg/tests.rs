//! The PostgreSQL backend against a real server: one throwaway server per test binary
//! (`tests/support/pg.rs`), a fresh database per test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Bound::{self, Excluded, Included, Unbounded};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use super::conn::pgpass_lookup;
use super::txn::{check_name, range_sql};
use super::*;
use crate::store::kv::bytes::Row;

use crate::store::testing::harness::{self, TempPostgres};

fn server() -> &'static TempPostgres {
    TempPostgres::shared()
}

/// A backend on a fresh database over the Unix socket, and the database's name.
fn fresh() -> (String, PgBackend) {
    let db = server().create_database();
    let backend = open(&server().socket_url(&db)).unwrap();
    (db, backend)
}

/// Connects with no password from the environment.
fn open(url: &str) -> Result<PgBackend> {
    PgBackend::connect_with(url, &PasswordSources::default())
}

fn put(backend: &PgBackend, table: &str, key: &[u8], value: &[u8]) {
    let mut w = backend.begin_write().unwrap();
    w.insert(table, key, value).unwrap();
    w.commit().unwrap();
}

fn get(backend: &PgBackend, table: &str, key: &[u8]) -> Option<Vec<u8>> {
    backend.begin_read().unwrap().get(table, key).unwrap()
}

fn keys(rows: &[Row]) -> Vec<Vec<u8>> {
    rows.iter().map(|(k, _)| k.clone()).collect()
}

fn all(r: &dyn ByteRead, table: &str, rev: bool) -> Vec<Vec<u8>> {
    keys(
        &r.range(table, Unbounded, Unbounded, rev, usize::MAX)
            .unwrap(),
    )
}

/// The `kv_` tables the database holds, registered or not.
fn pg_tables(db: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(&server().socket_url(db), postgres::NoTls).unwrap();
    let rows = client
        .query(
            "SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname LIKE 'kv\\_%' \
             ORDER BY relname",
            &[],
        )
        .unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}

fn open_error(result: Result<PgBackend>) -> String {
    match result {
        Err(e @ StoreError::Open { .. }) => e.to_string(),
        Err(other) => panic!("expected an open error, got {other:?}"),
        Ok(_) => panic!("expected an open error, the connection succeeded"),
    }
}

// ---- without a server ------------------------------------------------------------------

#[test]
fn redact_url_removes_every_password() {
    let cases = [
        (
            "postgres://me:s3cret@db.example:5433/store?sslmode=require",
            "postgres://me@db.example:5433/store?sslmode=require",
        ),
        ("postgresql://me:p%40ss@host/db", "postgresql://me@host/db"),
        ("postgresql://me@host/db", "postgresql://me@host/db"),
        ("postgresql://host/db", "postgresql://host/db"),
        (
            "postgresql://host/db?password=s3cret&sslmode=disable",
            "postgresql://host/db?sslmode=disable",
        ),
        (
            "postgresql://me:a:b@host/db?PASSWORD=x",
            "postgresql://me@host/db",
        ),
        (
            "host=db user=me password=s3cret dbname=store",
            "host=db user=me dbname=store",
        ),
        (
            "host=db password = 'two words \\' more' user=me",
            "host=db user=me",
        ),
        ("password=s3cret", ""),
    ];
    for (url, want) in cases {
        assert_eq!(redact_url(url), want, "{url}");
    }
}

#[test]
fn pgpass_lines_match_field_by_field() {
    let text = "# comment\n\
                \n\
                other:5432:*:me:wrong-host\n\
                db\\:1:5432:store:me:escaped\\:colon\n\
                localhost:*:*:me:any-port\n\
                *:*:*:*:fallback:with:colons\n";
    let want = |h: &str, p: &str, d: &str, u: &str| {
        pgpass_lookup(text, [Some(h), Some(p), Some(d), Some(u)])
    };
    assert_eq!(
        want("db:1", "5432", "store", "me").as_deref(),
        Some("escaped:colon")
    );
    assert_eq!(
        want("localhost", "6000", "x", "me").as_deref(),
        Some("any-port")
    );
    assert_eq!(
        want("elsewhere", "1", "x", "you").as_deref(),
        Some("fallback:with:colons")
    );
    assert_eq!(
        pgpass_lookup("h:1:d:u:pw\n", [Some("h"), Some("1"), Some("d"), None]),
        None
    );
    assert_eq!(pgpass_lookup("too:few:fields\n", [None; 4]), None);
}

#[test]
fn table_names_are_checked() {
    for good in ["nodes", "search_run_00000000000000ff", "a", &"x".repeat(60)] {
        check_name(good).unwrap();
    }
    for bad in ["", "Nodes", "a-b", "a b", "kv\"x", "é", &"x".repeat(61)] {
        assert!(
            matches!(check_name(bad), Err(StoreError::Invalid(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn range_sql_places_bounds_and_limit() {
    let u: Bound<()> = Unbounded;
    assert_eq!(
        range_sql("t", u, u, false),
        "SELECT k, v FROM \"kv_t\" ORDER BY k LIMIT $1"
    );
    assert_eq!(
        range_sql("t", Included(()), Excluded(()), true),
        "SELECT k, v FROM \"kv_t\" WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3"
    );
    assert_eq!(
        range_sql("t", u, Included(()), false),
        "SELECT k, v FROM \"kv_t\" WHERE k <= $1 ORDER BY k LIMIT $2"
    );
    assert_eq!(
        range_sql("t", Excluded(()), u, false),
        "SELECT k, v FROM \"kv_t\" WHERE k > $1 ORDER BY k LIMIT $2"
    );
}

// ---- layout ----------------------------------------------------------------------------

#[test]
fn a_new_database_gets_the_layout_and_no_tables() {
    let (db, backend) = fresh();
    let r = backend.begin_read().unwrap();
    assert!(r.list_tables().unwrap().is_empty());
    assert_eq!(r.get("nodes", b"k").unwrap(), None);
    assert_eq!(r.len("nodes").unwrap(), 0);
    assert!(all(r.as_ref(), "nodes", false).is_empty());
    drop(r);
    // A second instance opens the same layout.
    let again = open(&server().socket_url(&db)).unwrap();
    assert!(
        again
            .begin_read()
            .unwrap()
            .list_tables()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_newer_layout_is_refused() {
    let (db, backend) = fresh();
    drop(backend);
    server().admin_in(&db, "UPDATE glassbox_layout SET version = 99");
    let message = open_error(open(&server().socket_url(&db)));
    assert!(message.contains("layout version is 99"), "{message}");
    assert!(message.contains("upgrade glassbox"), "{message}");
}

// ---- reads and writes ------------------------------------------------------------------

#[test]
fn keys_come_back_in_byte_order() {
    let (_, backend) = fresh();
    let numbers = [u64::MAX, 0, 256, 1 << 32, 255, 1, 1 << 63, (1 << 63) - 1];
    let bytes: Vec<Vec<u8>> = vec![
        vec![0xff, 0xff],
        vec![0x00],
        vec![],
        vec![0xff],
        vec![0x00, 0x00],
        vec![0x00, 0xff],
        vec![0x01],
        vec![0xff, 0x00],
        vec![0x7f, 0x80],
    ];
    let mut w = backend.begin_write().unwrap();
    for n in numbers {
        w.insert("numbers", &n.to_be_bytes(), &n.to_le_bytes())
            .unwrap();
    }
    for key in &bytes {
        w.insert("bytes", key, b"v").unwrap();
    }
    w.commit().unwrap();

    let r = backend.begin_read().unwrap();
    let mut sorted = numbers.to_vec();
    sorted.sort();
    let want: Vec<Vec<u8>> = sorted.iter().map(|n| n.to_be_bytes().to_vec()).collect();
    assert_eq!(all(r.as_ref(), "numbers", false), want);
    let rows = r
        .range("numbers", Unbounded, Unbounded, false, 100)
        .unwrap();
    for (k, v) in rows {
        assert_eq!(
            u64::from_be_bytes(k.try_into().unwrap())
                .to_le_bytes()
                .to_vec(),
            v
        );
    }
    let mut want = bytes.clone();
    want.sort();
    assert_eq!(all(r.as_ref(), "bytes", false), want);
    want.reverse();
    assert_eq!(all(r.as_ref(), "bytes", true), want);
    assert_eq!(r.get("bytes", &[]).unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn range_bounds_and_paging() {
    let (_, backend) = fresh();
    let mut w = backend.begin_write().unwrap();
    for n in 0u64..100 {
        w.insert("t", &n.to_be_bytes(), &[n as u8]).unwrap();
    }
    w.commit().unwrap();
    let r = backend.begin_read().unwrap();
    let k = |n: u64| n.to_be_bytes();
    let nums = |rows: Vec<Row>| -> Vec<u64> {
        rows.into_iter()
            .map(|(key, _)| u64::from_be_bytes(key.try_into().unwrap()))
            .collect()
    };
    let (k10, k15) = (k(10), k(15));
    let range = |lo, hi, rev| nums(r.range("t", lo, hi, rev, usize::MAX).unwrap());
    assert_eq!(
        range(Included(&k10[..]), Included(&k15[..]), false),
        [10, 11, 12, 13, 14, 15]
    );
    assert_eq!(
        range(Excluded(&k10[..]), Excluded(&k15[..]), false),
        [11, 12, 13, 14]
    );
    assert_eq!(
        range(Included(&k10[..]), Excluded(&k15[..]), true),
        [14, 13, 12, 11, 10]
    );
    assert_eq!(
        range(Excluded(&k10[..]), Included(&k15[..]), true),
        [15, 14, 13, 12, 11]
    );
    assert_eq!(
        range(Unbounded, Excluded(&k10[..]), false),
        (0..10).collect::<Vec<_>>()
    );
    assert_eq!(
        range(Included(&k15[..]), Unbounded, true),
        (15..100).rev().collect::<Vec<_>>()
    );
    assert!(range(Included(&k15[..]), Excluded(&k10[..]), false).is_empty());
    assert!(
        r.range("t", Unbounded, Unbounded, false, 0)
            .unwrap()
            .is_empty()
    );
    // A key between stored keys bounds as well as a stored one.
    let mid = [0, 0, 0, 0, 0, 0, 0, 20, 0x80];
    assert_eq!(
        range(Excluded(&mid[..]), Excluded(&k(23)[..]), false),
        [21, 22]
    );

    // Paging: again from just past the last key, forward and back.
    for rev in [false, true] {
        let mut seen = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        loop {
            let from = last.as_deref().map_or(Unbounded, Excluded);
            let (lo, hi) = if rev {
                (Unbounded, from)
            } else {
                (from, Unbounded)
            };
            let page = r.range("t", lo, hi, rev, 7).unwrap();
            assert!(page.len() <= 7);
            let Some((key, _)) = page.last() else { break };
            last = Some(key.clone());
            seen.extend(nums(page));
        }
        let mut want: Vec<u64> = (0..100).collect();
        if rev {
            want.reverse();
        }
        assert_eq!(seen, want, "rev {rev}");
    }
}

#[test]
fn insert_and_remove_return_the_old_value() {
    let (_, backend) = fresh();
    let mut w = backend.begin_write().unwrap();
    assert_eq!(w.insert("t", b"a", b"1").unwrap(), None);
    assert_eq!(
        w.insert("t", b"a", b"2").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    // The transaction sees its own writes.
    assert_eq!(w.get("t", b"a").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(w.len("t").unwrap(), 1);
    assert_eq!(w.insert("t", b"b", b"").unwrap(), None);
    assert_eq!(w.remove("t", b"b").unwrap().as_deref(), Some(&b""[..]));
    assert_eq!(w.remove("t", b"b").unwrap(), None);
    assert_eq!(w.remove("missing", b"b").unwrap(), None);
    assert_eq!(w.list_tables().unwrap(), ["t"]);
    w.commit().unwrap();
    assert_eq!(get(&backend, "t", b"a").as_deref(), Some(&b"2"[..]));
    assert_eq!(get(&backend, "t", b"b"), None);
    assert_eq!(get(&backend, "missing", b"b"), None);
}

#[test]
fn tables_are_created_listed_counted_and_deleted() {
    let (db, backend) = fresh();
    let mut w = backend.begin_write().unwrap();
    for (table, n) in [("search_run_17", 3u8), ("nodes", 2), ("edges_in", 1)] {
        for i in 0..n {
            w.insert(table, &[i], &[i]).unwrap();
        }
    }
    w.commit().unwrap();
    let r = backend.begin_read().unwrap();
    assert_eq!(
        r.list_tables().unwrap(),
        ["edges_in", "nodes", "search_run_17"]
    );
    assert_eq!(r.len("search_run_17").unwrap(), 3);
    assert_eq!(r.len("nodes").unwrap(), 2);
    assert_eq!(r.len("absent").unwrap(), 0);
    drop(r);

    let mut w = backend.begin_write().unwrap();
    assert!(w.delete_table("search_run_17").unwrap());
    assert!(!w.delete_table("search_run_17").unwrap());
    assert!(!w.delete_table("absent").unwrap());
    assert_eq!(w.get("search_run_17", &[0]).unwrap(), None);
    assert_eq!(w.list_tables().unwrap(), ["edges_in", "nodes"]);
    w.commit().unwrap();
    let r = backend.begin_read().unwrap();
    assert_eq!(r.list_tables().unwrap(), ["edges_in", "nodes"]);
    assert_eq!(r.len("search_run_17").unwrap(), 0);
    drop(r);

    // The same name again, on connections whose statements named the dropped table.
    for round in 0..3u8 {
        put(&backend, "search_run_17", b"k", &[round]);
        assert_eq!(get(&backend, "search_run_17", b"k"), Some(vec![round]));
        let mut w = backend.begin_write().unwrap();
        assert_eq!(w.len("search_run_17").unwrap(), 1);
        assert!(w.delete_table("search_run_17").unwrap());
        w.commit().unwrap();
    }
    assert_eq!(get(&backend, "search_run_17", b"k"), None);
    assert_eq!(pg_tables(&db), ["kv_edges_in", "kv_nodes"]);
}

#[test]
fn deleting_a_table_keeps_readers_running_and_their_snapshot() {
    let (db, backend) = fresh();
    put(&backend, "doomed", b"a", b"1");
    put(&backend, "kept", b"a", b"1");
    let reader = backend.begin_read().unwrap();
    assert_eq!(reader.len("doomed").unwrap(), 1);
    // A reader that first touches the table after the delete committed.
    let untouched = backend.begin_read().unwrap();

    let mut w = backend.begin_write().unwrap();
    assert!(w.delete_table("doomed").unwrap());
    // A reader meanwhile is not held up by the writer.
    let during = backend.begin_read().unwrap();
    assert_eq!(
        during.get("doomed", b"a").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    drop(during);
    let started = Instant::now();
    w.commit().unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));

    // The reader that began before still sees the table; its PostgreSQL table stays until
    // a later delete finds no reader on it.
    assert_eq!(
        reader.get("doomed", b"a").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    assert_eq!(reader.list_tables().unwrap(), ["doomed", "kept"]);
    assert_eq!(
        untouched.get("doomed", b"a").unwrap().as_deref(),
        Some(&b"1"[..])
    );
    drop(untouched);
    assert_eq!(pg_tables(&db), ["kv_doomed", "kv_kept"]);
    assert_eq!(get(&backend, "doomed", b"a"), None);
    drop(reader);
    put(&backend, "temp", b"a", b"1");
    let mut w = backend.begin_write().unwrap();
    assert!(w.delete_table("temp").unwrap());
    w.commit().unwrap();
    assert_eq!(pg_tables(&db), ["kv_kept"]);
}

#[test]
fn bad_table_names_are_refused_before_any_sql() {
    let (_, backend) = fresh();
    let mut w = backend.begin_write().unwrap();
    for bad in ["Nodes", "x; DROP TABLE glassbox_tables", ""] {
        assert!(matches!(
            w.insert(bad, b"k", b"v"),
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(w.get(bad, b"k"), Err(StoreError::Invalid(_))));
    }
    // Refusals leave the transaction usable.
    w.insert("ok", b"k", b"v").unwrap();
    w.commit().unwrap();
    assert_eq!(get(&backend, "ok", b"k").as_deref(), Some(&b"v"[..]));
}

/// A backend on a fresh database whose table `t` holds `before` → `1` and, by a constraint
/// of the database's own, refuses values of 10 bytes or more.
fn short_values() -> PgBackend {
    let (db, backend) = fresh();
    put(&backend, "t", b"before", b"1");
    server().admin_in(
        &db,
        "ALTER TABLE kv_t ADD CONSTRAINT short CHECK (length(v) < 10)",
    );
    backend
}

#[test]
fn a_failed_statement_fails_the_commit() {
    let backend = short_values();
    let mut w = backend.begin_write().unwrap();
    w.insert("t", b"kept?", b"1").unwrap();
    let err = w.insert("t", b"long", &[0; 20]).unwrap_err().to_string();
    assert!(err.contains("postgres postgresql://glassbox@"), "{err}");
    let err = w.commit().unwrap_err().to_string();
    assert!(err.contains("nothing was committed"), "{err}");
    assert_eq!(get(&backend, "t", b"kept?"), None);
    assert_eq!(get(&backend, "t", b"before").as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_failed_flush_of_held_back_puts_fails_the_commit() {
    let backend = short_values();
    // Held back until the commit, which sends them and fails.
    let mut w = backend.begin_write().unwrap();
    w.put("t", b"kept?", b"1").unwrap();
    w.put("t", b"long", &[0; 20]).unwrap();
    w.put("u", b"other", b"1").unwrap();
    let err = w.commit().unwrap_err().to_string();
    assert!(err.contains("nothing was committed"), "{err}");
    // A point read answers a held-back row from memory, sending nothing; a scan of the
    // table sends them, which fails; so does the commit.
    let mut w = backend.begin_write().unwrap();
    w.put("t", b"long", &[0; 20]).unwrap();
    w.put("u", b"other", b"1").unwrap();
    assert_eq!(w.get("t", b"long").unwrap(), Some(vec![0; 20]));
    assert_eq!(
        w.get_many("t", &[b"before", b"long", b"none"]).unwrap(),
        vec![Some(b"1".to_vec()), Some(vec![0; 20]), None]
    );
    let err = w
        .range("t", Bound::Unbounded, Bound::Unbounded, false, 10)
        .unwrap_err()
        .to_string();
    assert!(err.contains("postgres postgresql://glassbox@"), "{err}");
    assert!(w.commit().is_err());
    assert_eq!(get(&backend, "t", b"kept?"), None);
    assert_eq!(get(&backend, "t", b"long"), None);
    assert_eq!(get(&backend, "u", b"other"), None);
    assert_eq!(get(&backend, "t", b"before").as_deref(), Some(&b"1"[..]));
    // The connection went back to the pool in working order.
    put(&backend, "t", b"after", b"2");
    assert_eq!(get(&backend, "t", b"after").as_deref(), Some(&b"2"[..]));
}

// ---- isolation -------------------------------------------------------------------------

#[test]
fn a_read_sees_the_snapshot_of_when_it_began() {
    let (_, backend) = fresh();
    put(&backend, "t", b"a", b"1");
    // Begun before the commit and not yet used: the snapshot is already taken.
    let early = backend.begin_read().unwrap();
    let used = backend.begin_read().unwrap();
    assert_eq!(used.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));

    let mut w = backend.begin_write().unwrap();
    w.insert("t", b"a", b"2").unwrap();
    w.insert("t", b"b", b"1").unwrap();
    w.insert("new", b"x", b"1").unwrap();
    w.commit().unwrap();

    for r in [&early, &used] {
        assert_eq!(r.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));
        assert_eq!(r.get("t", b"b").unwrap(), None);
        assert_eq!(r.len("t").unwrap(), 1);
        assert_eq!(r.list_tables().unwrap(), ["t"]);
        assert_eq!(r.get("new", b"x").unwrap(), None);
    }
    let late = backend.begin_read().unwrap();
    assert_eq!(late.get("t", b"a").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(late.list_tables().unwrap(), ["new", "t"]);
}

#[test]
fn uncommitted_changes_are_invisible_and_dropped_with_the_transaction() {
    let (_, backend) = fresh();
    put(&backend, "t", b"a", b"1");
    let mut w = backend.begin_write().unwrap();
    w.insert("t", b"a", b"2").unwrap();
    w.insert("t", b"b", b"2").unwrap();
    w.insert("other", b"x", b"1").unwrap();
    assert!(w.delete_table("t").unwrap());
    w.insert("t", b"c", b"3").unwrap();

    // Another reader meanwhile: the last commit only. Readers do not wait for the writer.
    let r = backend.begin_read().unwrap();
    assert_eq!(r.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(r.get("t", b"c").unwrap(), None);
    assert_eq!(r.list_tables().unwrap(), ["t"]);
    drop(r);

    drop(w);
    let r = backend.begin_read().unwrap();
    assert_eq!(r.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(r.get("t", b"b").unwrap(), None);
    assert_eq!(r.list_tables().unwrap(), ["t"]);
    drop(r);
    // The writer lock went with it.
    put(&backend, "t", b"d", b"4");
}

#[test]
fn writers_wait_for_each_other_across_instances() {
    let (db, backend) = fresh();
    let other = open(&server().socket_url(&db)).unwrap();
    let mut first = backend.begin_write().unwrap();
    first.insert("t", b"first", b"1").unwrap();

    let started = Instant::now();
    let second = thread::spawn(move || {
        let mut w = other.begin_write().unwrap();
        let waited = started.elapsed();
        // It begins after the first committed, so it sees that commit.
        let seen = w.get("t", b"first").unwrap();
        w.insert("t", b"second", b"1").unwrap();
        w.commit().unwrap();
        (waited, seen)
    });
    thread::sleep(Duration::from_millis(300));
    first.commit().unwrap();
    let (waited, seen) = second.join().unwrap();
    assert!(
        waited >= Duration::from_millis(300),
        "waited only {waited:?}"
    );
    assert_eq!(seen.as_deref(), Some(&b"1"[..]));
    assert_eq!(get(&backend, "t", b"second").as_deref(), Some(&b"1"[..]));
}

#[test]
fn concurrent_increments_lose_no_update() {
    let (db, _) = fresh();
    let url = server().socket_url(&db);
    let barrier = Arc::new(Barrier::new(4));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (url, barrier) = (url.clone(), barrier.clone());
            thread::spawn(move || {
                let backend = open(&url).unwrap();
                barrier.wait();
                for _ in 0..10 {
                    let mut w = backend.begin_write().unwrap();
                    let n = w
                        .get("counter", b"n")
                        .unwrap()
                        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                    w.insert("counter", b"n", &(n + 1).to_le_bytes()).unwrap();
                    w.commit().unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let backend = open(&url).unwrap();
    let n = get(&backend, "counter", b"n").unwrap();
    assert_eq!(u64::from_le_bytes(n.try_into().unwrap()), 40);
}

#[test]
fn readers_run_side_by_side() {
    let (_, backend) = fresh();
    put(&backend, "t", b"a", b"1");
    let readers: Vec<_> = (0..4).map(|_| backend.begin_read().unwrap()).collect();
    let mut w = backend.begin_write().unwrap();
    w.insert("t", b"a", b"2").unwrap();
    for r in &readers {
        assert_eq!(r.get("t", b"a").unwrap().as_deref(), Some(&b"1"[..]));
    }
    w.commit().unwrap();
    drop(readers);
    // Up to MAX_IDLE connections stay open for the next transactions.
    assert!(backend.idle().len() <= MAX_IDLE);
    assert!(backend.idle().len() >= 4);
}

#[test]
fn a_connection_the_server_dropped_is_replaced() {
    let (db, backend) = fresh();
    put(&backend, "t", b"a", b"1");
    server().admin(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = '{db}' AND pid <> pg_backend_pid()"
    ));
    assert_eq!(get(&backend, "t", b"a").as_deref(), Some(&b"1"[..]));
    put(&backend, "t", b"b", b"2");
    assert_eq!(get(&backend, "t", b"b").as_deref(), Some(&b"2"[..]));
}

// ---- following -------------------------------------------------------------------------

#[test]
fn commits_notify_followers() {
    let (db, backend) = fresh();
    let follower = open(&server().socket_url(&db)).unwrap();
    follower.listen().unwrap();
    assert!(!follower.wait_for_change(Duration::from_millis(50)).unwrap());

    // A commit in another thread while the follower waits.
    let writer = backend.clone();
    let commit = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        put(&writer, "t", b"a", b"1");
        Instant::now()
    });
    assert!(follower.wait_for_change(Duration::from_secs(1)).unwrap());
    let committed = commit.join().unwrap();
    assert!(committed.elapsed() < Duration::from_secs(1));

    // Commits made between two waits count, several as one.
    put(&backend, "t", b"b", b"1");
    put(&backend, "t", b"c", b"1");
    thread::sleep(Duration::from_millis(50));
    assert!(follower.wait_for_change(Duration::from_secs(1)).unwrap());
    assert!(!follower.wait_for_change(Duration::from_millis(50)).unwrap());

    // Nothing changed, nothing sent: an empty commit, a rolled-back write, a read.
    backend.begin_write().unwrap().commit().unwrap();
    let mut w = backend.begin_write().unwrap();
    w.insert("t", b"d", b"1").unwrap();
    drop(w);
    let mut w = backend.begin_write().unwrap();
    assert_eq!(w.remove("t", b"absent").unwrap(), None);
    w.commit().unwrap();
    drop(backend.begin_read().unwrap());
    assert!(
        !follower
            .wait_for_change(Duration::from_millis(200))
            .unwrap()
    );
}

#[test]
fn a_lost_listener_reconnects_and_reports_a_change() {
    let (db, backend) = fresh();
    let follower = open(&server().socket_url(&db)).unwrap();
    follower.listen().unwrap();
    server().admin(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = '{db}' AND query LIKE 'LISTEN%'"
    ));
    assert!(follower.wait_for_change(Duration::from_secs(1)).unwrap());
    assert!(!follower.wait_for_change(Duration::from_millis(50)).unwrap());
    put(&backend, "t", b"a", b"1");
    assert!(follower.wait_for_change(Duration::from_secs(1)).unwrap());
}

// ---- connecting ------------------------------------------------------------------------

#[test]
fn a_password_comes_from_the_url_pgpassword_or_pgpass() {
    let db = server().create_database();
    let password = server().password();
    let backend = open(&server().tcp_url(&db, Some(password))).unwrap();
    put(&backend, "t", b"a", b"1");

    let bare = server().tcp_url(&db, None);
    let sources = PasswordSources {
        pgpassword: Some(password.to_owned()),
        ..PasswordSources::default()
    };
    let backend = PgBackend::connect_with(&bare, &sources).unwrap();
    assert_eq!(get(&backend, "t", b"a").as_deref(), Some(&b"1"[..]));

    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    let line = format!(
        "127.0.0.1:{}:{db}:{}:{password}\n",
        server().port(),
        harness::ROLE
    );
    std::fs::write(&pgpass, format!("127.0.0.1:*:other:*:wrong\n{line}")).unwrap();
    let sources = PasswordSources {
        pgpassfile: Some(pgpass.clone()),
        ..PasswordSources::default()
    };
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let backend = PgBackend::connect_with(&bare, &sources).unwrap();
    assert_eq!(get(&backend, "t", b"a").as_deref(), Some(&b"1"[..]));

    // A pgpass file others can read is ignored, as libpq ignores it.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let message = open_error(PgBackend::connect_with(&bare, &sources));
    assert!(!message.contains(password), "{message}");
}

#[test]
fn a_wrong_password_is_one_line_without_the_password() {
    let db = server().create_database();
    let url = server().tcp_url(&db, Some("Wr0ng-s3cret"));
    let message = open_error(open(&url));
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    assert!(message.contains(&format!(
        "postgresql://glassbox@127.0.0.1:{}",
        server().port()
    )));
    assert!(!message.contains("Wr0ng-s3cret"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn an_unreachable_server_is_one_line_without_the_password() {
    let port = harness::free_port().unwrap();
    let url = format!("postgresql://me:Unre4chable@127.0.0.1:{port}/db?connect_timeout=5");
    let message = open_error(open(&url));
    assert!(message.contains("refused"), "{message}");
    assert!(
        message.contains(&format!("postgresql://me@127.0.0.1:{port}/db")),
        "{message}"
    );
    assert!(!message.contains("Unre4chable"), "{message}");
    assert!(!message.contains('\n'), "{message}");

    let message = open_error(open("postgresql://me:x@127.0.0.1/db?sslmode=verify-full"));
    assert!(message.contains("sslmode"), "{message}");
}

#[test]
fn a_missing_database_is_one_line_without_the_password() {
    let url = server().tcp_url("no_such_db", Some(server().password()));
    let message = open_error(open(&url));
    assert!(
        message.contains("\"no_such_db\" does not exist"),
        "{message}"
    );
    assert!(!message.contains(server().password()), "{message}");
}

#[test]
fn sslmode_is_honoured() {
    assert!(
        server().tls(),
        "the test server has no TLS (is openssl installed?)"
    );
    let db = server().create_database();
    let url = server().tcp_url(&db, Some(server().password()));
    for (mode, tls) in [("require", true), ("prefer", true), ("disable", false)] {
        let backend = open(&format!("{url}?sslmode={mode}")).unwrap();
        let info = backend.server_info().unwrap();
        assert_eq!(info.tls, tls, "sslmode={mode}");
        put(&backend, "t", mode.as_bytes(), b"1");
    }
    // No TLS over a Unix socket, whatever the mode says (as with libpq).
    let socket = open(&format!("{}&sslmode=require", server().socket_url(&db))).unwrap();
    assert!(!socket.server_info().unwrap().tls);
    assert_eq!(socket.begin_read().unwrap().len("t").unwrap(), 3);
}

#[test]
fn server_info_names_version_and_latency() {
    let db = server().create_database();
    let backend = open(&server().tcp_url(&db, Some(server().password()))).unwrap();
    let info = backend.server_info().unwrap();
    assert!(info.version_num >= 150_000, "{info:?}");
    assert!(
        info.version
            .starts_with(&(info.version_num / 10_000).to_string()),
        "{info:?}"
    );
    assert!(info.latency < Duration::from_secs(1), "{info:?}");
    // pgvector is reported when the server has it (Debian's package puts its control file
    // beside the server's other extensions), and never needed.
    let control = format!(
        "/usr/share/postgresql/{}/extension/vector.control",
        info.version_num / 10_000
    );
    assert_eq!(
        info.pgvector.is_some(),
        std::path::Path::new(&control).exists(),
        "{info:?}"
    );
    assert!(!info.url.contains(server().password()), "{info:?}");
    assert_eq!(info.url, backend.url());
}

#[test]
fn works_from_spawn_blocking() {
    let (db, backend) = fresh();
    let url = server().socket_url(&db);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let got = runtime.block_on(async move {
        // Connecting, writing and reading on the blocking pool, with a backend made there
        // and one made outside the runtime.
        let opened = tokio::task::spawn_blocking(move || open(&url).unwrap())
            .await
            .unwrap();
        let tasks: Vec<_> = (0..4u8)
            .map(|i| {
                let backend = if i % 2 == 0 {
                    opened.clone()
                } else {
                    backend.clone()
                };
                tokio::task::spawn_blocking(move || {
                    put(&backend, "t", &[i], &[i]);
                    get(&backend, "t", &[i])
                })
            })
            .collect();
        let mut got = Vec::new();
        for task in tasks {
            got.push(task.await.unwrap());
        }
        let follower = opened.clone();
        let waited = tokio::task::spawn_blocking(move || {
            follower.wait_for_change(Duration::from_millis(10)).unwrap()
        });
        waited.await.unwrap();
        // The last clones dropped on an executor thread, where closing a connection may not
        // block.
        drop((opened, backend));
        got
    });
    assert_eq!(got, (0..4u8).map(|i| Some(vec![i])).collect::<Vec<_>>());
}

#[test]
fn a_temp_server_stops_and_is_removed_on_drop() {
    let temp = TempPostgres::start().unwrap();
    let dir = temp.socket_dir().to_path_buf();
    // The public schema is its owner's: a role that may not create there cannot open.
    let message = open_error(open(&temp.socket_url("postgres")));
    assert!(
        message.contains("cannot create the layout: permission denied"),
        "{message}"
    );
    let url = temp.socket_url(&temp.create_database());
    let backend = open(&url).unwrap();
    assert!(backend.server_info().unwrap().version_num >= 150_000);
    drop(backend);
    drop(temp);
    assert!(!dir.exists(), "{} is still there", dir.display());
    open_error(open(&url));
}

#[test]
fn a_store_on_postgres_may_be_called_from_async_code() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    called_from_async_code(&runtime);
}

#[test]
fn a_store_on_postgres_may_be_called_on_a_current_thread_runtime() {
    // As the MCP stdio server's runtime is.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    called_from_async_code(&runtime);
}

fn called_from_async_code(runtime: &tokio::runtime::Runtime) {
    use crate::store::{Session, SessionSource, Store};
    let (db, _) = fresh();
    let url = server().socket_url(&db);
    // Called straight from the thread in `block_on` (as the TUI's event loop does) and from
    // a spawned task, never through the blocking pool: each call gives its thread's work
    // away, or runs on a thread of its own, while it waits on the connection's own runtime.
    let titles = runtime.block_on(async move {
        let store = Store::open_backend(Arc::new(open(&url).unwrap()), url.clone()).unwrap();
        let seen = store.last_seq().unwrap();
        let s = Session::new("from the event loop", SessionSource::Glassbox);
        store.write(|w| w.put_session(&s)).unwrap();
        assert!(store.tells_of_changes());
        assert!(store.wait_for_change(Duration::from_secs(1)));
        assert!(!store.follow(seen, 100).unwrap().is_empty());
        let other = store.clone();
        tokio::spawn(async move {
            let s = Session::new("from a task", SessionSource::Glassbox);
            other.write(|w| w.put_session(&s)).unwrap();
            other.sessions().unwrap()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect::<Vec<_>>()
    });
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(titles.contains(&"from a task".to_string()));
}
