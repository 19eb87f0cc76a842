//! Request ids: a write verb's answer kept so that a retry acts once (issue 20: "outcomes
//! are never unknown").
//!
//! # Calling sequence
//!
//! A write verb may carry a [`RequestId`] (the CLI always makes one; `--request-id` lets a
//! script choose it). The engine, before acting:
//!
//! 1. [`Pending::new`] derives the record's key from (project, verb, actor, id) — the actor
//!    is the caller the audit row names (`session:<id>`, `seat:<identity>`,
//!    `operator:<id>`, ...), so two callers that choose the same id never meet — and a
//!    fingerprint of the whole request (a SHA-256, including the digest of any token it
//!    presented);
//! 2. [`Pending::recall`] asks the store for an answer kept under that key: found with the
//!    same fingerprint, it is returned as the verb's answer without acting again; found
//!    with another fingerprint, the verb is refused (`invalid_argument`: an id reused for a
//!    different request, never answered with someone else's result);
//! 3. otherwise the verb runs, and its successful answer rides on its audit row
//!    ([`AuditEntry::request`]) into the store, which keeps it **in the same atomic step as
//!    the verb's own write** (SQLite: the same transaction; Redis: the same Lua script;
//!    Postgres, for `operator add` over Redis + Postgres: the same transaction). A write and
//!    its kept answer exist together or not at all, so a reply lost after the commit (a
//!    dropped connection, a killed server) can always be recovered by retrying with the id.
//!
//! Two attempts with one id racing each other: the store refuses the second record (the key
//! exists), so the second write is not applied and answers `coordinator_unavailable`; its
//! retry finds the first one's answer.
//!
//! Only successes are kept: a refused verb leaves nothing and its retry decides again.
//! Answers are kept for [`REQUEST_TTL`]; a retry after that acts again (and is refused if
//! its effect is already there, as without an id). A kept `session register` answer holds
//! the new session token: it lives in the authoritative plane for that window, readable
//! only by a request with the same fingerprint.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::error::ClaimError;
use super::model::{AuditEntry, Millis};
use super::store::Store;

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
            Err(ClaimError::InvalidArgument(format!(
                "request id {s:?} must be 1 to {MAX_REQUEST_ID} of [A-Za-z0-9._:-]"
            )))
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
        super::store::to_json(&serde_json::json!({"fingerprint": self.fingerprint, "answer": self.answer}))
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
        super::store::from_json(text)
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    super::secret::hex(&Sha256::digest(bytes))
}

/// A verb carrying a request id, before it acts.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    id: RequestId,
    verb: String,
    key: String,
    fingerprint: String,
}

impl Pending {
    /// The key and fingerprint of `id` for the verb `audit` describes, with `request` (every
    /// input that decides the answer, secrets as their digests).
    pub(crate) fn new(id: &RequestId, audit: &AuditEntry, request: &impl Serialize) -> Result<Pending, ClaimError> {
        let scope = serde_json::json!([audit.project, audit.verb, audit.actor, id.as_str()]);
        let input = serde_json::to_vec(request).map_err(|e| ClaimError::Store(format!("request fingerprint: {e}")))?;
        Ok(Pending {
            id: id.clone(),
            verb: audit.verb.clone(),
            key: sha256_hex(scope.to_string().as_bytes()),
            fingerprint: sha256_hex(&input),
        })
    }

    /// The answer kept for this request, if any; refuses an id kept for another request.
    pub(crate) fn recall<T: DeserializeOwned>(&self, store: &dyn Store, now: Millis) -> Result<Option<T>, ClaimError> {
        let Some(kept) = store.recall_request(&self.verb, &self.key, now)? else { return Ok(None) };
        if kept.fingerprint != self.fingerprint {
            return Err(ClaimError::InvalidArgument(format!(
                "request id {} was already used for a different {} request; a retry must repeat the request \
                 exactly, a new request needs a new id",
                self.id, self.verb
            )));
        }
        serde_json::from_str(&kept.answer).map(Some).map_err(|e| ClaimError::Store(format!("kept answer: {e}")))
    }

    /// The record to keep with the verb's write.
    pub(crate) fn record(&self, answer: &impl Serialize, now: Millis) -> Result<RequestRecord, ClaimError> {
        let ttl = i64::try_from(REQUEST_TTL.as_millis()).unwrap_or(i64::MAX);
        Ok(RequestRecord {
            key: self.key.clone(),
            fingerprint: self.fingerprint.clone(),
            answer: serde_json::to_string(answer).map_err(|e| ClaimError::Store(format!("kept answer: {e}")))?,
            expires_at: now.saturating_add(ttl),
        })
    }
}

