//! Property tests for the record parser, the `encodeURIComponent` pair and side-file names:
//! the invariants of the `records` fuzz target (fuzz/fuzz_targets/records.rs), run in the
//! normal suite with a bounded number of cases.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use writerctl::lockfile::LockPaths;
use writerctl::lockfile::identity::{LiveReason, Liveness, LocalDomain, ProcessProbe, StaleReason, decide};
use writerctl::lockfile::paths::{
    Entry, SideKind, classify_side_file, decode_uri_component, encode_uri_component, install_temp, is_primary,
    owner_of, redact_side_file_name, side_file_owner, side_kind_of,
};
use writerctl::lockfile::record::{LockRecord, PROCESS_KINDS, RecordState, Schema, parse_record, parse_timestamp};
use writerctl::lockfile::sys::Signal0;
use writerctl::lockfile::transcript::TranscriptKey;

const MAX_SAFE: u64 = 9_007_199_254_740_991;
const BOOT: &str = "6a1d4c3e-9b2f-4f11-8a77-2c5d9e0f1a2b";
const OWNER: &str = "0b6f7c2e-4f1e-4a5e-9d8e-1c2b3a4d5e6f";

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

fn lower_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Everything an accepted record promises (QWEN_FORMAT §2.2).
fn check_record(raw: &[u8], r: &LockRecord) {
    assert_eq!(r.raw, raw);
    assert!(!raw.starts_with(&[0xEF, 0xBB, 0xBF]));
    let o = &r.owner;
    assert!(!r.session_id.is_empty() && !r.owner_id.is_empty() && !o.hostname.is_empty());
    assert!(o.pid > 0);
    assert!(PROCESS_KINDS.contains(&o.process_kind.as_str()));
    assert!(parse_timestamp(&o.acquired_at).is_some());
    assert!(o.pid_namespace_id.is_none_or(|n| n > 0 && n <= MAX_SAFE));
    assert!(o.process_start_identity.as_deref().is_none_or(|s| !s.is_empty()));
    match r.schema {
        Schema::V1 => assert!(r.is_active(), "schema 1 implies active"),
        Schema::V2 => {}
        Schema::V3 { format_version } => assert!((1..=MAX_SAFE).contains(&format_version)),
    }
    if let RecordState::Sealed(s) = &r.state {
        assert!(lower_hex64(&s.transcript.sha256), "sealed implies 64 lowercase hex");
        assert!(!s.transcript.relative_path.is_empty());
        assert!(s.transcript.byte_length <= MAX_SAFE);
        assert!(s.transcript.exists || s.transcript.byte_length == 0);
        assert!(parse_timestamp(&s.sealed_at).is_some());
        let managed = matches!(r.schema, Schema::V3 { .. });
        assert_eq!(s.last_commit_sequence.is_some(), managed);
        assert_eq!(s.committed_prefix_hash.as_deref().is_some_and(lower_hex64), managed);
    }
    assert_eq!(parse_record(raw).as_ref(), Ok(r), "parsing is deterministic");
}

struct Fake(Signal0, Option<String>);

impl ProcessProbe for Fake {
    fn signal0(&self, _: u64) -> Signal0 {
        self.0
    }
    fn start_identity(&self, _: u64) -> Option<String> {
        self.1.clone()
    }
}

/// `decide` in the record's own domain and in others, with every probe answer.
fn check_decide(r: &LockRecord) {
    let o = &r.owner;
    // An empty lock directory: a record naming a holder lock finds no file there.
    let scratch = tempfile::tempdir().unwrap();
    let dir = writerctl::lockfile::sys::Dir::open(scratch.path()).unwrap();
    let locals = [
        LocalDomain {
            hostname: o.hostname.clone(),
            boot_id: Some(BOOT.into()),
            pid_namespace_id: o.pid_namespace_id,
            pod: None,
        },
        LocalDomain {
            hostname: format!("{}x", o.hostname),
            boot_id: Some(BOOT.into()),
            pid_namespace_id: Some(1),
            pod: None,
        },
        LocalDomain { hostname: o.hostname.clone(), boot_id: None, pid_namespace_id: Some(1), pod: None },
    ];
    for signal in [Signal0::Delivered, Signal0::NoSuchProcess, Signal0::Indeterminate] {
        for id in [None, o.process_start_identity.clone(), Some(format!("linux:{BOOT}:1"))] {
            for local in &locals {
                let l = decide(o, local, &Fake(signal, id.clone()), &dir);
                if o.hostname != local.hostname {
                    assert_eq!(l, Liveness::Live(LiveReason::ForeignHost));
                }
                match l {
                    Liveness::Stale(StaleReason::ProcessGone) => {
                        assert_eq!(signal, Signal0::NoSuchProcess);
                        assert_eq!(o.pid_namespace_id, local.pid_namespace_id);
                    }
                    Liveness::Stale(StaleReason::PidReused) => {
                        assert!(id.is_some() && id != o.process_start_identity);
                    }
                    Liveness::Live(_) => {}
                    Liveness::Stale(StaleReason::HolderLockReleased) => {
                        panic!("a holder lock released without a holder-lock file")
                    }
                    Liveness::Stale(StaleReason::Proven(r)) => panic!("a pod rule ({r:?}) without a pod context"),
                }
            }
        }
    }
}

