//! The error-code registry is a public contract: this snapshot fails on any rename, reuse,
//! removal or exit-code change, and checks the book's generated reference documents every code.

use writerctl::error::ErrorCode;

const SNAPSHOT: &[(&str, u8)] = &[
    ("session_writer_conflict", 3),
    ("session_writer_unavailable", 75),
    ("session_transcript_changed", 4),
    ("session_lock_malformed", 4),
    ("session_transcript_unsafe", 4),
    ("session_not_owner", 3),
    ("feature_disabled", 7),
    ("invalid_argument", 2),
    ("runtime_dir_missing", 2),
    ("usage", 2),
    ("internal", 1),
    ("session_not_sealed", 3),
    ("drain_timeout", 1),
    ("interrupted", 130),
    ("writer_crashed", 1),
    ("not_master", 3),
    ("stale_master", 3),
    ("target_not_registered", 5),
    ("target_stale", 5),
    ("target_ambiguous", 5),
    ("invalid_operator_credentials", 6),
    ("unauthorized", 6),
    ("operator_exists", 3),
    ("coordinator_unavailable", 75),
    ("claim_taken", 3),
    ("version_conflict", 3),
    ("next_step_required", 2),
    ("not_claim_owner", 3),
    ("not_found", 5),
    ("channel_exists", 3),
    ("identity_exists", 3),
    ("inbox_cursor_trimmed", 4),
    ("filesystem_unsupported", 2),
    ("rate_limited", 75),
    ("answer_not_kept", 3),
    ("name_confusable", 2),
    ("answer_not_delivered", 75),
    ("doctor_found_failures", 1),
    ("audit_cursor_unknown", 4),
];

#[test]
fn error_code_registry_is_stable() {
    let now: Vec<(&str, u8)> = ErrorCode::ALL.iter().map(|c| (c.as_str(), c.exit_code())).collect();
    assert_eq!(now, SNAPSHOT, "codes are append-only; regenerate docs/src/reference/errors.md with any addition");
}

#[test]
fn the_reference_documents_every_code_with_its_exit_status() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/reference/errors.md")).unwrap();
    for c in ErrorCode::ALL {
        let row = format!("| `{}` | {} |", c.as_str(), c.exit_code());
        assert!(page.contains(&row), "docs/src/reference/errors.md lacks the row starting {row}");
    }
}
