//! The stable error-code registry.
//!
//! Every error an engine can return maps to exactly one [`ErrorCode`]; every code has one
//! process exit status. Scripts and Kubernetes manifests match on these strings and numbers,
//! so a code is never renamed, reused or removed (the registry is snapshot-tested in
//! `tests/it/codes.rs`). New codes are appended.

use std::fmt;

/// A stable, machine-readable error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// Another writer holds the session (a live owner, a fenced foreign-host or
    /// other-boot record, a stale record under managed mode, a sealed record without
    /// certified takeover).
    SessionWriterConflict,
    /// Ownership could not be verified: a transition claim exists, a guard is held, an
    /// I/O error, the retry budget ran out, a managed (schema 3) record. Retrying never
    /// authorizes a bypass.
    SessionWriterUnavailable,
    /// The transcript no longer matches what the lock records.
    SessionTranscriptChanged,
    /// The lock path holds something that is not a valid record for this session.
    SessionLockMalformed,
    /// The transcript path is unsafe (symlink, not a regular file, outside the runtime dir).
    SessionTranscriptUnsafe,
    /// The caller's owner token does not own the lock (or ownership was lost).
    SessionNotOwner,
    /// The feature gate `experimental.session_writer_lease` is off.
    FeatureDisabled,
    /// A command-line argument or its environment equivalent is invalid or missing, or the
    /// environment must be fixed: a lock, `R/tmp` or transcript directory another user can
    /// change, permission denied, a read-only filesystem, a name too long (issue 22).
    InvalidArgument,
    /// The runtime directory does not exist (writerctl never creates it).
    RuntimeDirMissing,
    /// The command line could not be parsed.
    Usage,
    /// Any failure with no more specific code.
    Internal,
    /// `verify` (or a sealed-only operation) found no sealed record.
    SessionNotSealed,
    /// `run`: the writer did not stop within `--grace`; it was killed and the lock kept.
    DrainTimeout,
    /// `run`: a stop signal arrived before the lock was acquired; nothing was changed.
    Interrupted,
    /// `run`: the writer died of a signal nobody sent as a stop; the lock was kept.
    WriterCrashed,
    /// A handoff from a session that is not the current master.
    NotMaster,
    /// The master epoch moved since the caller looked: another handoff or claim won.
    StaleMaster,
    /// No registered controller matches the target.
    TargetNotRegistered,
    /// Rows exist for the target identity, but none heartbeat within the freshness threshold.
    TargetStale,
    /// Several fresh rows match the target identity; the error lists them.
    TargetAmbiguous,
    /// Unknown operator or wrong password.
    InvalidOperatorCredentials,
    /// The session token does not belong to that session.
    Unauthorized,
    /// `operator add` for an id that already exists; it is never overwritten.
    OperatorExists,
    /// The coordinator or its store cannot be reached or stayed busy; retry later.
    CoordinatorUnavailable,
    /// A work claim is live (or done) under another seat: one live claim per task.
    ClaimTaken,
    /// The claim's version moved since the caller read it (compare-and-set).
    VersionConflict,
    /// A claim with a TTL or a deputy must say what the next hands should do.
    NextStepRequired,
    /// The caller does not own the claim it tried to touch or release.
    NotClaimOwner,
    /// No such channel (or no claim on that task).
    NotFound,
    /// `channel create` for a channel that already exists; it is never overwritten.
    ChannelExists,
    /// `identity add` for an identity already enrolled in the project; never overwritten.
    IdentityExists,
    /// An inbox read from a cursor behind the retention trim: events after it may be gone.
    InboxCursorTrimmed,
    /// The lock directory's filesystem cannot carry the protocol (no hard links, or a type
    /// or mount known to be unsafe); retrying cannot help (issue 27).
    FilesystemUnsupported,
    /// One seat (or session) wrote faster than the server's per-seat rate; nothing was
    /// written; retry after the `Retry-After` the answer carries (issue 28).
    RateLimited,
    /// A replayed request id whose write was applied but whose answer is not given: it
    /// held a secret kept for nobody, or what it named is gone (issue 28).
    AnswerNotKept,
    /// A new identity a person would read as an existing one (Unicode TR39 skeleton, case
    /// folded); the error names the existing spelling (issue 28).
    NameConfusable,
    /// A write was applied but its answer (a token or key) could not be delivered (the
    /// output file could not be written); the error gives the request id and the command
    /// that recovers it (issue 28).
    AnswerNotDelivered,
    /// `doctor`: at least one check failed; the report names each (issue 30). Exit 1, so
    /// the command can run as a probe or a cron alert.
    DoctorFoundFailures,
    /// `audit export --cursor C` for a row the log does not hold: behind the retention
    /// trim, or never handed out (issue 30). Never a silent skip.
    AuditCursorUnknown,
}

