//! Request ids: a write verb's answer kept so that a retry acts once (issue 20: "outcomes
//! are never unknown"), and a replay that is a decision, not a lookup (issue 28 point 2).
//!
//! # Calling sequence
//!
//! A write verb may carry a [`RequestId`] (the CLI always makes one; `--request-id` lets a
//! script choose it). The engine, before acting:
//!
//! 1. `Pending::new` derives the record's key from (project, verb, actor, id) — the actor
//!    is the caller the audit row names (`session:<id>`, `seat:<identity>`,
//!    `operator:<id>`, ...), so two callers that choose the same id never meet — a
//!    fingerprint of the whole request (a SHA-256, including the digest of any token it
//!    presented), and, when the request presented a credential (a session token, an
//!    identity key, the admin token), a **seal key** derived from that credential's plaintext
//!    and the record key (`seal_key`);
//! 2. the engine asks the store for a record under `Pending::record_key` and keeps it
//!    unopened: nothing about it reaches the caller yet;
//! 3. found, the engine answers it as a *replay* ([`crate::claim::engine`]): it first checks
//!    the caller's proof against current state exactly as a fresh request would (the seat's
//!    token, the identity's key, the session), then `Pending::open`s the record — a
//!    record sealed under another credential does not open and is refused with the verb's
//!    own `unauthorized` refusal — then compares fingerprints (a mismatch, an id reused for
//!    a different request, is `invalid_argument`, told only to a caller who proved it is the
//!    same actor with the same credential), then checks that the kept answer still holds
//!    (a registration's session still carries the kept token's hash, an issued key is still
//!    the enrolled one). Only then is the kept answer returned;
//! 4. not found, the verb runs, and its successful answer rides on its audit row
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
//! # Secrets in kept answers
//!
//! A kept answer is sealed with XChaCha20-Poly1305 under the seal key, with a fresh random
//! 24-byte nonce each time, whenever the request presented a credential: the store keeps only
//! plain SHA-256 digests of credentials, so neither a copy of the store nor a guessed request
//! id opens it, and two answers under one id (two actors, or one actor after the first record
//! expired) are sealed under different keys or nonces and say nothing about each other. A
//! request that presented no credential (open registration, the embedded store's `identity
//! add`) has nothing to derive a key from: its answer is kept without the secret
//! (`Pending::can_keep_secrets`), and its replay answers `answer_not_kept` (the write was
//! applied; rotate or register again).
//!
//! Only successes are kept: a refused verb leaves nothing and its retry decides again.
//! Answers are kept for [`REQUEST_TTL`]; a retry after that acts again (and is refused if
//! its effect is already there, as without an id). Expired records are purged by every
//! store (SQLite and Postgres on write and by the retention prune, Redis by the key's TTL).

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::error::{ClaimError, StoreError};
use super::model::{AuditEntry, Millis};
use super::secret::Secret;

pub(crate) mod records;

pub use records::{KeptAnswer, MAX_REQUEST_ID, REQUEST_TTL, RequestId, RequestRecord};

fn sha256_hex(bytes: &[u8]) -> String {
    super::secret::hex(&Sha256::digest(bytes))
}

/// The AEAD key a kept answer is sealed under (never printed, never stored).
#[derive(Clone)]
struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(<redacted>)")
    }
}

/// The seal key of a record: HKDF-SHA256 (RFC 5869) with the record key as salt over the
/// plaintexts of the credentials the request presented, each length-prefixed (so two
/// credentials cannot be re-split into two others). None without a credential.
///
/// Why these inputs: the store keeps the record key and only SHA-256 digests of the
/// credentials (token hashes, key hashes), never their plaintext, so a copy of the store
/// cannot derive the key (issue 28 point 3: a keystream from the request id let anyone with a
/// store copy and a guessable id read the token); the record key binds it to one (project,
/// verb, actor, id), so one credential's records under other ids never share a key.
/// Credentials are trimmed, as [`super::secret::token_hash`] trims them. Operator passwords
/// are never used: a fast KDF of a chosen password would let a store copy guess it offline
/// past argon2. For the same reason every credential used here must be random: session
/// tokens and identity keys are 256 generated bits, and since issue 39 point 8 the admin
/// token is too ([`super::secret::check_admin_token`]; a store copy plus 4,117 guesses had
/// opened a passphrase admin token's seal). So HKDF suffices, with no secret of the
/// server's own: a record the store holds opens only with a credential it never held.
fn seal_key(record_key: &str, credentials: &[&Secret]) -> Option<SealKey> {
    if credentials.is_empty() {
        return None;
    }
    let mut ikm = Vec::new();
    for c in credentials {
        let bytes = c.expose().trim().as_bytes();
        ikm.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        ikm.extend_from_slice(bytes);
    }
    let mut key = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(Some(record_key.as_bytes()), &ikm)
        .expand(b"writerctl kept answer v1", &mut key)
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    Some(SealKey(key))
}

