//! What every coordinator command shares: where the store is, the freshness threshold,
//! reading session tokens and operator passwords (never from argv), the confirmation
//! prompt, and timestamps.

use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use writerctl::claim::ClaimError;
use writerctl::claim::Coordinator;
use writerctl::claim::clock::SystemClock;
use writerctl::claim::engine::RequestCtx;
use writerctl::claim::model::Millis;
use writerctl::claim::requests::RequestId;
use writerctl::claim::secret::{Secret, is_machine_secret};
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::coordinator::api::Endpoint;
use writerctl::coordinator::client::{HttpCoordinator, cleartext_remote_host, is_http_url};
use writerctl::error::ErrorCode;

/// Where the coordinator is, and how fresh a heartbeat must be.
#[derive(Debug, Clone, Args)]
pub struct CoordArgs {
    /// http(s)://HOST:PORT of a `writerctl coordinator serve`, or sqlite:PATH for the
    /// embedded store used in-process [default: sqlite file
    /// $XDG_STATE_HOME/writerctl/coordinator.sqlite, else ~/.local/state/writerctl/...].
    /// For https with a private CA set WRITERCTL_COORDINATOR_CA=PEM-file; admin calls
    /// (operator add, audit) over HTTP read the admin token from WRITERCTL_ADMIN_TOKEN.
    #[arg(long, value_name = "URL", env = "WRITERCTL_COORDINATOR")]
    pub coordinator: Option<String>,

    /// Heartbeat freshness for target resolution and `fresh`, in seconds [default: 30].
    /// Only for the embedded store: a server judges freshness by its own
    /// `coordinator serve --freshness-seconds`, so with an http(s) --coordinator this flag
    /// is refused (exit 2) rather than silently ignored.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub freshness_seconds: Option<u64>,

    /// Allow http:// (clear text: session tokens, the admin token and operator passwords
    /// readable on the network) to a host that is not this machine. Without it such an
    /// address is refused (exit 2); use https:// instead.
    #[arg(long, env = "WRITERCTL_ALLOW_INSECURE_HTTP", value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_insecure_http: bool,
}

/// A project at a coordinator: what most coordinator commands address first.
#[derive(Debug, Clone, Args)]
pub struct ProjectArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    /// Project id.
    #[arg(long, value_name = "P")]
    pub project: String,
}

/// A write verb's coordinator and request id, flattened in that order.
#[derive(Debug, Args)]
pub struct WriteArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    #[command(flatten)]
    pub request: RequestArgs,
}

/// A write to a project: the coordinator, the request id and the project, flattened in
/// that order (`session register`, `heartbeat` and `deregister`, `pause`, `resume`).
#[derive(Debug, Args)]
pub struct ProjectWriteArgs {
    #[command(flatten)]
    pub write: WriteArgs,
    /// Project id.
    #[arg(long, value_name = "P")]
    pub project: String,
}

impl WriteArgs {
    /// The coordinator, opened for a write under this request id.
    pub fn open(&self) -> Result<Endpoint> {
        self.coord.open_write(&self.request)
    }
}

/// The request id of a write verb (`--request-id`).
#[derive(Debug, Args)]
pub struct RequestArgs {
    /// Id of this write, 1 to 128 of [A-Za-z0-9._:-] [default: a new random id]. The
    /// coordinator keeps the answer under it for 10 minutes: a retry with the same id (and
    /// the same request) returns the first answer and acts once, even when the first
    /// reply was lost (exit 75 prints the id to retry with).
    #[arg(long = "request-id", value_name = "ID")]
    pub request_id: Option<String>,
}

impl RequestArgs {
    /// These arguments with the id fixed (the one given, or a new one), so a command can
    /// name it after the write (issue 28 point 6: an answer not delivered).
    pub fn pinned(&self) -> Result<(RequestArgs, RequestId)> {
        let id = self.id()?;
        Ok((RequestArgs { request_id: Some(id.as_str().to_string()) }, id))
    }

    /// The id given, or a new one.
    pub fn id(&self) -> Result<RequestId> {
        Ok(match &self.request_id {
            Some(s) => RequestId::parse(s)?,
            None => RequestId::generate(),
        })
    }
}

/// Seed 000's heartbeat freshness threshold, when `--freshness-seconds` is not given.
pub const DEFAULT_FRESHNESS_SECONDS: u64 = 30;

