//! `writerctl operator add`: operator credentials for `master claim`.

use anyhow::Result;
use clap::{Args, Subcommand};
use writerctl::claim::masters::OperatorRequest;
use writerctl::coordinator::verbs::master::AddOperator;
use writerctl::coordinator::wire::NoPath;

use super::coord::{CoordArgs, PasswordArgs, RequestArgs};
use super::output::Output;

/// Operator credentials (argon2id hashes in the coordinator store).
#[derive(Debug, Subcommand)]
pub enum OperatorCmd {
    /// Add an operator. The password comes from --password-file, --password-stdin,
    /// WRITERCTL_OPERATOR_PASSWORD, or a no-echo prompt (asked twice); never from argv.
    /// An existing operator is never overwritten.
    Add(AddArgs),
}

/// `operator add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    /// The operator id.
    #[arg(value_name = "OPERATOR_ID")]
    pub operator_id: String,
    #[command(flatten)]
    pub password: PasswordArgs,
}

/// Runs an `operator` subcommand.
pub fn run(cmd: OperatorCmd, out: Output) -> Result<()> {
    let OperatorCmd::Add(a) = cmd;
    let c = a.coord.open_write(&a.request)?;
    let pw = a.password.read(&format!("New password for operator {}: ", a.operator_id), true, out.json)?;
    let body = OperatorRequest { operator_id: a.operator_id.clone(), password: pw.expose().to_string() };
    c.call::<AddOperator>(NoPath {}, body, None)?;
    if out.json {
        out.json(&serde_json::json!({"operator_id": a.operator_id, "created": true}))?;
    } else {
        out.line(&format!("operator {} added", a.operator_id))?;
        if pw.expose().chars().count() < 12 {
            out.note("note: the password is shorter than 12 characters");
        }
    }
    Ok(())
}
