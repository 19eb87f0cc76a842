//! Secrets: session tokens (random, stored as SHA-256) and operator passwords (argon2id).
//!
//! Tokens are 256 random bits, so one SHA-256 is enough to make a stolen store useless for
//! impersonation; passwords are chosen by people, so they get a memory-hard hash and an
//! exponential delay per operator after failed attempts.

use std::time::Duration;

use argon2::password_hash::{PasswordHasher, PasswordVerifier, phc::PasswordHash};
use sha2::{Digest, Sha256};

use super::error::ClaimError;

/// A secret that never prints itself (Debug shows a placeholder).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret read from a file, stdin, the environment or a prompt.
    pub fn new(s: String) -> Secret {
        Secret(s)
    }

    /// The secret itself; call only where it is written to its one destination.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Fills `buf` from the kernel's CSPRNG.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<(), ClaimError> {
    let mut filled = 0;
    while filled < buf.len() {
        filled += rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty())
            .map_err(|e| ClaimError::Store(format!("getrandom: {e}")))?;
    }
    Ok(())
}

/// Lowercase hex (token digests, request keys and fingerprints).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 256 random bits as 64 lowercase hex digits.
fn random_secret() -> Result<Secret, ClaimError> {
    let mut b = [0u8; 32];
    random_bytes(&mut b)?;
    Ok(Secret(hex(&b)))
}

/// Whether `t` has the shape `random_secret` makes (64 hex digits): how a command tells a
/// session token or identity key file from a file that holds something else, without
/// sending it (issue 29).
pub fn is_machine_secret(t: &str) -> bool {
    t.len() == 64 && t.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A new session token (a bearer secret; the store keeps its [`token_hash`]).
pub fn new_session_token() -> Result<Secret, ClaimError> {
    random_secret()
}

/// A new identity key (`identity add`, `identity rotate`). Machine-made with 256 bits, so
/// one SHA-256 at rest suffices, as for session tokens.
pub fn new_identity_key() -> Result<Secret, ClaimError> {
    random_secret()
}

/// A new session id (a random v4 UUID; not a secret).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// What the store keeps of a session token.
pub fn token_hash(token: &Secret) -> String {
    hex(&Sha256::digest(token.expose().trim().as_bytes()))
}

/// Compares two token hashes without an early exit.
pub fn token_hash_matches(stored: &str, presented: &str) -> bool {
    stored.len() == presented.len() && stored.bytes().zip(presented.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Hashes an operator password with argon2id (OWASP parameters: 19 MiB, 2 passes, 1 lane)
/// and a random salt; returns the PHC string.
pub fn hash_password(password: &Secret) -> Result<String, ClaimError> {
    if password.expose().is_empty() {
        return Err(ClaimError::InvalidArgument("the password is empty".into()));
    }
    argon2::Argon2::default()
        .hash_password(password.expose().as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| ClaimError::Store(format!("argon2: {e}")))
}

/// Whether `password` matches the PHC string `stored` (its own parameters are used).
pub fn verify_password(stored: &str, password: &Secret) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => argon2::Argon2::default().verify_password(password.expose().as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// A PHC string no password matches, verified against for unknown operator ids so that an
/// unknown id costs as much time as a wrong password (no user enumeration by timing).
pub const DECOY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Vb8kCGb0c0DNgvN3cEYGGzuJ0a6vNdsqpp5RUdmFYbE";

/// How long without a failure forgives one failure of an operator id's count (the count a
/// wrong password's held-back answer is computed from): strangers who stop guessing leave
/// no lasting back-off behind.
pub const FAILURE_DECAY_MS: i64 = 60_000;

/// How long the refusal of a wrong password is held back when the operator id's (decayed)
/// failure count, this failure included, is `failures`: 250 ms doubling per failure, capped
/// at 60 s (0 for no failure).
pub fn failure_delay(failures: u32) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let ms = 250u64.saturating_mul(1u64 << (failures - 1).min(20));
    Duration::from_millis(ms.min(60_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = new_session_token().unwrap();
        let b = new_session_token().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 64);
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), a.expose());
        assert!(token_hash_matches(&token_hash(&a), &token_hash(&a)));
        assert!(!token_hash_matches(&token_hash(&a), &token_hash(&b)));
        assert!(!format!("{a:?}").contains(a.expose()));
    }

    #[test]
    fn passwords_round_trip_and_decoy_never_matches() {
        let pw = Secret::new("correct horse".into());
        let h = hash_password(&pw).unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(!h.contains("correct horse"));
        assert!(verify_password(&h, &pw));
        assert!(!verify_password(&h, &Secret::new("correct horse ".into())));
        assert!(!verify_password(DECOY_HASH, &pw));
        assert!(PasswordHash::new(DECOY_HASH).is_ok(), "the decoy must parse, or unknown ids would be cheaper");
        assert!(hash_password(&Secret::new(String::new())).is_err());
    }

    #[test]
    fn delay_doubles_and_caps() {
        let d: Vec<u64> = (0..6).map(|f| failure_delay(f).as_millis() as u64).collect();
        assert_eq!(d, [0, 250, 500, 1000, 2000, 4000]);
        assert_eq!(failure_delay(40), Duration::from_secs(60));
    }
}