fn check_any(raw: &[u8]) {
    if let Ok(r) = parse_record(raw) {
        check_record(raw, &r);
        check_decide(&r);
    }
}

fn base_active() -> Map<String, Value> {
    let v = json!({
        "schema_version": 2, "state": "active", "session_id": "s", "owner_id": OWNER, "pid": 12345,
        "process_start_identity": format!("linux:{BOOT}:987654"), "pid_namespace_id": 4026531836u64,
        "hostname": "devbox", "process_kind": "acp", "acquired_at": "2026-07-28T00:00:00.000Z",
        "qwen_version": "0.0.1"
    });
    v.as_object().unwrap().clone()
}

/// A valid qwen record: schema 1, 2 or 3, active or sealed.
fn valid_record() -> impl Strategy<Value = Map<String, Value>> {
    (0u8..5).prop_map(|shape| {
        let mut m = base_active();
        let seal = |m: &mut Map<String, Value>| {
            m.insert("state".into(), "sealed".into());
            m.insert("sealed_at".into(), "2026-07-28T00:00:01.000Z".into());
            m.insert(
                "transcript".into(),
                json!({"relative_path": "chats/s.jsonl", "exists": true, "byte_length": 3,
                       "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}),
            );
        };
        match shape {
            0 => {
                m.insert("schema_version".into(), 1.into());
                m.remove("state");
            }
            1 => {}
            2 => seal(&mut m),
            3 => {
                m.insert("schema_version".into(), 3.into());
                m.insert("format_version".into(), 1.into());
            }
            _ => {
                m.insert("schema_version".into(), 3.into());
                m.insert("format_version".into(), 2.into());
                seal(&mut m);
                m.insert("last_commit_sequence".into(), 7.into());
                m.insert("committed_prefix_hash".into(), "a".repeat(64).into());
            }
        }
        m
    })
}

/// Replacement values: every JSON type, floats, huge numbers, number-strings, unicode.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        (0u64..1_000_000).prop_map(|n| json!(n as f64)),
        Just(json!(9_007_199_254_740_992u64)),
        Just(json!(1e300)),
        Just(json!(-0.0)),
        (0u64..100_000).prop_map(|n| Value::from(n.to_string())),
        ".{0,12}".prop_map(Value::from),
        Just(Value::from("é\u{0}\u{FFFF}𝄞")),
        Just(Value::from("A".repeat(64))),
        Just(Value::from("sealed")),
        Just(Value::from("active")),
        Just(Value::from("2026-07-28T00:00:00Z")),
        Just(Value::from("linux:x:1")),
        Just(json!([])),
        Just(json!({})),
        Just(json!({"ino": 1, "mode": 33188, "uid": 0, "gid": 0, "nlink": 1})),
        Just(json!({"relative_path": "x", "exists": false, "byte_length": 0, "sha256": "0".repeat(64)})),
    ]
}

const KEYS: &[&str] = &[
    "schema_version",
    "format_version",
    "state",
    "session_id",
    "owner_id",
    "pid",
    "process_start_identity",
    "pid_namespace_id",
    "hostname",
    "process_kind",
    "acquired_at",
    "qwen_version",
    "writer",
    "sealed_at",
    "transcript",
    "last_commit_sequence",
    "committed_prefix_hash",
    "writerctl_transcript_identity",
    "writerctl_epoch",
];

