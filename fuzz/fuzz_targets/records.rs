//! `records`: arbitrary bytes through the record parser, the liveness decision, the
//! `encodeURIComponent` pair, transcript keys and side-file names.
//!
//! Every input is used whole by every check (they are all cheap), so one corpus drives all
//! of them:
//!
//! * `parse_record(data)`: never panics; when it accepts, the record satisfies every rule of
//!   QWEN_FORMAT §2.2 that the parser promises (see `check_record`), parsing is
//!   deterministic, and `decide()` with a fake probe answers consistently with the rules.
//! * `decode_uri_component(encode_uri_component(s)) == Some(s)` for the UTF-8 reading of the
//!   input, and the encoding uses only `encodeURIComponent`'s output alphabet.
//! * `TranscriptKey::parse(s)` never yields a key with `..`, `.`, empty components or a
//!   leading `/`, and is idempotent on its own output.
//! * `side_file_owner`, `classify_side_file` and `redact_side_file_name` never panic and
//!   agree with each other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use writerctl::lockfile::identity::{LiveReason, Liveness, LocalDomain, ProcessProbe, StaleReason, decide};
use writerctl::lockfile::paths::{
    SideKind, classify_side_file, decode_uri_component, encode_uri_component, redact_side_file_name, side_file_owner,
};
use writerctl::lockfile::record::{
    LockRecord, OwnerFields, PROCESS_KINDS, RecordState, Schema, parse_record, parse_timestamp,
};
use writerctl::lockfile::sys::Signal0;
use writerctl::lockfile::transcript::TranscriptKey;

const MAX_SAFE: u64 = 9_007_199_254_740_991;

fn lower_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_record(data: &[u8], r: &LockRecord) {
    assert_eq!(r.raw, data, "raw must be the exact input bytes");
    assert!(!data.starts_with(&[0xEF, 0xBB, 0xBF]), "a BOM was accepted");
    assert!(std::str::from_utf8(data).is_ok(), "invalid UTF-8 was accepted");
    let o = &r.owner;
    assert!(!o.session_id.is_empty() && !o.owner_id.is_empty() && !o.hostname.is_empty());
    assert!(o.pid > 0, "pid must be > 0");
    assert!(PROCESS_KINDS.contains(&o.process_kind.as_str()));
    assert!(parse_timestamp(&o.acquired_at).is_some());
    if let Some(ns) = o.pid_namespace_id {
        assert!(ns > 0 && ns <= MAX_SAFE, "pid_namespace_id {ns}");
    }
    if let Some(id) = &o.process_start_identity {
        assert!(!id.is_empty());
    }
    match r.schema {
        Schema::V1 => assert!(r.is_active(), "schema 1 implies active"),
        Schema::V2 => {}
        Schema::V3 { format_version } => assert!((1..=MAX_SAFE).contains(&format_version)),
    }
    assert_eq!(r.is_active(), r.seal().is_none());
    if let RecordState::Sealed(s) = &r.state {
        assert!(lower_hex64(&s.transcript.sha256), "sealed implies a 64 lowercase hex sha256");
        assert!(!s.transcript.relative_path.is_empty());
        assert!(s.transcript.byte_length <= MAX_SAFE);
        if !s.transcript.exists {
            assert_eq!(s.transcript.byte_length, 0, "a missing transcript has byte_length 0");
        }
        assert!(parse_timestamp(&s.sealed_at).is_some());
        match r.schema {
            Schema::V3 { .. } => {
                assert!(s.last_commit_sequence.is_some_and(|n| n <= MAX_SAFE));
                assert!(s.committed_prefix_hash.as_deref().is_some_and(lower_hex64));
            }
            _ => assert!(s.last_commit_sequence.is_none() && s.committed_prefix_hash.is_none()),
        }
    }
    // Deterministic.
    assert_eq!(parse_record(data).as_ref(), Ok(r));
}

/// A probe whose answers come from the input.
struct FakeProbe {
    signal: Signal0,
    identity: Option<String>,
}

impl ProcessProbe for FakeProbe {
    fn signal0(&self, _pid: u64) -> Signal0 {
        self.signal
    }
    fn start_identity(&self, _pid: u64) -> Option<String> {
        self.identity.clone()
    }
}

fn boot_of(identity: &str) -> Option<&str> {
    let prefix = identity.get(..6)?;
    if !prefix.eq_ignore_ascii_case("linux:") {
        return None;
    }
    Some(identity[6..].split_once(':')?.0)
}

