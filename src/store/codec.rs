//! Value encoding: one format byte, then the body. Format 1 is JSON, which keeps unknown
//! fields readable by older code and lets migrations rewrite records field by field.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::StoreError;

/// The format byte of JSON-encoded values.
pub const FORMAT_JSON: u8 = 1;

pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let mut out = vec![FORMAT_JSON];
    serde_json::to_writer(&mut out, value).map_err(|e| StoreError::Encode(e.to_string()))?;
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&FORMAT_JSON, body)) => serde_json::from_slice(body)
            .map_err(|e| StoreError::Corrupt(format!("{table}: undecodable value: {e}"))),
        Some((other, _)) => Err(StoreError::Corrupt(format!(
            "{table}: unknown value format byte {other}"
        ))),
        None => Err(StoreError::Corrupt(format!("{table}: empty value"))),
    }
}
