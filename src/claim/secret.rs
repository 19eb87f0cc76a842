//! Secrets: session tokens (random, stored as SHA-256) and operator passwords (argon2id).
//!
//! Tokens are 256 random bits, so one SHA-256 is enough to make a stolen store useless for
//! impersonation; passwords are chosen by people, so they get a memory-hard hash and an
//! exponential delay per operator after failed attempts.

use std::time::Duration;

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
            .map_err(|e| ClaimError::store_because("getrandom", e))?;
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
    let refuse = |why: String| Err(ClaimError::invalid("admin token", format!("the admin token {why}")));
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

// ---------------------------------------------------------------------------------------
// operator passwords: argon2id into memory the caller owns (issue 39 point 1)
// ---------------------------------------------------------------------------------------
//
// Why the memory is the caller's: argon2 fills 19 MiB per computation. Allocated per call
// (the crate's own `hash_password`/`verify_password`), each 19 MiB block was freed into the
// allocator of the blocking-pool thread that ran it; glibc keeps such blocks in per-thread
// arenas (its mmap threshold rises to 19 MiB after the first free), so 20 wrong-password
// `master claim` requests took a server from 13 to 357 MiB, and it stayed near 491 MiB
// idle. Now one function ([`verify_password_in`]) computes into a `&mut [Block]`: the
// server's argon2 permits own one buffer each, allocated once at start
// (`coordinator::budget::Argon2Budget`), and lend it to the thread that runs the verb
// ([`lend_hashing_memory`]); a process with nothing lent (the CLI on the embedded store:
// one computation per process) allocates one buffer for the call.

/// argon2id memory cost of the hashes we make, in KiB (OWASP: 19 MiB).
pub const HASH_M_COST: u32 = 19 * 1024;
/// argon2id passes of the hashes we make.
pub const HASH_T_COST: u32 = 2;
/// argon2id lanes of the hashes we make.
pub const HASH_P_COST: u32 = 1;
/// Most passes a stored hash may ask for: a verification holds its permit for its whole
/// time, so a hash with more passes (only a hand-edited store can hold one) is refused
/// rather than allowed to hold a permit for minutes.
pub const MAX_T_COST: u32 = 8;
/// Bytes of one [`HashingMemory`]: what one argon2 computation at our parameters fills.
pub const HASHING_MEMORY_BYTES: u64 = HASH_M_COST as u64 * argon2::Block::SIZE as u64;

/// The parameters of the hashes we make (and of [`DECOY_HASH`]).
fn our_params() -> argon2::Params {
    argon2::Params::new(HASH_M_COST, HASH_T_COST, HASH_P_COST, Some(argon2::Params::DEFAULT_OUTPUT_LEN))
        .expect("constant parameters are valid")
}

/// Memory for one argon2 computation at our parameters ([`HASHING_MEMORY_BYTES`]), written
/// once when made (so it is resident from then on, not first touched under load), reused by
/// every computation it is lent to.
pub struct HashingMemory(Box<[argon2::Block]>);

impl HashingMemory {
    /// Allocates (and writes) the blocks of one computation.
    pub fn new() -> HashingMemory {
        HashingMemory(vec![argon2::Block::new(); our_params().block_count()].into_boxed_slice())
    }
}

impl Default for HashingMemory {
    /// No blocks (what a lent buffer leaves behind while it is lent; allocates nothing).
    fn default() -> HashingMemory {
        HashingMemory(Box::default())
    }
}

impl std::fmt::Debug for HashingMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HashingMemory({} blocks)", self.0.len())
    }
}

thread_local! {
    /// The memory lent to this thread for the call running in [`lend_hashing_memory`].
    static LENT: std::cell::Cell<Option<HashingMemory>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with `memory` lent to the calling thread: every [`verify_password`] and
/// [`hash_password`] inside `f` (the engine's, several calls deep) computes into it instead
/// of allocating. The memory is given back when `f` returns or panics. Lending is how the
/// server's argon2 permit reaches the engine without a buffer in every verb's signature.
pub fn lend_hashing_memory<R>(memory: &mut HashingMemory, f: impl FnOnce() -> R) -> R {
    struct GiveBack<'a> {
        to: &'a mut HashingMemory,
        previous: Option<HashingMemory>,
    }
    impl Drop for GiveBack<'_> {
        fn drop(&mut self) {
            if let Some(m) = LENT.take() {
                *self.to = m;
            }
            LENT.set(self.previous.take());
        }
    }
    let previous = LENT.replace(Some(std::mem::take(memory)));
    let _back = GiveBack { to: memory, previous };
    f()
}