/// The default embedded store file.
pub fn default_store_path() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| Path::new(v).is_absolute()) {
        Some(d) => PathBuf::from(d),
        None => {
            let home = std::env::var_os("HOME").filter(|v| !v.is_empty()).ok_or_else(|| {
                ClaimError::invalid(
                    "--coordinator",
                    "neither XDG_STATE_HOME nor HOME is set: pass --coordinator sqlite:PATH",
                )
            })?;
            PathBuf::from(home).join(".local/state")
        }
    };
    Ok(base.join("writerctl").join("coordinator.sqlite"))
}

/// Creates the default store's directory, private to the user.
fn create_state_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the state directory {}", dir.display()))
}

/// Where the coordinator lives.
pub enum Target {
    /// The embedded store at this path.
    Sqlite(PathBuf),
    /// A server.
    Http(String),
}

/// The coordinator this process asked, recorded by [`CoordArgs::target`].
static ASKED: OnceLock<Asked> = OnceLock::new();

struct Asked {
    /// `the embedded store at PATH`, or the server's URL.
    name: String,
    /// Neither --coordinator nor WRITERCTL_COORDINATOR was given.
    implicit: bool,
}

/// How errors name `target`: the server's URL without any user info, or the store's file.
pub fn coordinator_name(target: &Target) -> String {
    match target {
        Target::Sqlite(p) => format!("the embedded store at {}", p.display()),
        Target::Http(url) => match url.split_once("://") {
            Some((scheme, rest)) => {
                let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
                match rest[..end].rsplit_once('@') {
                    Some((_, host)) => format!("{scheme}://{host}{}", &rest[end..]),
                    None => url.clone(),
                }
            }
            None => url.clone(),
        },
    }
}

/// Codes whose meaning depends on which coordinator answered: a credential it does not
/// know, a name it holds no row for. Asked the wrong coordinator, each reads as a wrong
/// password or a typo.
const DEPENDS_ON_THE_COORDINATOR: &[ErrorCode] = &[
    ErrorCode::Unauthorized,
    ErrorCode::InvalidOperatorCredentials,
    ErrorCode::TargetNotRegistered,
    ErrorCode::TargetStale,
    ErrorCode::TargetAmbiguous,
    ErrorCode::NotFound,
];

/// `e` with the coordinator that answered it named in its message, when its code is one of
/// [`DEPENDS_ON_THE_COORDINATOR`] (issue 29); when no coordinator was named, the hint also
/// says how to reach a server. Code, details and exit status are unchanged. Called once, at
/// the command edge (main's error report).
pub fn name_the_coordinator(e: anyhow::Error) -> anyhow::Error {
    let Some(asked) = ASKED.get() else { return e };
    let Some(ce) = e.chain().find_map(|c| c.downcast_ref::<ClaimError>()) else { return e };
    let code = ce.code();
    if !DEPENDS_ON_THE_COORDINATOR.contains(&code) {
        return e;
    }
    let message = format!("{e} (coordinator: {})", asked.name);
    let mut hint = ce.hint();
    if asked.implicit {
        let how = "neither --coordinator nor WRITERCTL_COORDINATOR was given, so this asked the embedded store on \
                   this machine: to ask a server, pass --coordinator https://HOST:PORT or set WRITERCTL_COORDINATOR";
        hint = Some(match hint {
            Some(h) => format!("{h}; {how}"),
            None => how.to_string(),
        });
    }
    let details = ce.details();
    if e.chain().nth(1).is_some() {
        // A context around the engine's error: keep the chain (--verbose prints it), and
        // let the report find the code and hint inside, as before.
        return e.context(message);
    }
    ClaimError::Remote { code, message, hint, details }.into()
}

/// Parses a coordinator address (`--coordinator`, `WRITERCTL_COORDINATOR`, `serve --store`).
pub fn parse_target(url: Option<&str>) -> Result<Target> {
    Ok(match url {
        None => {
            let p = default_store_path()?;
            if let Some(dir) = p.parent() {
                create_state_dir(dir)?;
            }
            Target::Sqlite(p)
        }
        Some(url) => match url.strip_prefix("sqlite:") {
            Some(p) if !p.is_empty() => Target::Sqlite(PathBuf::from(p.strip_prefix("//").unwrap_or(p))),
            _ if is_http_url(url) => Target::Http(url.to_string()),
            _ => {
                return Err(ClaimError::invalid(
                    "--coordinator",
                    format!("coordinator address {url:?}: expected sqlite:PATH or http(s)://HOST:PORT"),
                )
                .into());
            }
        },
    })
}

