//! Which error codes each command can return: one table, built from the engines' sets and,
//! for coordinator commands, from the definitions of the verbs they run.
//!
//! A script matching on `error.code` needs to know which codes one command can give it, not
//! the whole registry. The lists below are shown in each command's long `--help`, its man
//! page's EXIT STATUS and the generated CLI reference. They are kept true from two sides:
//! unit tests check every set against the `code()` functions it stands for, and the binary's
//! error exit (`main.rs`) aborts a debug build when a command fails with a code it does not
//! declare, so every integration test that provokes an error checks its command's list. A
//! coordinator command's codes are its verbs' ([`VERBS`]): a code a verb starts to give is
//! declared once, on the verb (`Verb::ERRORS`), and reaches the command, its man page and the
//! OpenAPI document together.

use writerctl::coordinator::verb::errors;
use writerctl::coordinator::verbs::{admin, history, master, pause, work};
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

/// What any coordinator request meets on its way, for commands that run no verb of their
/// own (`audit prune` on the store file, `coordinator serve`).
const COORD: &[C] = writerctl::coordinator::verb::COMMON_ERRORS;

/// The secret a verb answered (a session token, an identity key) could not be written out
/// by the CLI after the write applied.
const NOT_DELIVERED: &[C] = &[C::AnswerNotDelivered];

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
    ("session register", &[EDGE, NOT_DELIVERED]),
    ("session heartbeat", &[EDGE]),
    ("session deregister", &[EDGE]),
    ("master status", &[EDGE]),
    ("master handoff", &[EDGE]),
    ("master claim", &[EDGE]),
    ("master history", &[EDGE]),
    ("operator add", &[EDGE]),
    ("identity add", &[EDGE, NOT_DELIVERED]),
    ("identity list", &[EDGE]),
    ("identity rotate", &[EDGE, NOT_DELIVERED]),
    ("identity remove", &[EDGE]),
    ("inbox", &[EDGE]),
    ("audit", &[EDGE]),
    ("audit prune", &[EDGE, COORD]),
    ("audit export", &[EDGE]),
    ("channel create", &[EDGE]),
    ("channel show", &[EDGE]),
    ("claim take", &[EDGE]),
    ("claim touch", &[EDGE]),
    ("claim release", &[EDGE]),
    ("claim show", &[EDGE]),
    ("claim history", &[EDGE]),
    ("claim list", &[EDGE]),
    ("claim sweep", &[EDGE]),
    ("focus start", &[EDGE]),
    ("focus end", &[EDGE]),
    ("focus show", &[EDGE]),
    ("steward report", &[EDGE]),
    ("coordinator serve", &[EDGE, COORD]),
    ("coordinator admin-token new", &[EDGE]),
    ("history", &[EDGE, &[C::RuntimeDirMissing, C::SessionWriterUnavailable]]),
    ("doctor", &[EDGE, &[C::DoctorFoundFailures]]),
    ("pause", &[EDGE]),
    ("resume", &[EDGE]),
];

/// A verb's error list, derived from its definition ([`errors`]).
type VerbCodes = fn() -> Vec<C>;

/// The coordinator verbs each coordinator command runs: its codes are theirs, as each verb
/// declares them (`Verb::ERRORS`, with what its authorization and rate imply), plus the
/// command's own in [`COMMANDS`].
pub const VERBS: &[(&str, &[VerbCodes])] = &[
    ("session register", &[errors::<master::Register>]),
    ("session heartbeat", &[errors::<master::Heartbeat>]),
    ("session deregister", &[errors::<master::Deregister>]),
    ("master status", &[errors::<master::Status>, errors::<master::Watch>]),
    ("master handoff", &[errors::<master::Handoff>, errors::<master::Status>, errors::<master::Target>]),
    ("master claim", &[errors::<master::MasterClaim>, errors::<master::Status>, errors::<master::Target>]),
    ("master history", &[errors::<history::MasterHistory>]),
    ("operator add", &[errors::<master::AddOperator>]),
    ("identity add", &[errors::<admin::AddIdentity>]),
    ("identity list", &[errors::<admin::ListIdentities>]),
    ("identity rotate", &[errors::<admin::RotateIdentity>]),
    ("identity remove", &[errors::<admin::RemoveIdentity>]),
    ("inbox", &[errors::<admin::Inbox>]),
    ("audit", &[errors::<admin::Audit>]),
    ("audit export", &[errors::<history::AuditExport>]),
    ("channel create", &[errors::<work::CreateChannel>]),
    ("channel show", &[errors::<work::ShowChannel>]),
    ("claim take", &[errors::<work::TakeClaim>]),
    ("claim touch", &[errors::<work::TouchClaim>]),
    ("claim release", &[errors::<work::ReleaseClaim>]),
    ("claim show", &[errors::<work::ShowClaim>]),
    ("claim history", &[errors::<work::ClaimHistory>]),
    ("claim list", &[errors::<work::ListClaims>, errors::<pause::ShowPause>]),
    ("claim sweep", &[errors::<work::Sweep>]),
    ("focus start", &[errors::<work::StartFocus>]),
    ("focus end", &[errors::<work::EndFocus>]),
    ("focus show", &[errors::<work::ShowFocus>]),
    ("steward report", &[errors::<work::Steward>]),
    ("pause", &[errors::<pause::Pause>]),
    ("resume", &[errors::<pause::Resume>]),
];

/// The codes `path` (e.g. `"master claim"`) can return, in registry order: its own sets in
/// [`COMMANDS`] and its verbs' in [`VERBS`]. None for a path that is not a command (a group
/// such as `master`, or a typo).
pub fn declared(path: &str) -> Option<Vec<C>> {
    let (_, sets) = COMMANDS.iter().find(|(p, _)| *p == path)?;
    let verbs: Vec<C> =
        VERBS.iter().filter(|(p, _)| *p == path).flat_map(|(_, v)| v.iter().flat_map(|f| f())).collect();
    Some(C::ALL.iter().copied().filter(|c| sets.iter().any(|s| s.contains(c)) || verbs.contains(c)).collect())
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
        let coordinator: Vec<C> = VERBS.iter().flat_map(|(p, _)| declared(p).unwrap()).collect();
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
    fn every_command_with_verbs_is_a_command() {
        for (path, _) in VERBS {
            assert!(COMMANDS.iter().any(|(p, _)| p == path), "{path} runs verbs but is not in COMMANDS");
        }
    }

    #[test]
    #[should_panic(expected = "undeclared error code claim_taken for `writerctl acquire`")]
    fn an_undeclared_code_aborts_a_debug_build() {
        check_declared("acquire", C::ClaimTaken);
    }
}