/// How a sealed answer starts in the store: a version tag, then hex of nonce || ciphertext.
const SEALED_PREFIX: &str = "xchacha20poly1305:";

/// `plain` sealed under `key` with a fresh random nonce; `record_key` is authenticated with
/// it, so a sealed answer moved under another record does not open.
fn seal(key: &SealKey, record_key: &str, plain: &[u8]) -> Result<String, ClaimError> {
    use chacha20poly1305::aead::{Aead, KeyInit, Payload};
    use chacha20poly1305::{XChaCha20Poly1305, XNonce};
    let mut nonce = [0u8; 24];
    super::secret::random_bytes(&mut nonce)?;
    let cipher = XChaCha20Poly1305::new(&key.0.into());
    let sealed = cipher
        .encrypt(&XNonce::from(nonce), Payload { msg: plain, aad: record_key.as_bytes() })
        .map_err(|e| StoreError::new("sealing a kept answer failed").with_source(e))?;
    Ok(format!("{SEALED_PREFIX}{}{}", super::secret::hex(&nonce), super::secret::hex(&sealed)))
}

/// [`seal`] undone; None when `key` (or the record) is not the one it was sealed with.
fn open_sealed(key: &SealKey, record_key: &str, text: &str) -> Option<Vec<u8>> {
    use chacha20poly1305::aead::{Aead, KeyInit, Payload};
    use chacha20poly1305::{XChaCha20Poly1305, XNonce};
    let bytes = unhex(text.strip_prefix(SEALED_PREFIX)?)?;
    if bytes.len() < 24 {
        return None;
    }
    let (nonce, sealed) = bytes.split_at(24);
    let nonce: [u8; 24] = nonce.try_into().ok()?;
    XChaCha20Poly1305::new(&key.0.into())
        .decrypt(&XNonce::from(nonce), Payload { msg: sealed, aad: record_key.as_bytes() })
        .ok()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| text.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// Why a kept record cannot be answered to this caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unopened {
    /// Sealed under another credential (or none was presented): the caller proved nothing
    /// about this record; answered with the verb's own `unauthorized` refusal.
    Credential,
    /// Opened, but kept for a different request: `invalid_argument`.
    Different(Box<ClaimError>),
}

/// A verb carrying a request id, before it acts.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    id: RequestId,
    verb: String,
    key: String,
    fingerprint: String,
    seal: Option<SealKey>,
}

impl Pending {
    /// The key and fingerprint of `id` for the verb `audit` describes, with `request` (every
    /// input that decides the answer, secrets as their digests), and the seal key of the
    /// `credentials` the request presented (their plaintexts; see [`seal_key`]).
    pub(crate) fn new(
        id: &RequestId,
        audit: &AuditEntry,
        request: &impl Serialize,
        credentials: &[&Secret],
    ) -> Result<Pending, ClaimError> {
        let scope = serde_json::json!([audit.project, audit.verb, audit.actor, id.as_str()]);
        let input = serde_json::to_vec(request).map_err(|e| ClaimError::store_because("request fingerprint", e))?;
        let key = sha256_hex(scope.to_string().as_bytes());
        Ok(Pending {
            id: id.clone(),
            verb: audit.verb.clone(),
            seal: seal_key(&key, credentials),
            key,
            fingerprint: sha256_hex(&input),
        })
    }

    /// Whether an answer holding a secret may be kept whole: only when it is sealed under a
    /// credential the request presented. Otherwise the verb keeps its answer without the
    /// secret and a replay answers `answer_not_kept`.
    pub(crate) fn can_keep_secrets(&self) -> bool {
        self.seal.is_some()
    }

    /// The verb and the key a store keeps this request's record under
    /// ([`crate::claim::stores::Store::recall_request`]); what comes back stays unopened
    /// until the caller proved itself (see the module's calling sequence).
    pub(crate) fn record_key(&self) -> (&str, &str) {
        (&self.verb, &self.key)
    }

