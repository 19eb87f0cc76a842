//! Which error codes each command can return: one table, built from the engines' sets.
//!
//! A script matching on `error.code` needs to know which codes one command can give it, not
//! the whole registry. The lists below are shown in each command's long `--help`, its man
//! page's EXIT STATUS and the generated CLI reference. They are kept true from two sides:
//! unit tests check every set against the `code()` functions it stands for, and the binary's
//! error exit (`main.rs`) aborts a debug build when a command fails with a code it does not
//! declare, so every integration test that provokes an error checks its command's list.

use writerctl::error::ErrorCode as C;

/// Every command: a command line clap or the command refuses (`usage`), a config file that
/// does not load (read before dispatch: `invalid_argument`), a failure no engine names.
const EDGE: &[C] = &[C::Usage, C::InvalidArgument, C::Internal];

/// Every code `LockError::code()` can give (src/lockfile/error.rs), except the gate's.
const LOCK: &[C] = &[
    C::SessionWriterConflict,
    C::SessionWriterUnavailable,
    C::SessionLockMalformed,
    C::SessionNotOwner,
    C::RuntimeDirMissing,
    C::SessionTranscriptChanged,
    C::SessionTranscriptUnsafe,
    C::SessionNotSealed,
    C::InvalidArgument,
    C::FilesystemUnsupported,
];

/// Opening the lock directory (`lockfile::site`, `trust`, `filesystem`) and reading the
/// record there: what every lock-file command meets before it acts.
const LOCK_SITE: &[C] = &[
    C::RuntimeDirMissing,
    C::InvalidArgument,
    C::SessionWriterUnavailable,
    C::FilesystemUnsupported,
    C::SessionLockMalformed,
];

/// Checking a sealed record's proof against the transcript (`lockfile::verify`).
const SEAL_PROOF: &[C] = &[C::SessionNotSealed, C::SessionTranscriptChanged, C::SessionTranscriptUnsafe];

/// `experimental.session_writer_lease` off (seal and takeover check it).
const GATE: &[C] = &[C::FeatureDisabled];

/// What `RunError::code()` adds to the lock codes (src/supervisor/mod.rs); `seal` relays a
/// supervisor's answer, so it can give these too.
const SUPERVISOR: &[C] =
    &[C::DrainTimeout, C::Interrupted, C::WriterCrashed, C::SessionNotOwner, C::SessionWriterUnavailable];

/// `status --output` (`PublishError::code()`, src/lockfile/metrics.rs).
const PUBLISH: &[C] = &[C::InvalidArgument, C::Internal];

/// Every coordinator verb: the server or its store unreachable or busy, a store failure
/// (`internal`), an argument the engine refuses.
const COORD: &[C] = &[C::CoordinatorUnavailable, C::Internal, C::InvalidArgument];

/// A verb proven by a session token or the admin token.
const AUTH: &[C] = &[C::Unauthorized];

/// A seat's write verb, counted by the server's per-seat rate (`seat_rate` in server.rs).
const SEAT_RATE: &[C] = &[C::RateLimited];

/// A verb whose answer is a secret (a session token, an identity key): a replayed request id
/// may find it not kept, and the CLI may fail to write it out after the write applied.
const SECRET_ANSWER: &[C] = &[C::AnswerNotKept, C::AnswerNotDelivered];

/// A new name a person could mistake for an existing one (TR39 skeleton).
const NEW_NAME: &[C] = &[C::NameConfusable];

/// Resolving a handoff or claim target against the master slot (`claim::masters`).
const TARGET: &[C] = &[C::TargetNotRegistered, C::TargetStale, C::TargetAmbiguous, C::StaleMaster];

/// A work-claim write (`claim::engine::work`): take, touch and release share its checks.
const CLAIM_WRITE: &[C] = &[C::ClaimTaken, C::VersionConflict, C::NextStepRequired, C::NotClaimOwner, C::NotFound];

/// A read or write of something named that may not exist (a channel, a claim, an identity,
/// a focus lease).
const NAMED: &[C] = &[C::NotFound];

