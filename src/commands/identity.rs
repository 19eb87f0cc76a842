//! `writerctl identity add|list|rotate|remove`: who may register controllers under which
//! name (issue 19). Administrative: over HTTP each needs the admin token.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use writerctl::claim::engine::IssuedKey;
use writerctl::coordinator::api::Endpoint;
use writerctl::coordinator::verbs::admin::{AddIdentity, ListIdentities, RemoveIdentity, RotateIdentity};
use writerctl::coordinator::wire::{IdentityPath, IdentityReq, NoBody, ProjectPath};

use super::coord::{ProjectArgs, RequestArgs, rfc3339};
use super::output::Output;
use super::session::TokenFile;

/// Enrolled identities: registering a controller proves one with its key.
#[derive(Debug, Subcommand)]
pub enum IdentityCmd {
    /// Enroll an identity in a project and issue its key, shown once (stdout, or a new
    /// --key-file F, 0600, never overwritten). The store keeps only a hash. Over HTTP this
    /// needs the admin token (WRITERCTL_ADMIN_TOKEN; without it `unauthorized`, 6). A name
    /// that reads like an existing identity of the project (TR39 skeleton, case folded:
    /// Cyrillic `а`, fullwidth, case) is refused with `name_confusable` (2). Enrolling the
    /// project's first identity (or this one) deregisters the sessions open registration
    /// created (audited as `invalidated_open_sessions`). A key file not written after the
    /// enrollment applied: `answer_not_delivered` (75), with the request id and the command
    /// that recovers the key.
    Add(KeyArgs),
    /// List the identities enrolled in a project (names and times; never keys).
    List(ProjectArgs),
    /// Issue a new key for an enrolled identity; the old key is refused at once. Sessions
    /// already registered keep their tokens.
    Rotate(KeyArgs),
    /// Remove an identity: its key is refused and its sessions deregistered at once. A
    /// master among them leaves the master slot empty (as a deregistering master does);
    /// claims it holds follow their TTL, deputy and steward.
    Remove(RemoveArgs),
}

/// An identity in a project.
#[derive(Debug, Args)]
pub struct IdentityArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// The identity.
    #[arg(value_name = "IDENTITY")]
    pub identity: String,
}

/// An identity that gets a new key.
#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(flatten)]
    pub who: IdentityArgs,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Write the key to this new file (0600, never overwritten) instead of printing it.
    #[arg(long, value_name = "F")]
    pub key_file: Option<PathBuf>,
}

/// `identity remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    pub who: IdentityArgs,
    #[command(flatten)]
    pub request: RequestArgs,
}

/// Runs an `identity` subcommand.
pub fn run(cmd: IdentityCmd, out: Output) -> Result<()> {
    match cmd {
        IdentityCmd::Add(a) => issue(
            a,
            out,
            |c, p, i| c.call::<AddIdentity>(ProjectPath::of(p), IdentityReq { identity: i.to_string() }, None),
            "enrolled",
        ),
        IdentityCmd::Rotate(a) => issue(
            a,
            out,
            |c, p, i| c.call::<RotateIdentity>(IdentityPath::of(p, i), NoBody {}, None),
            "given a new key",
        ),
        IdentityCmd::List(a) => {
            let list = a.coord.open()?.call::<ListIdentities>(ProjectPath::of(&a.project), NoBody {}, None)?.identities;
            if out.json {
                let rows: Vec<_> = list
                    .iter()
                    .map(|i| {
                        serde_json::json!({"identity": i.identity, "enrolled_at": rfc3339(i.enrolled_at),
                                           "key_issued_at": rfc3339(i.key_issued_at)})
                    })
                    .collect();
                return Ok(out.json(&serde_json::json!({"project": a.project, "identities": rows}))?);
            }
            if list.is_empty() {
                out.line(&format!("no identity is enrolled in project {}", a.project))?;
            }
            for i in &list {
                out.line(&format!(
                    "{}  enrolled {}  key issued {}",
                    i.identity,
                    rfc3339(i.enrolled_at),
                    rfc3339(i.key_issued_at)
                ))?;
            }
            Ok(())
        }
        IdentityCmd::Remove(a) => {
            let (a, request) = (a.who, a.request);
            let at = IdentityPath::of(&a.at.project, &a.identity);
            let r = a.at.coord.open_write(&request)?.call::<RemoveIdentity>(at, NoBody {}, None)?;
            if out.json {
                return Ok(out.json(&serde_json::json!({
                    "project": a.at.project, "identity": r.identity, "removed": true,
                    "sessions": r.sessions, "was_master": r.was_master, "epoch": r.epoch
                }))?);
            }
            out.line(&format!(
                "identity {} removed from project {}; {} session(s) deregistered",
                r.identity,
                a.at.project,
                r.sessions.len()
            ))?;
            if r.was_master {
                out.note(&format!(
                    "it was master: project {} has no master now (epoch {}); the next controller to register becomes \
                     master, or an operator can `writerctl master claim`",
                    a.at.project, r.epoch
                ));
            }
            Ok(())
        }
    }
}

/// `identity add` / `identity rotate`: the key goes to its one destination, once.
fn issue(
    a: KeyArgs,
    out: Output,
    verb: impl FnOnce(
        &Endpoint,
        &str,
        &str,
    ) -> Result<writerctl::coordinator::wire::IssuedKeyResp, writerctl::claim::ClaimError>,
    done: &str,
) -> Result<()> {
    // Created (empty, 0600, never over an existing file) before the verb: a key nobody can
    // read must never be issued (after a rotation the old key is already refused).
    let mut key_out =
        match &a.key_file {
            Some(f) => Some(TokenFile::create(f).map_err(|m| {
                writerctl::claim::ClaimError::invalid("--key-file", m.replace("token file", "key file"))
            })?),
            None => None,
        };
    let project = &a.who.at.project;
    let (request, request_id) = a.request.pinned()?;
    let issued = match a.who.at.coord.open_write(&request).and_then(|c| Ok(verb(&c, project, &a.who.identity)?)) {
        Ok(k) => IssuedKey::from(k),
        Err(e) => {
            if let Some(f) = key_out.take() {
                f.discard();
            }
            return Err(e);
        }
    };
    if let Some(mut f) = key_out
        && let Err(e) = f.write(issued.key.expose())
    {
        let path = f.path().to_path_buf();
        f.discard();
        return Err(super::coord::answer_not_delivered(
            "identity key",
            &path,
            "--key-file",
            &request_id,
            &e,
            &[],
            &format!(
                "issue a new key with `writerctl identity rotate --project {project} {}` (the lost one is then \
                     refused)",
                a.who.identity
            ),
        ));
    }
    if out.json {
        let mut v = serde_json::json!({"project": project, "identity": issued.identity.identity,
                                       "key_issued_at": rfc3339(issued.identity.key_issued_at)});
        match &a.key_file {
            Some(f) => v["key_file"] = serde_json::json!(f.display().to_string()),
            None => v["key"] = serde_json::json!(issued.key.expose()),
        }
        return Ok(out.json(&v)?);
    }
    out.line(&format!("identity {} {done} in project {project}", issued.identity.identity))?;
    match &a.key_file {
        Some(f) => out.note(&format!("key written to {} (shown nowhere else)", f.display())),
        None => {
            out.line(&format!("key {}", issued.key.expose()))?;
            out.note("the key is shown once; `writerctl identity rotate` issues a new one");
        }
    }
    Ok(())
}