/// Opens the embedded store's coordinator at `path`.
pub fn open_sqlite(path: &Path, freshness_seconds: u64) -> Result<Coordinator> {
    let store = SqliteStore::open(path)?;
    Ok(Coordinator::new(Arc::new(store), Arc::new(SystemClock), Duration::from_secs(freshness_seconds)))
}

impl CoordArgs {
    /// Opens the coordinator these flags name: in-process, or a client for a server.
    pub fn open(&self) -> Result<Endpoint> {
        self.open_with(None)
    }

    /// [`CoordArgs::open`] for a write verb: every write it runs carries the request id.
    pub fn open_write(&self, request: &RequestArgs) -> Result<Endpoint> {
        self.open_with(Some(request.id()?))
    }

    /// Where these flags point. The first call in a process records the answer, so that an
    /// error that depends on which coordinator answered names it ([`name_the_coordinator`]),
    /// and, when neither --coordinator nor WRITERCTL_COORDINATOR was given, says on stderr
    /// that the embedded store on this machine is used (issue 29: without a word, a user who
    /// meant the team's server got "invalid credentials" from a private file).
    pub fn target(&self) -> Result<Target> {
        let target = parse_target(self.coordinator.as_deref())?;
        let implicit = self.coordinator.is_none();
        if ASKED.set(Asked { name: coordinator_name(&target), implicit }).is_ok()
            && implicit
            && let Target::Sqlite(path) = &target
        {
            let note = format!(
                "note: no coordinator named (--coordinator, WRITERCTL_COORDINATOR): using the embedded store at {}, \
                 on this machine only; to reach a server pass --coordinator https://HOST:PORT or set \
                 WRITERCTL_COORDINATOR (--coordinator sqlite:PATH names this store and silences this note)\n",
                super::output::clean(&path.display().to_string())
            );
            // One write: a supervised writer may share this stderr.
            let _ = io::stderr().lock().write_all(note.as_bytes());
        }
        Ok(target)
    }

    fn open_with(&self, request: Option<RequestId>) -> Result<Endpoint> {
        match self.target()? {
            Target::Sqlite(path) => {
                let c = open_sqlite(&path, self.freshness_seconds.unwrap_or(DEFAULT_FRESHNESS_SECONDS))?;
                Ok(Endpoint::Embedded(c.for_request(RequestCtx { id: request, ..RequestCtx::default() })))
            }
            Target::Http(url) => {
                // Why refuse: the wire protocol carries no freshness, so the server's
                // threshold decides. Accepting the flag would let a script that asked for
                // 1 s hand mastership to a controller silent for 29 s, without a word.
                if let Some(n) = self.freshness_seconds {
                    return Err(super::usage(
                        format!(
                            "--freshness-seconds {n} cannot apply over HTTP: the server judges heartbeat freshness \
                             by its own threshold"
                        ),
                        "drop --freshness-seconds here and start the server with `writerctl coordinator serve \
                         --freshness-seconds N` (or use the embedded store: --coordinator sqlite:PATH)",
                    ));
                }
                if let Some(host) = cleartext_remote_host(&url).filter(|_| !self.allow_insecure_http) {
                    return Err(super::usage(
                        format!(
                            "refusing http:// to {host}: it is not this machine, and tokens and passwords would \
                             cross the network in clear text"
                        ),
                        "use https:// (serve --tls-cert F --tls-key F; a private CA goes in \
                         WRITERCTL_COORDINATOR_CA), or pass --allow-insecure-http (WRITERCTL_ALLOW_INSECURE_HTTP=1) \
                         on a network you trust",
                    ));
                }
                let ca = coordinator_ca()?;
                let admin = std::env::var("WRITERCTL_ADMIN_TOKEN").ok().map(Secret::new);
                Ok(Endpoint::Remote(HttpCoordinator::new(&url, ca.as_deref(), admin)?.with_request(request)))
            }
        }
    }

    /// Whether these flags name a server (freshness is then the server's).
    pub fn is_remote(&self) -> bool {
        self.coordinator.as_deref().is_some_and(is_http_url)
    }
}

/// The PEM file WRITERCTL_COORDINATOR_CA names (a private CA or a self-signed server
/// certificate), read; `None` when it is not set.
pub fn coordinator_ca() -> Result<Option<Vec<u8>>> {
    Ok(match std::env::var_os("WRITERCTL_COORDINATOR_CA") {
        Some(f) => Some(std::fs::read(&f).map_err(|e| {
            ClaimError::invalid(
                "WRITERCTL_COORDINATOR_CA",
                format!("cannot read WRITERCTL_COORDINATOR_CA {}: {e}", Path::new(&f).display()),
            )
        })?),
        None => None,
    })
}