/// `bytes` XOR a keystream drawn from the request id (SHA-512 of a domain tag, the id and a
/// block counter): the same call masks and unmasks.
fn xor_with_id(id: &RequestId, bytes: &[u8]) -> Vec<u8> {
    use sha2::Sha512;
    bytes
        .chunks(64)
        .enumerate()
        .flat_map(|(block, chunk)| {
            let mut h = Sha512::new();
            h.update(b"writerctl kept secret\0");
            h.update(id.as_str().as_bytes());
            h.update((block as u64).to_be_bytes());
            let pad = h.finalize();
            chunk.iter().zip(pad.iter()).map(|(b, p)| b ^ p).collect::<Vec<u8>>()
        })
        .collect()
}

impl Pending {
    /// A secret (a new session token) as a kept answer may hold it: masked with a keystream
    /// only the request id gives. The store never sees the id (its key is a digest), so a
    /// reader of the store cannot recover the token without guessing the id: the CLI's
    /// default ids are random UUIDs; a script that registers should choose ids as hard to
    /// guess. The store keeps no token in clear (issue 6).
    pub(crate) fn seal(&self, secret: &str) -> String {
        super::secret::hex(&xor_with_id(&self.id, secret.as_bytes()))
    }

    /// [`Pending::seal`] undone.
    pub(crate) fn unseal(&self, sealed: &str) -> Result<String, ClaimError> {
        let bad = || ClaimError::Store("kept answer: a sealed secret is not hex".into());
        let bytes = (0..sealed.len())
            .step_by(2)
            .map(|i| sealed.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()).ok_or_else(bad))
            .collect::<Result<Vec<u8>, _>>()?;
        String::from_utf8(xor_with_id(&self.id, &bytes)).map_err(|_| bad())
    }
}

/// The error a store returns when another attempt with the same request id wrote first
/// (its record exists): nothing was written by this one.
pub(crate) fn in_flight() -> ClaimError {
    ClaimError::Unavailable(
        "another attempt with this request id was applied first; retry with the same id to get its answer".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_validated() {
        for ok in ["a", "job-1.retry_2:x", &"x".repeat(MAX_REQUEST_ID)] {
            assert!(RequestId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "sp ace", "slash/", "é", &"x".repeat(MAX_REQUEST_ID + 1)] {
            assert!(matches!(RequestId::parse(bad), Err(ClaimError::InvalidArgument(_))), "{bad:?}");
        }
        assert_ne!(RequestId::generate(), RequestId::generate());
    }

    fn audit(project: &str, actor: &str) -> AuditEntry {
        AuditEntry {
            at: 0,
            project: project.into(),
            verb: "claim.take".into(),
            actor: actor.into(),
            target: None,
            result: "ok".into(),
            epoch: None,
            detail: serde_json::json!({}),
            request: None,
        }
    }

    #[test]
    fn a_sealed_secret_needs_its_request_id() {
        let a = Pending::new(&RequestId::parse("r1").unwrap(), &audit("p", "x"), &1).unwrap();
        let b = Pending::new(&RequestId::parse("r2").unwrap(), &audit("p", "x"), &1).unwrap();
        let token = "46abee2df95634e1cd705469e97f9f520ed9a3a2237a925a5d7bb6694e78fdfa-and-more-than-64";
        let sealed = a.seal(token);
        assert!(!sealed.contains(token) && !sealed.contains(&token[..16]));
        assert_eq!(a.unseal(&sealed).unwrap(), token);
        assert_ne!(b.unseal(&sealed).ok().as_deref(), Some(token));
    }

    #[test]
    fn one_id_from_two_callers_or_projects_never_shares_a_key() {
        let id = RequestId::parse("job-1").unwrap();
        let a = Pending::new(&id, &audit("p", "seat:alice"), &1).unwrap();
        let b = Pending::new(&id, &audit("p", "seat:bob"), &1).unwrap();
        let c = Pending::new(&id, &audit("q", "seat:alice"), &1).unwrap();
        assert_ne!(a.key, b.key);
        assert_ne!(a.key, c.key);
        let again = Pending::new(&id, &audit("p", "seat:alice"), &2).unwrap();
        assert_eq!(a.key, again.key);
        assert_ne!(a.fingerprint, again.fingerprint, "a different request has a different fingerprint");
    }
}
