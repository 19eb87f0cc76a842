//! `writerctl coordinator admin-token new`: the one way the book gives to make the token
//! `coordinator serve --admin-token-file` accepts (issue 39 point 8: a token of words was
//! guessed from a store copy; the server now takes only what a generator makes).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use writerctl::claim::ClaimError;
use writerctl::claim::secret;

use super::output::Output;
use super::session::TokenFile;

/// Admin tokens for `coordinator serve --admin-token-file`.
#[derive(Debug, Subcommand)]
pub enum AdminTokenCmd {
    New(NewArgs),
}

/// Make a new admin token: 256 random bits from the kernel as 64 hex digits, shown once
/// (stdout, or a new --out F, 0600, never overwritten).
///
/// `coordinator serve` accepts only tokens of this form, 64 hex digits as a generator makes
/// them (this command, or `openssl rand -hex 32`), and refuses words, passphrases and
/// hand-typed hex with `invalid_argument` (2): kept answers holding identity keys are
/// sealed under the admin token, so a guessable token would open them from a copy of the
/// store. Nothing is sent anywhere and no store is touched: start (or restart) the server
/// with `--admin-token-file F`, and give administrators the token as
/// WRITERCTL_ADMIN_TOKEN.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Write the token to this new file (0600, never overwritten, fsynced) instead of
    /// printing it.
    #[arg(long, value_name = "F")]
    pub out: Option<PathBuf>,
}

/// Runs an `admin-token` subcommand.
pub fn run(cmd: AdminTokenCmd, out: Output) -> Result<()> {
    let AdminTokenCmd::New(a) = cmd;
    // Created before the token is drawn: a token that cannot be kept is never shown.
    let file = match &a.out {
        Some(f) => Some(
            TokenFile::create(f)
                .map_err(|m| ClaimError::invalid("--admin-token-file", m.replace("token file", "admin token file")))?,
        ),
        None => None,
    };
    let token = secret::new_admin_token()?;
    if let Some(mut f) = file {
        if let Err(e) = f.write(token.expose()) {
            let path = f.path().display().to_string();
            f.discard();
            // An I/O failure, not the caller's argument: `internal` (1), like any failed write.
            return Err(anyhow::anyhow!(
                "cannot write admin token file {path} ({e}); it was removed, nothing else changed"
            ));
        }
        let path = f.path().display().to_string();
        if out.json {
            return Ok(out.json(&serde_json::json!({"token_file": path}))?);
        }
        out.line(&format!("admin token written to {path} (mode 0600; shown nowhere else)"))?;
        out.note(&format!("start the server with --admin-token-file {path}; clients set WRITERCTL_ADMIN_TOKEN"));
        return Ok(());
    }
    if out.json {
        return Ok(out.json(&serde_json::json!({"token": token.expose()}))?);
    }
    out.line(token.expose())?;
    out.note("the token is shown once: keep it in a 0600 file for --admin-token-file (or use --out F)");
    Ok(())
}
