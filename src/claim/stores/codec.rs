//! How every store writes a record: JSON text and clamped integers. A leaf, so the records
//! a store keeps ([`crate::claim::requests::RequestRecord`]) can encode themselves without
//! depending on the [`super::Store`] trait that stores them.

use crate::claim::error::ClaimError;

/// JSON that a store wrote and cannot read back: the store is damaged, not the caller.
pub(crate) fn json_err(e: serde_json::Error) -> ClaimError {
    ClaimError::store_because("stored JSON", e)
}

/// A record as the JSON text a store keeps.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String, ClaimError> {
    serde_json::to_string(v).map_err(json_err)
}

/// A record from the JSON text a store kept.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ClaimError> {
    serde_json::from_str(text).map_err(json_err)
}

/// A u64 (version, epoch, cursor) as a database integer, clamped (never reached in practice).
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