#[derive(Debug, Clone)]
enum Mutation {
    Drop(usize),
    Set(usize, Value),
    SetInTranscript(usize, Value),
    /// Appends a duplicate key as raw text (last one wins).
    Duplicate(usize, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let k = 0..KEYS.len();
    prop_oneof![
        k.clone().prop_map(Mutation::Drop),
        (k.clone(), odd_value()).prop_map(|(k, v)| Mutation::Set(k, v)),
        (0usize..4, odd_value()).prop_map(|(k, v)| Mutation::SetInTranscript(k, v)),
        (k, odd_value()).prop_map(|(k, v)| Mutation::Duplicate(k, v)),
    ]
}

fn apply(mut m: Map<String, Value>, muts: &[Mutation], pretty: bool) -> Vec<u8> {
    let mut dups = String::new();
    for mu in muts {
        match mu {
            Mutation::Drop(k) => {
                m.remove(KEYS[*k]);
            }
            Mutation::Set(k, v) => {
                m.insert(KEYS[*k].into(), v.clone());
            }
            Mutation::SetInTranscript(k, v) => {
                if let Some(Value::Object(t)) = m.get_mut("transcript") {
                    t.insert(["relative_path", "exists", "byte_length", "sha256"][*k].into(), v.clone());
                }
            }
            Mutation::Duplicate(k, v) => dups.push_str(&format!(",{}:{}", json!(KEYS[*k]), v)),
        }
    }
    let mut text = if pretty { serde_json::to_string_pretty(&m) } else { serde_json::to_string(&m) }.unwrap();
    if !dups.is_empty() {
        text.pop();
        if m.is_empty() {
            dups.remove(0);
        }
        text.push_str(&dups);
        text.push('}');
    }
    text.into_bytes()
}

proptest! {
    #![proptest_config(config(3000))]

    /// (a) Arbitrary bytes: never a panic; an accepted record keeps every promise.
    #[test]
    fn arbitrary_bytes(raw in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_any(&raw);
    }

    /// (a′) JSON-ish text (most of it is not JSON; some of it is a record).
    #[test]
    fn arbitrary_jsonish_text(raw in r#"[ {}\[\]":,0-9a-z_.eE+-]{0,200}"#) {
        check_any(raw.as_bytes());
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// (b) Structured mutations of valid qwen records.
    #[test]
    fn mutated_records(
        base in valid_record(),
        muts in proptest::collection::vec(mutation(), 0..4),
        pretty in any::<bool>(),
    ) {
        let valid = apply(base.clone(), &[], pretty);
        prop_assert!(parse_record(&valid).is_ok(), "the unmutated base must parse");
        let raw = apply(base, &muts, pretty);
        check_any(&raw);
        // Error messages are for operators and never contain the owner id.
        if let Err(e) = parse_record(&raw) {
            prop_assert!(!e.0.contains(OWNER), "{}", e.0);
        }
    }

    /// (c) encode/decode round trips.
    #[test]
    fn uri_round_trip(s in any::<String>()) {
        let enc = encode_uri_component(&s);
        prop_assert!(enc.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'()%".contains(&b)), "{}", enc);
        prop_assert_eq!(decode_uri_component(&enc), Some(s.clone()));
        if let Some(d) = decode_uri_component(&s) {
            prop_assert_eq!(decode_uri_component(&encode_uri_component(&d)), Some(d));
        }
    }

    /// (c′) Transcript keys never escape R.
    #[test]
    fn transcript_keys_stay_relative(s in r"[a-z./]{0,24}|\PC{0,24}") {
        if let Ok(k) = TranscriptKey::parse(&s) {
            let k = k.as_str();
            prop_assert!(!k.is_empty() && !k.starts_with('/'));
            prop_assert!(k.split('/').all(|c| !c.is_empty() && c != "." && c != ".."), "{}", k);
            let again = TranscriptKey::parse(k).unwrap();
            prop_assert_eq!(again.as_str(), k);
        }
    }
}

/// qwen owner ids: UUIDs. The looser alphabet also covers `encodeURIComponent`'s output
/// without `.` (what `is_owner_segment` accepts).
fn owner_id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(OWNER.to_owned()),
        "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        "[A-Za-z0-9_!~*'()%-]{1,12}",
    ]
}

fn side_names(p: &LockPaths, o: &str, n: &str, pid: u32) -> Vec<(String, SideKind)> {
    vec![
        (p.transition_claim(), SideKind::TransitionClaim),
        (p.released(o), SideKind::Released),
        (p.sealed_candidate(o), SideKind::SealedCandidate),
        (p.handoff(o), SideKind::Handoff),
        (p.sealed_retired(o, n), SideKind::SealedRetired),
        (p.stale(pid, n), SideKind::Stale),
        (p.reclaim_guard(o), SideKind::ReclaimGuard),
        (p.reclaim_guard_chained(o, n), SideKind::ReclaimGuard),
        (install_temp(&p.lock_name, o), SideKind::InstallTemp),
        (install_temp(&p.transition_claim(), o), SideKind::InstallTemp),
        (install_temp(&p.sealed_candidate(n), o), SideKind::InstallTemp),
        (install_temp(&p.reclaim_guard(n), o), SideKind::InstallTemp),
    ]
}

proptest! {
    #![proptest_config(config(2000))]

    /// (d) A name built by a `LockPaths` side-file constructor is attributed to its own lock,
    /// with the constructor's kind, and its redacted form hides the owner ids.
    #[test]
    fn side_files_belong_to_their_lock(
        session in prop_oneof![Just("s".to_owned()), Just("a.lock.b".to_owned()), any::<String>()]
            .prop_filter("non-empty", |s| !s.is_empty()),
        o in owner_id(),
        n in owner_id(),
        pid in any::<u32>(),
    ) {
        let p = LockPaths::for_session(std::path::Path::new("/r"), &session);
        prop_assert_eq!(side_file_owner(&p.lock_name), None, "a primary is no side file");
        for (name, kind) in side_names(&p, &o, &n, pid) {
            prop_assert_eq!(side_file_owner(&name), Some((p.lock_name.as_str(), kind)), "{}", name);
            prop_assert_eq!(classify_side_file(&p.lock_name, &name), Some(kind), "{}", name);
            let shown = redact_side_file_name(&p.lock_name, &name, kind);
            let prefix = format!("{}.", p.lock_name);
            prop_assert!(shown.starts_with(&prefix), "{}", shown);
            if !matches!(kind, SideKind::TransitionClaim | SideKind::Stale) && o.len() >= 8 {
                prop_assert!(!shown[p.lock_name.len()..].contains(&o), "{} shows {}", shown, o);
            }
        }
    }

    /// (d′) Any name: `side_file_owner` and `classify_side_file` agree; only primaries, names
    /// without an `L.` prefix and names under the empty session's `.lock` belong to no lock.
    #[test]
    fn any_name_is_classified_consistently(s in r"([a-z%.]{0,6}(\.lock)?\.(claim|handoff|sealed|stale|reclaim|tmp|[0-9a-z]{1,3})){0,4}|\PC{0,30}") {
        match side_file_owner(&s) {
            Some((lock, kind)) => {
                let prefix = format!("{lock}.");
                prop_assert!(lock.ends_with(".lock") && s.starts_with(&prefix), "{}", s);
                prop_assert_eq!(classify_side_file(lock, &s), Some(kind));
            }
            // The empty session id has no lock, so `.lock.<…>` belongs to none.
            None => prop_assert!(s.ends_with(".lock") || !s.contains(".lock.") || s.starts_with(".lock.")),
        }
    }
}

/// Side-file names embed the *recorded* owner id of a foreign record
/// (`reclaim_guard(stale_owner)`, `sealed_retired(sealed_owner, _)`), and `encodeURIComponent`
/// keeps `.`: by name alone an owner id ending in `.lock` turns the guard into another
/// session's primary. The session recorded inside the file decides ([`owner_of`]); a name
/// holding no record keeps the name rule.
#[test]
fn owner_ids_with_dot_lock_are_attributed_by_the_recorded_session() {
    let p = LockPaths::for_session(std::path::Path::new("/r"), "s");
    let of_s = |name: &str, owner: &str| Entry {
        name: name.to_owned(),
        recorded_session: Some("s".into()),
        recorded_owner: Some(owner.into()),
    };
    let guard = p.reclaim_guard("x.lock");
    assert_eq!(guard, "s.lock.reclaim.x.lock");
    // The guard holds the reclaimer's record (owner `g`), never the stale owner's.
    assert_eq!(owner_of(&of_s(&guard, "g")), Some(("s.lock".to_owned(), SideKind::ReclaimGuard)));
    assert!(!is_primary(&of_s(&guard, "g")));
    // The retired seal holds the sealed owner's record.
    let retired = p.sealed_retired("x.lock.claim", OWNER);
    assert_eq!(owner_of(&of_s(&retired, "x.lock.claim")), Some(("s.lock".to_owned(), SideKind::SealedRetired)));
    let handoff = p.handoff("y.lock");
    assert_eq!(owner_of(&of_s(&handoff, "y.lock")), Some(("s.lock".to_owned(), SideKind::Handoff)));
    // A copy whose name does not carry its record's owner where qwen puts it stays unknown.
    assert_eq!(owner_of(&of_s("s.lock.sealed.bak", OWNER)), Some(("s.lock".to_owned(), SideKind::Unknown)));
    // The same name holding a record of session `s.lock.reclaim.x` is that session's primary.
    let own = Entry {
        name: guard.clone(),
        recorded_session: Some("s.lock.reclaim.x".into()),
        recorded_owner: Some("g".into()),
    };
    assert!(is_primary(&own) && owner_of(&own).is_none());
    // Without a record inside, names decide as before.
    let bare = Entry { name: guard, recorded_session: None, recorded_owner: None };
    assert!(is_primary(&bare));
    assert_eq!(side_kind_of("s.lock", &of_s(&p.transition_claim(), "g")), Some(SideKind::TransitionClaim));
}