impl ErrorCode {
    /// Every code, in registry order. Append only.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::SessionWriterConflict,
        ErrorCode::SessionWriterUnavailable,
        ErrorCode::SessionTranscriptChanged,
        ErrorCode::SessionLockMalformed,
        ErrorCode::SessionTranscriptUnsafe,
        ErrorCode::SessionNotOwner,
        ErrorCode::FeatureDisabled,
        ErrorCode::InvalidArgument,
        ErrorCode::RuntimeDirMissing,
        ErrorCode::Usage,
        ErrorCode::Internal,
        ErrorCode::SessionNotSealed,
        ErrorCode::DrainTimeout,
        ErrorCode::Interrupted,
        ErrorCode::WriterCrashed,
        ErrorCode::NotMaster,
        ErrorCode::StaleMaster,
        ErrorCode::TargetNotRegistered,
        ErrorCode::TargetStale,
        ErrorCode::TargetAmbiguous,
        ErrorCode::InvalidOperatorCredentials,
        ErrorCode::Unauthorized,
        ErrorCode::OperatorExists,
        ErrorCode::CoordinatorUnavailable,
        ErrorCode::ClaimTaken,
        ErrorCode::VersionConflict,
        ErrorCode::NextStepRequired,
        ErrorCode::NotClaimOwner,
        ErrorCode::NotFound,
        ErrorCode::ChannelExists,
        ErrorCode::IdentityExists,
        ErrorCode::InboxCursorTrimmed,
        ErrorCode::FilesystemUnsupported,
        ErrorCode::RateLimited,
        ErrorCode::AnswerNotKept,
        ErrorCode::NameConfusable,
        ErrorCode::AnswerNotDelivered,
        ErrorCode::DoctorFoundFailures,
        ErrorCode::AuditCursorUnknown,
    ];

    /// The code named `s`, if it is in the registry.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// The string scripts match on.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::SessionWriterConflict => "session_writer_conflict",
            ErrorCode::SessionWriterUnavailable => "session_writer_unavailable",
            ErrorCode::SessionTranscriptChanged => "session_transcript_changed",
            ErrorCode::SessionLockMalformed => "session_lock_malformed",
            ErrorCode::SessionTranscriptUnsafe => "session_transcript_unsafe",
            ErrorCode::SessionNotOwner => "session_not_owner",
            ErrorCode::FeatureDisabled => "feature_disabled",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::RuntimeDirMissing => "runtime_dir_missing",
            ErrorCode::Usage => "usage",
            ErrorCode::Internal => "internal",
            ErrorCode::SessionNotSealed => "session_not_sealed",
            ErrorCode::DrainTimeout => "drain_timeout",
            ErrorCode::Interrupted => "interrupted",
            ErrorCode::WriterCrashed => "writer_crashed",
            ErrorCode::NotMaster => "not_master",
            ErrorCode::StaleMaster => "stale_master",
            ErrorCode::TargetNotRegistered => "target_not_registered",
            ErrorCode::TargetStale => "target_stale",
            ErrorCode::TargetAmbiguous => "target_ambiguous",
            ErrorCode::InvalidOperatorCredentials => "invalid_operator_credentials",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::OperatorExists => "operator_exists",
            ErrorCode::CoordinatorUnavailable => "coordinator_unavailable",
            ErrorCode::ClaimTaken => "claim_taken",
            ErrorCode::VersionConflict => "version_conflict",
            ErrorCode::NextStepRequired => "next_step_required",
            ErrorCode::NotClaimOwner => "not_claim_owner",
            ErrorCode::NotFound => "not_found",
            ErrorCode::ChannelExists => "channel_exists",
            ErrorCode::IdentityExists => "identity_exists",
            ErrorCode::InboxCursorTrimmed => "inbox_cursor_trimmed",
            ErrorCode::FilesystemUnsupported => "filesystem_unsupported",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::AnswerNotKept => "answer_not_kept",
            ErrorCode::NameConfusable => "name_confusable",
            ErrorCode::AnswerNotDelivered => "answer_not_delivered",
            ErrorCode::DoctorFoundFailures => "doctor_found_failures",
            ErrorCode::AuditCursorUnknown => "audit_cursor_unknown",
        }
    }

    /// The process exit status for this code (DESIGN.md "Exit codes").
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorCode::Internal
            | ErrorCode::DrainTimeout
            | ErrorCode::WriterCrashed
            | ErrorCode::DoctorFoundFailures => 1,
            ErrorCode::Interrupted => 130,
            ErrorCode::Usage
            | ErrorCode::InvalidArgument
            | ErrorCode::RuntimeDirMissing
            | ErrorCode::NextStepRequired
            | ErrorCode::FilesystemUnsupported
            | ErrorCode::NameConfusable => 2,
            ErrorCode::SessionWriterConflict
            | ErrorCode::SessionNotOwner
            | ErrorCode::SessionNotSealed
            | ErrorCode::NotMaster
            | ErrorCode::StaleMaster
            | ErrorCode::OperatorExists
            | ErrorCode::ClaimTaken
            | ErrorCode::VersionConflict
            | ErrorCode::NotClaimOwner
            | ErrorCode::ChannelExists
            | ErrorCode::IdentityExists
            | ErrorCode::AnswerNotKept => 3,
            ErrorCode::TargetNotRegistered
            | ErrorCode::TargetStale
            | ErrorCode::TargetAmbiguous
            | ErrorCode::NotFound => 5,
            ErrorCode::InvalidOperatorCredentials | ErrorCode::Unauthorized => 6,
            ErrorCode::SessionTranscriptChanged
            | ErrorCode::SessionLockMalformed
            | ErrorCode::SessionTranscriptUnsafe
            | ErrorCode::InboxCursorTrimmed
            | ErrorCode::AuditCursorUnknown => 4,
            ErrorCode::FeatureDisabled => 7,
            ErrorCode::SessionWriterUnavailable
            | ErrorCode::CoordinatorUnavailable
            | ErrorCode::RateLimited
            | ErrorCode::AnswerNotDelivered => 75,
        }
    }

    /// One sentence for the README / man page table.
    pub fn meaning(self) -> &'static str {
        match self {
            ErrorCode::SessionWriterConflict => {
                "another writer holds the session; the fence blocked access (not proof that it is alive)"
            }
            ErrorCode::SessionWriterUnavailable => {
                "ownership could not be verified (claim present, guard held, I/O error); retry later, never bypass"
            }
            ErrorCode::SessionTranscriptChanged => "the transcript no longer matches the lock's proof",
            ErrorCode::SessionLockMalformed => {
                "the lock path holds no valid record for this session (bad JSON, unknown schema, not a regular file, other session)"
            }
            ErrorCode::SessionTranscriptUnsafe => {
                "the transcript path is unsafe (symlink, non-regular file, outside the runtime directory)"
            }
            ErrorCode::SessionNotOwner => "the owner token does not own this lock, or ownership was lost",
            ErrorCode::FeatureDisabled => "experimental.session_writer_lease is off",
            ErrorCode::InvalidArgument => {
                "an argument or environment value is invalid or missing, or the environment must be fixed (a directory another user can change, permission denied, a read-only filesystem, a name too long); retrying cannot help"
            }
            ErrorCode::RuntimeDirMissing => "the runtime directory does not exist",
            ErrorCode::Usage => "the command line could not be parsed",
            ErrorCode::Internal => "unexpected failure",
            ErrorCode::SessionNotSealed => "the session's lock is not a sealed record (nothing to verify or take over)",
            ErrorCode::DrainTimeout => {
                "`run`: the writer, or a process it left behind, did not stop within --grace (or could not be proven gone); the active lock was kept (fail closed)"
            }
            ErrorCode::Interrupted => "`run`: stopped by a signal before the lock was acquired; nothing was changed",
            ErrorCode::WriterCrashed => {
                "`run`: the writer exited non-zero or died of a signal (crash, OOM kill, an unhandled stop); it did not drain, so the active lock was kept"
            }
            ErrorCode::NotMaster => {
                "the caller is not the project's master (only the master hands off; an operator claims)"
            }
            ErrorCode::StaleMaster => {
                "the master epoch is no longer the one the caller saw: a concurrent handoff or claim won"
            }
            ErrorCode::TargetNotRegistered => {
                "no registered controller row matches the target identity (or the named session)"
            }
            ErrorCode::TargetStale => "the target identity's rows all missed the heartbeat freshness threshold",
            ErrorCode::TargetAmbiguous => {
                "several fresh rows match the target identity; pick one with --to-session (candidates listed)"
            }
            ErrorCode::InvalidOperatorCredentials => {
                "unknown operator or wrong password; each failure delays the next attempt"
            }
            ErrorCode::Unauthorized => {
                "the credential does not prove the caller: a session token that does not match the session or the seat, a registration without the identity's key, an admin call without the admin token"
            }
            ErrorCode::OperatorExists => "the operator id already exists; credentials are never overwritten",
            ErrorCode::CoordinatorUnavailable => {
                "the coordinator or its store is unreachable or stayed busy; retry later"
            }
            ErrorCode::ClaimTaken => "the task already has a live claim (or is done); one live claim per task",
            ErrorCode::VersionConflict => {
                "the claim's version is not the one the caller read: another write won; read it again and decide"
            }
            ErrorCode::NextStepRequired => "a claim with a TTL or a deputy needs a non-empty --next-step",
            ErrorCode::NotClaimOwner => {
                "the seat does not own this claim (it was released, handed on or taken by another)"
            }
            ErrorCode::NotFound => "no such channel, or no claim on that task",
            ErrorCode::ChannelExists => "the channel already exists; it is never overwritten",
            ErrorCode::IdentityExists => {
                "the identity is already enrolled in the project; its key is never overwritten (`identity rotate` issues a new one)"
            }
            ErrorCode::InboxCursorTrimmed => {
                "the inbox cursor is behind the retention trim: events after it may have been removed (the error names the oldest cursor still held); never a silent skip"
            }
            ErrorCode::FilesystemUnsupported => {
                "the lock directory's filesystem cannot carry the protocol (no hard links, NFS mounted soft, nocto or with local locks, a FUSE type not proven safe); the message names the type and what it lacks; retrying cannot help"
            }
            ErrorCode::RateLimited => {
                "one seat or session wrote faster than the coordinator's per-seat rate; nothing was written; retry after the time the answer names (HTTP 429, Retry-After)"
            }
            ErrorCode::AnswerNotKept => {
                "a retried request id's write was applied, but its answer is not given: its secret was never kept (no credential to seal it under) or what it named is gone; rotate the key or register again"
            }
            ErrorCode::NameConfusable => {
                "the new identity reads like an existing one (Unicode TR39 confusable skeleton, case folded: Cyrillic `а` for `a`, fullwidth, case); the error names the existing spelling"
            }
            ErrorCode::AuditCursorUnknown => {
                "the audit export cursor names no row the log holds: removed by retention or never handed out (the error names the oldest cursor held); never a silent skip"
            }
            ErrorCode::AnswerNotDelivered => {
                "the write WAS applied but its answer (a token or key) could not be written to the output file; the message gives the request id and the command that recovers the answer (or, when the answer is not kept, how to replace the secret)"
            }
            ErrorCode::DoctorFoundFailures => {
                "`writerctl doctor`: at least one check failed (a fenced, malformed or in-transition lock, a refused filesystem, an untrusted directory, an unreachable or unready coordinator, an expired certificate); the report names each check with its hint. Warnings alone exit 0"
            }
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique() {
        let names: HashSet<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }
}