    /// The answer in `kept`, for a caller that already passed the verb's proof: opened with
    /// this request's seal key (a sealed record needs the credential it was sealed under), then
    /// held against this request's fingerprint.
    pub(crate) fn open<T: DeserializeOwned>(&self, kept: &KeptAnswer) -> Result<T, Unopened> {
        let text = if kept.answer.starts_with(SEALED_PREFIX) {
            let key = self.seal.as_ref().ok_or(Unopened::Credential)?;
            let plain = open_sealed(key, &self.key, &kept.answer).ok_or(Unopened::Credential)?;
            String::from_utf8(plain).map_err(|_| Unopened::Credential)?
        } else {
            kept.answer.clone()
        };
        if kept.fingerprint != self.fingerprint {
            return Err(Unopened::Different(Box::new(ClaimError::invalid(
                "request id",
                format!(
                    "request id {} was already used for a different {} request; a retry must repeat the request \
                 exactly, a new request needs a new id",
                    self.id, self.verb
                ),
            ))));
        }
        serde_json::from_str(&text)
            .map_err(|e| Unopened::Different(Box::new(ClaimError::store_because("kept answer", e))))
    }

    /// The record to keep with the verb's write: sealed when the request presented a
    /// credential, plain JSON otherwise (then the verb must have left its secrets out).
    pub(crate) fn record(&self, answer: &impl Serialize, now: Millis) -> Result<RequestRecord, ClaimError> {
        let ttl = i64::try_from(REQUEST_TTL.as_millis()).unwrap_or(i64::MAX);
        let text = serde_json::to_string(answer).map_err(|e| ClaimError::store_because("kept answer", e))?;
        let answer = match &self.seal {
            Some(key) => seal(key, &self.key, text.as_bytes())?,
            None => text,
        };
        Ok(RequestRecord {
            key: self.key.clone(),
            fingerprint: self.fingerprint.clone(),
            answer,
            expires_at: now.saturating_add(ttl),
        })
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
            assert!(
                matches!(RequestId::parse(bad), Err(ClaimError::InvalidArgument(a)) if a.field == "request id"),
                "{bad:?}"
            );
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
            reason: None,
        }
    }

    fn kept(r: &RequestRecord) -> KeptAnswer {
        KeptAnswer { fingerprint: r.fingerprint.clone(), answer: r.answer.clone() }
    }

    /// Issue 28 point 2 (kept secrets were only masked with a keystream from the request
    /// id): the sealed record holds no trace of the token, and only the credential it was
    /// sealed under opens it; the id alone does not.
    #[test]
    fn a_sealed_answer_opens_only_with_its_credential() {
        let id = RequestId::parse("r1").unwrap();
        let cred = Secret::new("0f".repeat(32));
        let a = Pending::new(&id, &audit("p", "x"), &1, &[&cred]).unwrap();
        assert!(a.can_keep_secrets());
        let token = "46abee2df95634e1cd705469e97f9f520ed9a3a2237a925a5d7bb6694e78fdfa";
        let rec = a.record(&token, 0).unwrap();
        assert!(rec.answer.starts_with(SEALED_PREFIX) && !rec.answer.contains(&token[..16]), "{}", rec.answer);
        assert_eq!(a.open::<String>(&kept(&rec)).unwrap(), token);
        // The same id without the credential, or with another one, opens nothing.
        let none = Pending::new(&id, &audit("p", "x"), &1, &[]).unwrap();
        assert!(!none.can_keep_secrets());
        assert_eq!(none.open::<String>(&kept(&rec)), Err(Unopened::Credential));
        let other = Pending::new(&id, &audit("p", "x"), &1, &[&Secret::new("1f".repeat(32))]).unwrap();
        assert_eq!(other.open::<String>(&kept(&rec)), Err(Unopened::Credential));
        // A record moved under another key does not open either (the key is authenticated).
        let moved = Pending::new(&RequestId::parse("r2").unwrap(), &audit("p", "x"), &1, &[&cred]).unwrap();
        assert_eq!(moved.open::<String>(&kept(&rec)), Err(Unopened::Credential));
    }

    /// Issue 39 point 8, the attack on a store copy: the record key and the sealed answer
    /// are in the store, and each guess of the credential is one HKDF and one AEAD open.
    /// Under the passphrase admin token a server used to accept, a guess list opens the
    /// identity key; that token is exactly what serve now refuses. Under a generated token
    /// the answer still round-trips for the caller who presents it, and the same list
    /// (plus every refused form) opens nothing.
    #[test]
    fn a_store_copy_and_a_guess_list_open_only_an_answer_under_a_weak_token() {
        use super::super::secret::{check_admin_token, new_admin_token};
        let id = RequestId::parse("enroll-alice").unwrap();
        let input = serde_json::json!({"identity": "alice"});
        let key = "46abee2df95634e1cd705469e97f9f520ed9a3a2237a925a5d7bb6694e78fdfa";
        let mut guesses: Vec<String> = ["password", "admin", "correct horse battery staple", "hunter2"]
            .iter()
            .flat_map(|w| [w.to_string(), format!("{w} 2024"), format!("{w}2024")])
            .collect();
        guesses.extend(["0".repeat(64), "deadbeef".repeat(8), "0123456789abcdef".repeat(4)]);
        let opens = |p: &Pending, r: &RequestRecord| {
            guesses.iter().find(|g| {
                let k = seal_key(&p.key, &[&Secret::new(g.to_string())]).unwrap();
                open_sealed(&k, &p.key, &r.answer).is_some()
            })
        };
        let weak = Secret::new("correct horse battery staple 2024".into());
        let w = Pending::new(&id, &audit("p", "admin"), &input, &[&weak]).unwrap();
        let wrec = w.record(&key, 0).unwrap();
        assert_eq!(opens(&w, &wrec).map(String::as_str), Some(weak.expose()), "the attack works on a weak token");
        assert!(check_admin_token(weak.expose()).is_err(), "and serve refuses that token");
        for g in &guesses {
            assert!(check_admin_token(g).is_err(), "serve accepts the guess {g:?}");
        }
        let token = new_admin_token().unwrap();
        let a = Pending::new(&id, &audit("p", "admin"), &input, &[&token]).unwrap();
        let rec = a.record(&key, 0).unwrap();
        assert_eq!(opens(&a, &rec), None);
        let replay = Pending::new(&id, &audit("p", "admin"), &input, &[&token]).unwrap();
        assert_eq!(replay.open::<String>(&kept(&rec)).unwrap(), key, "the caller with the token gets the key back");
    }

    /// Issue 28 point 2 ("two answers under one id leak each other"): every seal draws a
    /// fresh nonce, so two answers under one key and credential share no keystream.
    #[test]
    fn two_seals_under_one_key_share_nothing() {
        let id = RequestId::parse("r1").unwrap();
        let cred = Secret::new("0f".repeat(32));
        let a = Pending::new(&id, &audit("p", "x"), &1, &[&cred]).unwrap();
        let (x, y) = ("a".repeat(64), "b".repeat(64));
        let (rx, ry) = (a.record(&x, 0).unwrap(), a.record(&y, 0).unwrap());
        let nonce = |r: &RequestRecord| r.answer[SEALED_PREFIX.len()..SEALED_PREFIX.len() + 48].to_string();
        assert_ne!(nonce(&rx), nonce(&ry));
        // XOR of the two ciphertexts is not the XOR of the two plaintexts (no shared pad).
        let body = |r: &RequestRecord| unhex(&r.answer[SEALED_PREFIX.len() + 48..]).unwrap();
        let (bx, by) = (body(&rx), body(&ry));
        let xor: Vec<u8> = bx.iter().zip(&by).map(|(p, q)| p ^ q).collect();
        let plain_xor: Vec<u8> =
            b"\"".iter().chain(x.as_bytes()).zip(b"\"".iter().chain(y.as_bytes())).map(|(p, q)| p ^ q).collect();
        assert_ne!(xor[..plain_xor.len()], plain_xor[..]);
    }

    /// Issue 28 point 5 (existence oracle): a different request is told only to a caller
    /// whose credential opened the record.
    #[test]
    fn a_different_request_is_told_only_after_the_credential_opened_the_record() {
        let id = RequestId::parse("r1").unwrap();
        let cred = Secret::new("0f".repeat(32));
        let a = Pending::new(&id, &audit("p", "x"), &1, &[&cred]).unwrap();
        let rec = a.record(&"answer", 0).unwrap();
        let same_cred_other_request = Pending::new(&id, &audit("p", "x"), &2, &[&cred]).unwrap();
        assert!(matches!(
            same_cred_other_request.open::<String>(&kept(&rec)),
            Err(Unopened::Different(e)) if matches!(*e, ClaimError::InvalidArgument(_))
        ));
        let stranger = Pending::new(&id, &audit("p", "x"), &2, &[&Secret::new("2f".repeat(32))]).unwrap();
        assert_eq!(stranger.open::<String>(&kept(&rec)), Err(Unopened::Credential));
    }

    #[test]
    fn one_id_from_two_callers_or_projects_never_shares_a_key() {
        let id = RequestId::parse("job-1").unwrap();
        let a = Pending::new(&id, &audit("p", "seat:alice"), &1, &[]).unwrap();
        let b = Pending::new(&id, &audit("p", "seat:bob"), &1, &[]).unwrap();
        let c = Pending::new(&id, &audit("q", "seat:alice"), &1, &[]).unwrap();
        assert_ne!(a.key, b.key);
        assert_ne!(a.key, c.key);
        let again = Pending::new(&id, &audit("p", "seat:alice"), &2, &[]).unwrap();
        assert_eq!(a.key, again.key);
        assert_ne!(a.fingerprint, again.fingerprint, "a different request has a different fingerprint");
    }
}
