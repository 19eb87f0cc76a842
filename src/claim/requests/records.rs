//! The request id a caller sends and the record a store keeps under it. Apart from the
//! sealing in the parent module because every store and the audit row
//! ([`crate::claim::model::AuditEntry::request`]) carry these, and must not depend on the
//! engine-side logic that makes them.

use std::time::Duration;

use crate::claim::clock::Millis;
use crate::claim::error::ClaimError;
use crate::claim::stores::codec;

/// How long an answer is kept for retries: ten minutes, far beyond any client's retry loop
/// (the CLI's request timeout is 45 s), while bounding what the stores hold (about 300
/// bytes per write verb that carried an id).
pub const REQUEST_TTL: Duration = Duration::from_secs(600);

/// Longest accepted request id.
pub const MAX_REQUEST_ID: usize = 128;

/// A caller-chosen id for one write verb: 1 to [`MAX_REQUEST_ID`] of `[A-Za-z0-9._:-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestId(String);

impl RequestId {
    /// Validates an id given by a caller.
    pub fn parse(s: &str) -> Result<RequestId, ClaimError> {
        let ok = !s.is_empty()
            && s.len() <= MAX_REQUEST_ID
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
        if ok {
            Ok(RequestId(s.to_string()))
        } else {
            Err(ClaimError::invalid(
                "request id",
                format!("request id {s:?} must be 1 to {MAX_REQUEST_ID} of [A-Za-z0-9._:-]"),
            ))
        }
    }

    /// A fresh random id (a v4 UUID).
    pub fn generate() -> RequestId {
        RequestId(uuid::Uuid::new_v4().to_string())
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a store keeps with a verb's write: the key, the request's fingerprint and its
/// answer (JSON), until `expires_at`.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// Hex SHA-256 of (project, verb, actor, id).
    pub key: String,
    /// Hex SHA-256 of the request.
    pub fingerprint: String,
    /// The answer, as JSON text (may hold a new session token: never logged).
    pub answer: String,
    /// When the store may forget it.
    pub expires_at: Millis,
}

impl std::fmt::Debug for RequestRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestRecord").field("key", &self.key).field("expires_at", &self.expires_at).finish()
    }
}

impl RequestRecord {
    /// The record as one JSON text (fingerprint and answer), the form a key-value store keeps.
    pub fn stored_text(&self) -> Result<String, ClaimError> {
        codec::to_json(&serde_json::json!({"fingerprint": self.fingerprint, "answer": self.answer}))
    }
}

/// A kept answer as a store returns it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct KeptAnswer {
    /// The fingerprint of the request that produced it.
    pub fingerprint: String,
    /// The answer, as JSON text.
    pub answer: String,
}

impl KeptAnswer {
    /// Reads [`RequestRecord::stored_text`].
    pub fn from_stored_text(text: &str) -> Result<KeptAnswer, ClaimError> {
        codec::from_json(text)
    }
}