/// Every command path (as typed after `writerctl`) with the sets its code can come from.
/// Hidden commands are listed too: the exit check covers them.
pub const COMMANDS: &[(&str, &[&[C]])] = &[
    ("acquire", &[EDGE, LOCK]),
    ("release", &[EDGE, LOCK_SITE, &[C::SessionNotOwner]]),
    ("seal", &[EDGE, LOCK, GATE, SUPERVISOR]),
    ("takeover", &[EDGE, LOCK, GATE]),
    ("run", &[EDGE, LOCK, SUPERVISOR]),
    ("completions", &[EDGE]),
    ("man", &[EDGE]),
    ("__generate", &[EDGE]),
    ("__exec-writer", &[EDGE]),
    ("verify", &[EDGE, LOCK_SITE, SEAL_PROOF]),
    ("recover", &[EDGE, LOCK]),
    ("status", &[EDGE, LOCK_SITE, PUBLISH]),
    ("session register", &[EDGE, COORD, AUTH, NEW_NAME, SECRET_ANSWER]),
    ("session heartbeat", &[EDGE, COORD, AUTH, SEAT_RATE]),
    ("session deregister", &[EDGE, COORD, AUTH]),
    ("master status", &[EDGE, COORD]),
    ("master handoff", &[EDGE, COORD, AUTH, TARGET, &[C::NotMaster]]),
    ("master claim", &[EDGE, COORD, TARGET, SEAT_RATE, &[C::InvalidOperatorCredentials]]),
    ("master history", &[EDGE, COORD]),
    ("operator add", &[EDGE, COORD, AUTH, &[C::OperatorExists]]),
    ("identity add", &[EDGE, COORD, AUTH, NEW_NAME, SECRET_ANSWER, &[C::IdentityExists]]),
    ("identity list", &[EDGE, COORD, AUTH]),
    ("identity rotate", &[EDGE, COORD, AUTH, NAMED, SECRET_ANSWER]),
    ("identity remove", &[EDGE, COORD, AUTH, NAMED]),
    ("inbox", &[EDGE, COORD, AUTH, &[C::InboxCursorTrimmed]]),
    ("audit", &[EDGE, COORD, AUTH]),
    ("audit prune", &[EDGE, COORD]),
    ("audit export", &[EDGE, COORD, AUTH, &[C::AuditCursorUnknown]]),
    ("channel create", &[EDGE, COORD, AUTH, NEW_NAME, &[C::ChannelExists]]),
    ("channel show", &[EDGE, COORD, NAMED]),
    ("claim take", &[EDGE, COORD, AUTH, SEAT_RATE, CLAIM_WRITE]),
    ("claim touch", &[EDGE, COORD, AUTH, SEAT_RATE, CLAIM_WRITE]),
    ("claim release", &[EDGE, COORD, AUTH, SEAT_RATE, CLAIM_WRITE]),
    ("claim show", &[EDGE, COORD, NAMED]),
    ("claim history", &[EDGE, COORD, NAMED]),
    ("claim list", &[EDGE, COORD, NAMED]),
    ("claim sweep", &[EDGE, COORD, NAMED]),
    ("focus start", &[EDGE, COORD, AUTH, SEAT_RATE, NAMED]),
    ("focus end", &[EDGE, COORD, AUTH, SEAT_RATE, NAMED]),
    ("focus show", &[EDGE, COORD, NAMED]),
    ("steward report", &[EDGE, COORD, NAMED]),
    ("coordinator serve", &[EDGE, COORD]),
    ("coordinator admin-token new", &[EDGE]),
    ("history", &[EDGE, &[C::RuntimeDirMissing, C::SessionWriterUnavailable]]),
    ("doctor", &[EDGE, &[C::DoctorFoundFailures]]),
    ("pause", &[EDGE, COORD, AUTH]),
    ("resume", &[EDGE, COORD, AUTH]),
];

