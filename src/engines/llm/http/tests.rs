#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};

use super::retry::{KeyRing, backoff, retry_after};
use super::*;

#[test]
fn api_key_debug_is_redacted() {
    let k = ApiKey::new("  sk-very-secret-123\n");
    assert_eq!(k.expose(), "sk-very-secret-123");
    let shown = format!(
        "{k:?} {:?}",
        HttpSettings {
            keys: vec![k.clone()],
            ..HttpSettings::default()
        }
    );
    assert!(!shown.contains("sk-very-secret-123"), "{shown}");
    assert!(shown.contains("redacted"));
    let s = HttpSettings {
        extra_headers: vec![("x-proxy-auth".into(), "proxy-secret-999".into())],
        ..HttpSettings::default()
    };
    let shown = format!("{s:?}");
    assert!(
        shown.contains("x-proxy-auth") && !shown.contains("proxy-secret-999"),
        "{shown}"
    );
}

#[test]
fn keys_from_lookup_reads_prefix_and_numbered_vars() {
    let vars = [
        ("ANTHROPIC_API_KEY", "k0"),
        ("ANTHROPIC_API_KEY_1", "k1"),
        ("ANTHROPIC_API_KEY_3", " k3 "),
        ("ANTHROPIC_API_KEY_4", ""),
        ("ANTHROPIC_API_KEY_5", "k1"),
        ("OPENAI_API_KEY", "other"),
    ];
    let lookup = |n: &str| {
        vars.iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.to_string())
    };
    let keys = keys_from_lookup("ANTHROPIC_API_KEY", lookup);
    let got: Vec<&str> = keys.iter().map(ApiKey::expose).collect();
    assert_eq!(got, vec!["k0", "k1", "k3"]);
    assert!(keys_from_lookup("NOPE", lookup).is_empty());
}

#[test]
fn keyring_rotates_and_cools_down() {
    let ring = KeyRing::new(vec![
        ApiKey::new("aaaa1"),
        ApiKey::new("bbbb2"),
        ApiKey::new("cccc3"),
    ]);
    assert_eq!(ring.pick(), Some(0));
    assert_eq!(ring.pick(), Some(1));
    ring.cool(2, Duration::from_secs(60));
    assert_eq!(ring.pick(), Some(0)); // 2 is cooling, next ready after it
    ring.cool(0, Duration::from_secs(30));
    ring.cool(1, Duration::from_secs(90));
    assert!(!ring.any_ready());
    assert_eq!(ring.pick(), Some(0)); // all cooling: the one free soonest
    assert_eq!(
        ring.redact("key aaaa1 and bbbb2!"),
        "key [redacted] and [redacted]!"
    );
}

#[test]
fn retry_after_parsing() {
    let mut h = HeaderMap::new();
    assert_eq!(retry_after(&h), None);
    h.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after-ms", HeaderValue::from_static("150"));
    assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
    let mut h = HeaderMap::new();
    h.insert(
        "retry-after",
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(retry_after(&h), None);
}

#[test]
fn backoff_grows_and_is_capped() {
    let s = HttpSettings {
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_millis(1000),
        ..HttpSettings::default()
    };
    for _ in 0..50 {
        let d0 = backoff(&s, 0);
        assert!(
            d0 >= Duration::from_millis(50) && d0 <= Duration::from_millis(100),
            "{d0:?}"
        );
        let d3 = backoff(&s, 3);
        assert!(
            d3 >= Duration::from_millis(400) && d3 <= Duration::from_millis(800),
            "{d3:?}"
        );
        assert!(backoff(&s, 30) <= Duration::from_millis(1000));
    }
}