/// Longest secret read from a file or stdin.
const MAX_SECRET: u64 = 4096;

/// Reads a secret from `r`, dropping one trailing newline (`\n` or `\r\n`).
fn read_secret(mut r: impl Read, what: &str) -> Result<Secret> {
    let mut s = String::new();
    r.by_ref().take(MAX_SECRET + 1).read_to_string(&mut s).with_context(|| format!("cannot read the {what}"))?;
    if s.len() as u64 > MAX_SECRET {
        return Err(
            ClaimError::invalid(what.to_string(), format!("the {what} is longer than {MAX_SECRET} bytes")).into()
        );
    }
    let trimmed = s.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&s);
    Ok(Secret::new(trimmed.to_string()))
}

/// Opens a file a secret is read from; a missing or unreadable file is the caller's
/// mistake (`invalid_argument`, exit 2), as for the lock-file commands' --token-file.
fn open_secret_file(p: &Path, what: &str) -> Result<std::fs::File> {
    std::fs::File::open(p).map_err(|e| {
        ClaimError::invalid(what.to_string(), format!("cannot open {what} file {}: {e}", p.display())).into()
    })
}

/// The secret in file `p`, read as it is (one trailing newline dropped), not checked.
pub fn read_secret_file(p: &Path, what: &str) -> Result<Secret> {
    read_secret(open_secret_file(p, what)?, what)
}

/// Which command writes a `what` read from a file, for the secrets the machine makes (256
/// random bits as 64 lowercase hex digits); None for secrets people choose.
fn written_by(what: &str) -> Option<&'static str> {
    match what {
        "session token" => Some("`writerctl session register --token-file F` writes"),
        "identity key" => Some("`writerctl identity add` (or `identity rotate`) --key-file F writes"),
        _ => None,
    }
}

/// Refuses, as `invalid_argument` (2), a file that should hold a machine-made secret and
/// holds something else, saying what it does look like when that is another writerctl
/// secret. The contents are never printed: the wrong file may hold another secret.
fn check_machine_secret(s: &Secret, p: &Path, what: &str) -> Result<()> {
    let Some(writer) = written_by(what) else { return Ok(()) };
    let t = s.expose().trim();
    if t.is_empty() || is_machine_secret(t) {
        return Ok(());
    }
    let looks = if writerctl::lockfile::record::OwnerToken::is_uuid_shaped(t) {
        " (it looks like a lock owner token, which `writerctl acquire --token-file` writes)"
    } else {
        ""
    };
    Err(ClaimError::invalid(
        what.to_string(),
        format!("the file {} does not hold a {what}: a {what} is 64 hex digits, as {writer}; this file holds {} bytes that are not \
         one{looks}",
        p.display(),
        t.len()
    ))
    .into())
}

/// The session token: `--token-file F`, else WRITERCTL_SESSION_TOKEN (never argv).
pub fn session_token(token_file: Option<&Path>) -> Result<Secret> {
    optional_secret(token_file, "WRITERCTL_SESSION_TOKEN", "session token")?.ok_or_else(|| {
        ClaimError::invalid("--token-file", "no session token: pass --token-file F or set WRITERCTL_SESSION_TOKEN")
            .into()
    })
}

/// A seat's (or an inbox reader's) proof: a session token of a controller registered as
/// that identity. Absent, the verb is still sent and the coordinator refuses it
/// (`unauthorized`, audited), exactly as it refuses a wrong token.
#[derive(Debug, Clone, Args)]
pub struct SeatTokenArgs {
    /// Read the session token of a controller registered as this identity from this file
    /// [default: env WRITERCTL_SESSION_TOKEN].
    #[arg(long, value_name = "F")]
    pub token_file: Option<PathBuf>,
}

impl SeatTokenArgs {
    /// The token, if one was given.
    pub fn token(&self) -> Result<Option<Secret>> {
        optional_secret(self.token_file.as_deref(), "WRITERCTL_SESSION_TOKEN", "session token")
    }
}

/// A claim write's `--reason` (`claim take`, `claim release`). The coordinator checks it
/// (`claim::names::validate_reason`, the lock-file history's rule) and refuses a bad one with
/// `invalid_argument`, so it is not checked here.
#[derive(Debug, Clone, Args)]
pub struct AuditReasonArgs {
    /// Why, recorded on the audit row (at most 512 bytes, no control characters).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
}

