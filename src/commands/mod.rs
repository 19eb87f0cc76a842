//! One module per subcommand: flags, output, and calls into the engines. No protocol work
//! happens here.

pub mod acquire;
pub mod admin_token;
pub mod args;
pub mod audit;
pub mod codes;
pub mod controller;
pub mod coord;
pub mod docs;
pub mod doctor;
pub mod examples;
pub mod history;
pub mod identity;
pub mod inbox;
pub mod master;
pub mod operator;
pub mod output;
pub mod pause;
pub mod recover;
pub mod reference;
pub mod release;
pub mod run;
pub mod seal;
pub mod serve;
pub mod session;
pub mod status;
pub mod takeover;
pub mod verify;
pub mod watch;
pub mod work;

/// A command that already printed its report and only needs a non-zero exit status.
#[derive(Debug)]
pub struct ExitStatus(pub u8);

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for ExitStatus {}

/// An error that already carries its stable code (e.g. relayed from a supervisor).
#[derive(Debug)]
pub struct Coded {
    /// The code.
    pub code: writerctl::error::ErrorCode,
    /// The message.
    pub message: String,
    /// The hint.
    pub hint: Option<String>,
}

impl std::fmt::Display for Coded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Coded {}

/// `SECONDS` flags (`--wait`, `inbox --timeout`): a finite number of seconds, 0 or more,
/// fractions allowed (a bound a script can rely on).
pub fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1e9).contains(&v) => Ok(std::time::Duration::from_secs_f64(v)),
        _ => Err(format!("{s:?} is not a number of seconds >= 0")),
    }
}

/// [`parse_seconds`] above zero (`run --check-interval`).
pub fn parse_seconds_positive(s: &str) -> Result<std::time::Duration, String> {
    match parse_seconds(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("{s:?} is not a number of seconds > 0")),
    }
}

/// A command line that parsed but asks for something the command cannot honour (a flag
/// that would otherwise be silently ignored): the `usage` code, exit 2, with a hint that
/// names what to do instead.
pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    Coded { code: writerctl::error::ErrorCode::Usage, message: message.into(), hint: Some(hint.into()) }.into()
}
