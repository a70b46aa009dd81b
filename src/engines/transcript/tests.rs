#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::SystemTime;

use super::*;

#[test]
fn stable_ids_are_deterministic_and_time_ordered() {
    let t1 = DateTime::parse_from_rfc3339("2025-01-01T00:00:00.000Z")
        .unwrap()
        .with_timezone(&Utc);
    let t2 = DateTime::parse_from_rfc3339("2025-01-01T00:00:00.001Z")
        .unwrap()
        .with_timezone(&Utc);
    let a = stable_uuid(t1, 0, &[b"s", b"u"]);
    assert_eq!(a, stable_uuid(t1, 0, &[b"s", b"u"]));
    assert_ne!(a, stable_uuid(t1, 0, &[b"s", b"v"]));
    assert_ne!(
        stable_uuid(t1, 0, &[b"su"]),
        stable_uuid(t1, 0, &[b"s", b"u"])
    );
    assert!(stable_uuid(t2, 0, &[b"a"]) > stable_uuid(t1, 5, &[b"z"]));
    assert!(stable_uuid(t1, 2, &[b"a"]) > stable_uuid(t1, 1, &[b"z"]));
    assert_eq!(a.get_version_num(), 7);
}

#[test]
fn since_accepts_dates_times_and_spans() {
    assert!(parse_since("2025-03-01").is_ok());
    assert!(parse_since("2025-03-01T10:00:00Z").is_ok());
    assert!(parse_since("90d").unwrap() < SystemTime::now());
    let err = parse_since("yesterday").unwrap_err().to_string();
    assert!(err.contains("--since 'yesterday'"), "{err}");
}