/// A secret from `file` (which must be readable), else from `env` when set and non-empty. A
/// file that should hold a machine-made secret (a session token, an identity key) and holds
/// something else is refused as such (issue 29: a garbage token file was sent, and answered
/// only as an unknown token).
pub fn optional_secret(file: Option<&Path>, env: &str, what: &str) -> Result<Option<Secret>> {
    let s = match file {
        Some(p) => {
            let s = read_secret_file(p, what)?;
            check_machine_secret(&s, p, what)?;
            s
        }
        None => match std::env::var(env) {
            Ok(v) => Secret::new(v),
            Err(_) => return Ok(None),
        },
    };
    if s.expose().trim().is_empty() {
        return Err(ClaimError::invalid(what.to_string(), format!("the {what} is empty")).into());
    }
    Ok(Some(s))
}

/// Where an operator password comes from (never argv).
#[derive(Debug, Clone, Args)]
pub struct PasswordArgs {
    /// Read the password from this file (one trailing newline is dropped).
    #[arg(long, value_name = "F", conflicts_with = "password_stdin")]
    pub password_file: Option<PathBuf>,

    /// Read the password from standard input (one trailing newline is dropped).
    #[arg(long)]
    pub password_stdin: bool,
}

/// Whether a human is at the terminal: stdin and stderr are both terminals.
pub fn interactive() -> bool {
    io::stdin().is_terminal() && io::stderr().is_terminal()
}

impl PasswordArgs {
    /// The password: --password-file, --password-stdin, WRITERCTL_OPERATOR_PASSWORD, or a
    /// no-echo prompt on a terminal (twice when `confirm`).
    pub fn read(&self, prompt: &str, confirm: bool, json: bool) -> Result<Secret> {
        let pw = if let Some(p) = &self.password_file {
            read_secret(open_secret_file(p, "password")?, "password")?
        } else if self.password_stdin {
            read_secret(io::stdin().lock(), "password")?
        } else if let Ok(v) = std::env::var("WRITERCTL_OPERATOR_PASSWORD") {
            Secret::new(v)
        } else if interactive() && !json {
            let first = prompt_no_echo(prompt)?;
            if confirm && prompt_no_echo("Repeat the password: ")? != first {
                return Err(ClaimError::invalid("password", "the two passwords differ").into());
            }
            first
        } else {
            return Err(ClaimError::invalid(
                "--password-file",
                "no operator password: pass --password-file F or --password-stdin, set WRITERCTL_OPERATOR_PASSWORD, \
                 or run on a terminal to be prompted",
            )
            .into());
        };
        if pw.expose().is_empty() {
            return Err(ClaimError::invalid("password", "the operator password is empty").into());
        }
        Ok(pw)
    }
}

/// Restores the terminal's echo flag when dropped, so an error (or a panic) while reading
/// never leaves the user's terminal silent.
struct EchoGuard<'a> {
    tty: &'a std::fs::File,
    saved: rustix::termios::Termios,
}

impl Drop for EchoGuard<'_> {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(self.tty, rustix::termios::OptionalActions::Now, &self.saved);
    }
}

/// Asks on /dev/tty with echo off and reads one line.
fn prompt_no_echo(prompt: &str) -> Result<Secret> {
    use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
    let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").context("cannot open /dev/tty")?;
    let saved = tcgetattr(&tty).context("cannot read terminal settings")?;
    let mut quiet = saved.clone();
    quiet.local_modes.remove(LocalModes::ECHO);
    quiet.local_modes.insert(LocalModes::ECHONL);
    (&tty).write_all(prompt.as_bytes())?;
    tcsetattr(&tty, OptionalActions::Flush, &quiet).context("cannot turn terminal echo off")?;
    let guard = EchoGuard { tty: &tty, saved };
    let mut line = String::new();
    io::BufReader::new(guard.tty).read_line(&mut line)?;
    drop(guard);
    read_secret(line.as_bytes(), "password")
}