fn check_decide(o: &OwnerFields, sel: u8) {
    // Local domains that reach every rule: the record's own domain (so the probe decides),
    // and variations of it.
    let own_boot = o.process_start_identity.as_deref().and_then(boot_of).map(str::to_owned);
    let locals = [
        LocalDomain { hostname: o.hostname.clone(), boot_id: own_boot.clone(), pid_namespace_id: o.pid_namespace_id },
        LocalDomain {
            hostname: o.hostname.clone(),
            boot_id: own_boot.as_ref().map(|b| b.to_uppercase()),
            pid_namespace_id: o.pid_namespace_id.or(Some(1)),
        },
        LocalDomain { hostname: format!("{}x", o.hostname), boot_id: own_boot.clone(), pid_namespace_id: Some(1) },
        LocalDomain { hostname: o.hostname.clone(), boot_id: None, pid_namespace_id: o.pid_namespace_id },
        LocalDomain { hostname: o.hostname.clone(), boot_id: own_boot, pid_namespace_id: None },
    ];
    let signal = match sel % 3 {
        0 => Signal0::Delivered,
        1 => Signal0::NoSuchProcess,
        _ => Signal0::Indeterminate,
    };
    let identity = match (sel / 3) % 3 {
        0 => None,
        1 => o.process_start_identity.clone(),
        _ => Some("linux:0:1".to_owned()),
    };
    let probe = FakeProbe { signal, identity: identity.clone() };
    for local in &locals {
        let l = decide(o, local, &probe);
        let _ = (l.code(), l.describe());
        if o.hostname != local.hostname {
            assert_eq!(l, Liveness::Live(LiveReason::ForeignHost));
            continue;
        }
        if let Liveness::Stale(why) = l {
            // Stale only inside our boot and namespace, and only on the probe's word.
            assert!(local.boot_id.is_some() && local.pid_namespace_id.is_some());
            assert_eq!(o.pid_namespace_id, local.pid_namespace_id);
            let boot = o.process_start_identity.as_deref().and_then(boot_of).expect("stale needs an identity");
            assert!(boot.eq_ignore_ascii_case(local.boot_id.as_deref().unwrap()));
            match why {
                StaleReason::ProcessGone => assert_eq!(signal, Signal0::NoSuchProcess),
                StaleReason::PidReused => {
                    assert_ne!(signal, Signal0::NoSuchProcess);
                    assert!(identity.is_some() && identity != o.process_start_identity);
                }
            }
        }
    }
}

fn check_uri(s: &str) {
    let enc = encode_uri_component(s);
    assert!(
        enc.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'()%".contains(&b)),
        "encoding left a reserved byte: {enc:?}"
    );
    assert!(!enc.contains('/'));
    assert_eq!(decode_uri_component(&enc).as_deref(), Some(s), "round trip of {s:?}");
    // Arbitrary text: never panics; a successful decode re-decodes its canonical encoding.
    if let Some(d) = decode_uri_component(s) {
        assert_eq!(decode_uri_component(&encode_uri_component(&d)), Some(d));
    }
}

fn check_key(s: &str) {
    if let Ok(k) = TranscriptKey::parse(s) {
        let k = k.as_str();
        assert!(!k.is_empty() && !k.starts_with('/'), "{k:?}");
        for c in k.split('/') {
            assert!(!c.is_empty() && c != "." && c != "..", "component {c:?} in {k:?}");
        }
        assert_eq!(TranscriptKey::parse(k).ok().as_ref().map(TranscriptKey::as_str), Some(k), "not idempotent");
    }
}

fn check_side_file(s: &str) {
    match side_file_owner(s) {
        Some((lock, kind)) => {
            assert!(lock.ends_with(".lock"));
            assert!(s.len() > lock.len() && s.starts_with(lock) && s.as_bytes()[lock.len()] == b'.');
            assert_eq!(classify_side_file(lock, s), Some(kind));
            let shown = redact_side_file_name(lock, s, kind);
            assert!(shown.starts_with(lock), "{shown:?}");
            if matches!(kind, SideKind::TransitionClaim | SideKind::Stale | SideKind::Unknown) {
                assert_eq!(shown, s);
            }
        }
        None => {
            // Only a primary name, or a name without any `L.` prefix, belongs to no lock.
            assert!(s.ends_with(".lock") || !s.contains(".lock."), "{s:?} is attributed to no lock");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = parse_record(data) {
        check_record(data, &r);
        check_decide(&r.owner, data.last().copied().unwrap_or(0));
    }
    let s = String::from_utf8_lossy(data);
    check_uri(&s);
    check_key(&s);
    check_side_file(&s);
});