/// Runs `f` on the memory lent to this thread, or on one allocated for this call when none
/// is lent (the in-process path). Lent memory is put back even if `f` panics.
fn with_hashing_memory<R>(f: impl FnOnce(&mut [argon2::Block]) -> R) -> R {
    struct PutBack(Option<HashingMemory>);
    impl Drop for PutBack {
        fn drop(&mut self) {
            if let Some(m) = self.0.take() {
                LENT.set(Some(m));
            }
        }
    }
    match LENT.take() {
        Some(lent) => {
            let mut back = PutBack(Some(lent));
            f(&mut back.0.as_mut().expect("just put").0)
        }
        None => f(&mut HashingMemory::new().0),
    }
}

/// Hashes an operator password with argon2id (OWASP parameters: 19 MiB, 2 passes, 1 lane)
/// and a random salt, into the memory lent to this thread (or a buffer of its own); returns
/// the PHC string.
pub fn hash_password(password: &Secret) -> Result<String, ClaimError> {
    use argon2::password_hash::phc::{Output, ParamsString, Salt};
    if password.expose().is_empty() {
        return Err(ClaimError::invalid("password", "the password is empty"));
    }
    let params = our_params();
    let mut salt = [0u8; argon2::RECOMMENDED_SALT_LEN];
    random_bytes(&mut salt)?;
    let mut out = [0u8; argon2::Params::DEFAULT_OUTPUT_LEN];
    let argon2 = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params.clone());
    with_hashing_memory(|memory| {
        argon2.hash_password_into_with_memory(password.expose().as_bytes(), &salt, &mut out, memory)
    })
    .map_err(|e| ClaimError::store_because("argon2", e))?;
    let phc = argon2::PasswordHash {
        algorithm: argon2::ARGON2ID_IDENT,
        version: Some(argon2::Version::V0x13.into()),
        params: ParamsString::try_from(&params).map_err(|e| ClaimError::store_because("argon2", e))?,
        salt: Some(Salt::new(&salt).map_err(|e| ClaimError::store_because("argon2", e))?),
        hash: Some(Output::new(&out).map_err(|e| ClaimError::store_because("argon2", e))?),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `stored`, computed into the memory lent to
/// this thread (or a buffer of its own, see [`verify_password_in`]).
pub fn verify_password(stored: &str, password: &Secret) -> bool {
    with_hashing_memory(|memory| verify_password_in(stored, password, memory))
}

/// Whether `password` matches the PHC string `stored`, computed into `memory`: the one
/// verification, whoever owns the memory.
///
/// Fails closed (false, the same answer as a wrong password) for a hash it will not
/// compute: not argon2id version 19; no salt or output; parameters the crate refuses; more
/// blocks than `memory` holds (a stored hash with a larger m_cost is refused, never given
/// more memory: the server's hashing memory is fixed at start, issue 39 point 1); more than
/// [`MAX_T_COST`] passes. Every hash writerctl makes (and [`DECOY_HASH`]) is
/// m=19456,t=2,p=1, which [`HashingMemory`] holds. The outputs are compared in constant time.
pub fn verify_password_in(stored: &str, password: &Secret, memory: &mut [argon2::Block]) -> bool {
    use argon2::password_hash::phc::Output;
    let Ok(parsed) = argon2::PasswordHash::new(stored) else { return false };
    if parsed.algorithm != argon2::ARGON2ID_IDENT || parsed.version != Some(argon2::Version::V0x13.into()) {
        return false;
    }
    let (Some(salt), Some(expected)) = (&parsed.salt, &parsed.hash) else { return false };
    let Ok(params) = argon2::Params::try_from(&parsed) else { return false };
    if params.block_count() > memory.len() || params.t_cost() > MAX_T_COST {
        return false;
    }
    let mut out = [0u8; Output::MAX_LENGTH];
    let Some(out) = out.get_mut(..expected.len()) else { return false };
    let argon2 = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
    if argon2.hash_password_into_with_memory(password.expose().as_bytes(), salt.as_ref(), out, memory).is_err() {
        return false;
    }
    // Output's equality is constant-time (the crate's `CtEq`).
    Output::new(out).is_ok_and(|computed| computed == *expected)
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
            let Err(ClaimError::InvalidArgument(a)) = check_admin_token(token) else { panic!("accepted {token:?}") };
            let m = a.message;
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
        assert!(argon2::PasswordHash::new(DECOY_HASH).is_ok(), "the decoy must parse, or unknown ids would be cheaper");
        assert!(hash_password(&Secret::new(String::new())).is_err());
        // What we make is a standard PHC string: the crate's own verifier agrees.
        use argon2::PasswordVerifier;
        let parsed = argon2::PasswordHash::new(&h).unwrap();
        assert!(argon2::Argon2::default().verify_password(b"correct horse", &parsed).is_ok());
    }

    /// A genuine PHC string for `password` at (m, t), made by the crate's allocating hasher.
    fn crate_hash(password: &str, m_cost: u32, t_cost: u32) -> String {
        use argon2::password_hash::CustomizedPasswordHasher;
        let params = argon2::Params::new(m_cost, t_cost, 1, None).unwrap();
        argon2::Argon2::default()
            .hash_password_customized(password.as_bytes(), b"saltsaltsaltsalt", None, None, params)
            .unwrap()
            .to_string()
    }

    /// Issue 39 point 1: the verification computes into the caller's memory, and refuses
    /// (never allocates for) a stored hash that needs more than that memory or more passes
    /// than [`MAX_T_COST`].
    #[test]
    fn verification_into_caller_memory_refuses_what_it_cannot_hold() {
        let pw = Secret::new("hunter42".into());
        let mut memory = HashingMemory::new();
        assert_eq!(memory.0.len() as u64 * argon2::Block::SIZE as u64, HASHING_MEMORY_BYTES);
        let ours = hash_password(&pw).unwrap();
        assert!(verify_password_in(&ours, &pw, &mut memory.0));
        assert!(!verify_password_in(&ours, &Secret::new("hunter43".into()), &mut memory.0));
        assert!(!verify_password_in(DECOY_HASH, &pw, &mut memory.0));
        // The decoy costs what a real hash costs: our parameters exactly.
        assert!(DECOY_HASH.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        // One block-set more than the buffer: a correct password is refused, not given
        // more memory (the crate's allocating verifier would accept it).
        let bigger = crate_hash("hunter42", HASH_M_COST + 8, 1);
        let genuine = argon2::PasswordHash::new(&bigger).unwrap();
        use argon2::PasswordVerifier;
        assert!(argon2::Argon2::default().verify_password(b"hunter42", &genuine).is_ok());
        assert!(!verify_password_in(&bigger, &pw, &mut memory.0), "a larger m_cost is refused");
        // Smaller hashes fit the buffer; passes are bounded.
        assert!(verify_password_in(&crate_hash("hunter42", 64, MAX_T_COST), &pw, &mut memory.0));
        assert!(!verify_password_in(&crate_hash("hunter42", 64, MAX_T_COST + 1), &pw, &mut memory.0));
        // Another argon2 variant, a hash without output, garbage: refused.
        let argon2i = ours.replacen("$argon2id$", "$argon2i$", 1);
        assert!(!verify_password_in(&argon2i, &pw, &mut memory.0));
        let no_output = ours.rsplit_once('$').unwrap().0.to_string();
        assert!(!verify_password_in(&no_output, &pw, &mut memory.0));
        assert!(!verify_password_in("not a hash", &pw, &mut memory.0));
        assert!(!verify_password_in(&ours, &pw, &mut []), "no memory, no verification");
    }

    /// Issue 39 point 1: inside [`lend_hashing_memory`], the engine's calls
    /// ([`verify_password`], [`hash_password`]) compute into the lent memory, which comes
    /// back whole afterwards.
    #[test]
    fn lent_memory_is_used_and_given_back() {
        let pw = Secret::new("hunter42".into());
        let ours = hash_password(&pw).unwrap();
        // A lent buffer too small for our hashes proves the lent one is used.
        let mut small = HashingMemory(vec![argon2::Block::new(); 64].into_boxed_slice());
        let inside = lend_hashing_memory(&mut small, || verify_password(&ours, &pw));
        assert!(!inside, "verified in the lent 64 blocks: refused");
        assert_eq!(small.0.len(), 64, "given back");
        assert!(verify_password(&ours, &pw), "nothing lent any more: a buffer of its own");
        let mut memory = HashingMemory::new();
        let made = lend_hashing_memory(&mut memory, || {
            let h = hash_password(&pw).unwrap();
            (verify_password(&h, &pw), h)
        });
        assert!(made.0 && verify_password(&made.1, &pw));
        assert_eq!(memory.0.len(), our_params().block_count());
        // A panic inside gives the memory back too.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lend_hashing_memory(&mut memory, || with_hashing_memory(|_| panic!("inside")))
        }));
        assert!(caught.is_err());
        assert_eq!(memory.0.len(), our_params().block_count(), "given back after a panic");
        assert!(LENT.take().is_none(), "nothing stays lent to the thread");
    }

    #[test]
    fn delay_doubles_and_caps() {
        let d: Vec<u64> = (0..6).map(|f| failure_delay(f).as_millis() as u64).collect();
        assert_eq!(d, [0, 250, 500, 1000, 2000, 4000]);
        assert_eq!(failure_delay(40), Duration::from_secs(60));
    }
}