/// Asks "[y/N]" on /dev/tty; true only for y or yes.
pub fn confirm(question: &str) -> Result<bool> {
    let tty = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty").context("cannot open /dev/tty")?;
    (&tty).write_all(format!("{question} [y/N] ").as_bytes())?;
    let mut line = String::new();
    io::BufReader::new(&tty).read_line(&mut line)?;
    Ok(matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// An RFC 3339 time as milliseconds since the epoch (the coordinator judges its range).
pub fn parse_time(s: &str) -> Result<Millis, String> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| format!("{s:?} is not an RFC 3339 time (e.g. 2026-12-01T09:00:00Z): {e}"))?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).map_err(|_| format!("{s:?} is out of range"))
}

/// RFC 3339 UTC with exactly three fractional digits (fixed width: sorts as text).
pub fn rfc3339(ms: Millis) -> String {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'_>] =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(FORMAT).ok())
        .unwrap_or_else(|| ms.to_string())
}

/// "12s ago", "3m ago", "2h ago".
pub fn age(now: Millis, then: Millis) -> String {
    let s = (now - then).max(0) / 1000;
    match s {
        0..120 => format!("{s}s ago"),
        120..7200 => format!("{}m ago", s / 60),
        _ => format!("{}h ago", s / 3600),
    }
}

/// `answer_not_delivered` (75): the write WAS applied, but its secret answer (a session
/// token, an identity key) could not be written to `file` (issue 28 point 6; before, exit 1
/// `internal` with no request id left the caller no way to get the answer back). The
/// message names the request id and the exact command that recovers the answer: this
/// command again with `--request-id ID` and `flag` pointing at a new, writable file. A
/// server that no longer keeps the secret answers that retry with `answer_not_kept`; then
/// `otherwise` says how to replace the secret.
pub fn answer_not_delivered(
    what: &str,
    file: &std::path::Path,
    flag: &str,
    id: &RequestId,
    cause: &dyn std::fmt::Display,
    extra: &[String],
    otherwise: &str,
) -> anyhow::Error {
    let retry = recovery_command(flag, id, extra);
    writerctl::claim::ClaimError::Remote {
        code: writerctl::error::ErrorCode::AnswerNotDelivered,
        message: format!(
            "the write was applied (request id {id}), but the {what} could not be written to {} ({cause})",
            file.display()
        ),
        hint: Some(format!(
            "recover the {what} within the request id's lifetime with: {retry}; if that answers answer_not_kept, \
             {otherwise}"
        )),
        details: Some(serde_json::json!({"request_id": id.as_str(), "applied": true, "recover": retry})),
    }
    .into()
}

/// This process's command line with `--request-id ID`, `flag` naming `<new file>` instead of
/// the one that failed, and `extra` appended; shell-quoted.
fn recovery_command(flag: &str, id: &RequestId, extra: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut args = std::env::args().peekable();
    while let Some(a) = args.next() {
        let name = a.split('=').next().unwrap_or_default().to_string();
        if name == "--request-id" || name == flag {
            if !a.contains('=') {
                args.next();
            }
            continue;
        }
        out.push(a);
    }
    out.extend(["--request-id".into(), id.as_str().into(), flag.into(), "NEW-FILE".into()]);
    out.extend(extra.iter().cloned());
    out.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_lose_exactly_one_newline() {
        assert_eq!(read_secret(&b"pw\n"[..], "x").unwrap().expose(), "pw");
        assert_eq!(read_secret(&b"pw\r\n"[..], "x").unwrap().expose(), "pw");
        assert_eq!(read_secret(&b"pw \n\n"[..], "x").unwrap().expose(), "pw \n");
        assert_eq!(read_secret(&b"pw"[..], "x").unwrap().expose(), "pw");
        assert!(read_secret(&vec![b'a'; 5000][..], "x").is_err());
    }

    #[test]
    fn errors_name_a_server_without_its_user_info() {
        let name = |u: &str| coordinator_name(&Target::Http(u.into()));
        assert_eq!(name("https://coord.example:7700"), "https://coord.example:7700");
        assert_eq!(name("https://ops:secret@coord.example:7700/x"), "https://coord.example:7700/x");
        assert_eq!(name("http://127.0.0.1:1/a@b"), "http://127.0.0.1:1/a@b");
        assert_eq!(
            coordinator_name(&Target::Sqlite(PathBuf::from("/s/c.sqlite"))),
            "the embedded store at /s/c.sqlite"
        );
    }

    #[test]
    fn ages_read_naturally() {
        assert_eq!(age(10_000, 0), "10s ago");
        assert_eq!(age(600_000, 0), "10m ago");
        assert_eq!(age(0, 5), "0s ago");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_700_000_000_120), "2023-11-14T22:13:20.120Z");
    }
}