/// The codes `path` (e.g. `"master claim"`) can return, in registry order; None for a path
/// that is not a command (a group such as `master`, or a typo).
pub fn declared(path: &str) -> Option<Vec<C>> {
    let (_, sets) = COMMANDS.iter().find(|(p, _)| *p == path)?;
    Some(C::ALL.iter().copied().filter(|c| sets.iter().any(|s| s.contains(c))).collect())
}

/// Refuses, in debug builds, an error code `path` does not declare: a list that is missing
/// a code fails every test that provokes it, instead of going out of date.
pub fn check_declared(path: &str, code: C) {
    if cfg!(debug_assertions) && !declared(path).is_some_and(|codes| codes.contains(&code)) {
        panic!("undeclared error code {code} for `writerctl {path}`: add it to src/commands/codes.rs");
    }
}

/// The list as `--help` shows it, after the examples.
pub fn help_section(codes: &[C]) -> String {
    let width = codes.iter().map(|c| c.as_str().len()).max().unwrap_or(0);
    let mut s = String::from("Error codes (with --json: error.code; see the man page for meanings):");
    for c in codes {
        s.push_str(&format!("\n  {:width$}  exit {}", c.as_str(), c.exit_code()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `ErrorCode::X` names inside the body of `fn code(` in `file` (src-relative).
    fn codes_in_code_fn(file: &str) -> Vec<C> {
        let text = std::fs::read_to_string(format!("{}/src/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let start = text.find("pub fn code(&self) -> ErrorCode").unwrap_or_else(|| panic!("{file} has no code()"));
        let body = &text[start..];
        let body = &body[..body.find("\n    }\n").unwrap()];
        let mut out = Vec::new();
        for part in body.split("ErrorCode::").skip(1) {
            let name: String = part.chars().take_while(|ch| ch.is_ascii_alphanumeric()).collect();
            let code = C::ALL
                .iter()
                .copied()
                .find(|c| format!("{c:?}") == name)
                .unwrap_or_else(|| panic!("{file}: ErrorCode::{name} is not registered"));
            out.push(code);
        }
        assert!(!out.is_empty(), "{file}: no codes found; did code() move?");
        out
    }

    #[test]
    fn the_engine_sets_hold_every_code_their_engine_gives() {
        for c in codes_in_code_fn("lockfile/error.rs") {
            assert!(LOCK.contains(&c) || GATE.contains(&c), "LOCK lacks {c}, which LockError::code() gives");
        }
        for c in codes_in_code_fn("supervisor/error.rs") {
            assert!(SUPERVISOR.contains(&c) || LOCK.contains(&c), "SUPERVISOR lacks {c}, which RunError gives");
        }
        for c in codes_in_code_fn("lockfile/metrics.rs") {
            assert!(PUBLISH.contains(&c), "PUBLISH lacks {c}, which PublishError gives");
        }
        // Every ClaimError code is declared by some coordinator verb.
        let coordinator: Vec<C> =
            COMMANDS.iter().filter(|(_, sets)| sets.contains(&COORD)).flat_map(|(p, _)| declared(p).unwrap()).collect();
        for c in codes_in_code_fn("claim/error.rs") {
            assert!(coordinator.contains(&c), "no coordinator command declares {c}, which ClaimError gives");
        }
    }

    #[test]
    fn every_command_can_fail_and_every_code_is_declared_somewhere() {
        for (path, _) in COMMANDS {
            let codes = declared(path).unwrap();
            // `completions`, `man` and `coordinator admin-token new` touch no lock and no
            // store: they fail only as any command can (a bad argument, an I/O error).
            let local_only = ["completions", "man", "coordinator admin-token new"].contains(path);
            assert!(codes.len() > EDGE.len() || path.starts_with("__") || local_only, "{path}");
            assert!(codes.iter().all(|c| C::ALL.contains(c)));
        }
        for c in C::ALL {
            assert!(COMMANDS.iter().any(|(p, _)| declared(p).unwrap().contains(c)), "no command declares {c}");
        }
    }

    #[test]
    #[should_panic(expected = "undeclared error code claim_taken for `writerctl acquire`")]
    fn an_undeclared_code_aborts_a_debug_build() {
        check_declared("acquire", C::ClaimTaken);
    }
}
