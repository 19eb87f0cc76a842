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

/// A new admin token (`writerctl coordinator admin-token new`): 256 random bits as 64
/// lowercase hex digits, the one form [`check_admin_token`] accepts. Drawn again in the
/// (about 1 in 10^12) case that a random draw looks like a typed pattern, so what this
/// makes is always accepted.
pub fn new_admin_token() -> Result<Secret, ClaimError> {
    loop {
        let token = random_secret()?;
        if check_admin_token(token.expose()).is_ok() {
            return Ok(token);
        }
    }
}

/// Fewest distinct hex digits an admin token may use (case folded). 64 random digits use
/// fewer than 10 of the 16 with probability about 1.2 * 10^-12.
pub const ADMIN_TOKEN_MIN_DISTINCT: usize = 10;
/// Most times one hex digit may appear in an admin token. In 64 random digits (4 of each
/// expected) any digit appears 25 times or more with probability under 10^-12.
pub const ADMIN_TOKEN_MAX_REPEAT: usize = 24;

/// Whether `token` (trimmed, as the server reads it) may be the coordinator's admin token:
/// Ok, or `invalid_argument` saying what is wrong without quoting it (issue 39 point 8).
///
/// Why a rule about form: the admin token is the only coordinator credential a person may
/// choose, and kept answers of identity verbs (which hold identity keys) are sealed under
/// a fast HKDF of it ([`crate::claim::requests`]). A fast KDF is only as strong as its
/// input: `serve` accepted any 32 bytes, and a store copy plus 4,117 guesses opened a
/// token of words (`correct horse battery staple 2024`) and the key it sealed. A random
/// 256-bit token makes every guess list useless, so the token must be what a generator
/// writes: exactly 64 hex digits (`coordinator admin-token new`, `openssl rand -hex 32`),
/// 256 bits. No rule can prove a string random; this one refuses every other form
/// (words, passphrases, base64, shorter or longer strings) and the hex a person types by
/// hand: fewer than [`ADMIN_TOKEN_MIN_DISTINCT`] distinct digits (`0000…`, `deadbeef…`),
/// one digit more than [`ADMIN_TOKEN_MAX_REPEAT`] times, or a block of at most 32 digits
/// repeated (`0123456789abcdef` four times). A generated token fails it with probability
/// about 10^-12, and [`new_admin_token`] draws again then.
pub fn check_admin_token(token: &str) -> Result<(), ClaimError> {
    let refuse = |why: String| Err(ClaimError::InvalidArgument(format!("the admin token {why}")));
    if !is_machine_secret(token) {
        return refuse(format!(
            "is not 64 hex digits ({} characters{}): it must be 256 random bits as a generator writes them",
            token.chars().count(),
            if token.bytes().all(|b| b.is_ascii_hexdigit()) { "" } else { ", not all hex digits" }
        ));
    }
    let digits: Vec<u8> = token.bytes().map(|b| b.to_ascii_lowercase()).collect();
    let mut counts = [0usize; 256];
    for d in &digits {
        counts[usize::from(*d)] += 1;
    }
    let distinct = counts.iter().filter(|c| **c > 0).count();
    if distinct < ADMIN_TOKEN_MIN_DISTINCT {
        return refuse(format!(
            "uses only {distinct} distinct hex digits (random ones use {ADMIN_TOKEN_MIN_DISTINCT} or more): it was \
             not made by a generator"
        ));
    }
    let most = counts.iter().copied().max().unwrap_or(0);
    if most > ADMIN_TOKEN_MAX_REPEAT {
        return refuse(format!(
            "repeats one hex digit {most} times (random ones, at most {ADMIN_TOKEN_MAX_REPEAT}): it was not made by a \
             generator"
        ));
    }
    if let Some(period) = (1..=digits.len() / 2).find(|p| digits.iter().zip(&digits[*p..]).all(|(a, b)| a == b)) {
        return refuse(format!("repeats a block of {period} hex digits: it was not made by a generator"));
    }
    Ok(())
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

    /// Issue 39 point 8: the admin token rule accepts what a generator makes (ours, and
    /// `openssl rand -hex 32`'s form in either case) and refuses words, short or long
    /// strings and hand-typed hex, saying why without quoting the token.
    #[test]
    fn admin_tokens_must_be_generated() {
        for _ in 0..2_000 {
            let t = new_admin_token().unwrap();
            assert!(is_machine_secret(t.expose()) && t.expose().bytes().all(|b| !b.is_ascii_uppercase()));
            check_admin_token(t.expose()).unwrap();
            check_admin_token(&t.expose().to_ascii_uppercase()).unwrap();
        }
        check_admin_token("46abee2df95634e1cd705469e97f9f520ed9a3a2237a925a5d7bb6694e78fdfa").unwrap();
        let refused = [
            ("correct horse battery staple 2024", "not 64 hex digits (33 characters, not all hex digits)"),
            ("0123456789abcdef0123456789abcdef", "not 64 hex digits (32 characters)"),
            (&"ab".repeat(33), "not 64 hex digits (66 characters)"),
            ("RzH4dIuC0lYgWQ0q6y3jJ8mX2p9s7kV1bN5aE4tL6oA=", "not all hex digits"),
            (&"0".repeat(64), "only 1 distinct"),
            (&"deadbeef".repeat(8), "only 5 distinct"),
            (&"0123456789".repeat(7)[..64], "repeats a block of 10"),
            (&"0123456789abcde".repeat(5)[..64], "repeats a block of 15"),
            (&format!("{}{}", "0".repeat(48), "0123456789abcdef"), "repeats one hex digit 49 times"),
            (&"0123456789abcdef".repeat(4), "repeats a block of 16"),
            (&"46abee2df95634e1cd705469e97f9f52".repeat(2), "repeats a block of 32"),
        ];
        for (token, says) in refused {
            let Err(ClaimError::InvalidArgument(m)) = check_admin_token(token) else { panic!("accepted {token:?}") };
            assert!(m.contains(says), "{token:?}: {m}");
            assert!(!m.contains(token), "the message quotes the token: {m}");
        }
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
