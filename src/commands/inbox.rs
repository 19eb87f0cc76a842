//! `writerctl inbox`: events addressed to an identity (MasterPreempted), read by cursor.

use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use serde_json::json;
use writerctl::claim::model::Event;
use writerctl::coordinator::verbs::admin::Inbox;
use writerctl::coordinator::wire::{IdentityPath, InboxQuery};

use super::coord::{ProjectArgs, SeatTokenArgs, rfc3339};
use super::output::Output;

/// Coordinator: read an identity's inbox (MasterPreempted, ClaimReleased), by cursor or --follow.
///
/// Each event has a cursor; pass the last one seen as --after to read on. With --follow it
/// keeps waiting for new events and prints each as it arrives (with --json: one JSON object
/// per line). Reading needs a session token of a controller registered as that identity.
#[derive(Debug, Args)]
pub struct InboxArgs {
    #[command(flatten)]
    pub at: ProjectArgs,
    /// Whose inbox.
    #[arg(long, value_name = "I")]
    pub identity: String,
    /// Only events after this cursor.
    #[arg(long, value_name = "CURSOR", default_value_t = 0)]
    pub after: u64,
    /// Keep waiting for new events.
    #[arg(long)]
    pub follow: bool,
    /// With --follow: stop (exit 0) after this many seconds [default: never].
    #[arg(long, value_name = "SECONDS", requires = "follow", value_parser = super::parse_seconds)]
    pub timeout: Option<Duration>,
    /// At most this many events per read.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub limit: u64,
    #[command(flatten)]
    pub token: SeatTokenArgs,
}

/// How often --follow polls the embedded store.
const POLL: Duration = Duration::from_millis(200);
/// How long one long-poll request to a server waits for an event.
const LONG_POLL: Duration = Duration::from_secs(25);

fn event_json(e: &Event) -> serde_json::Value {
    json!({"cursor": e.cursor, "at": rfc3339(e.at), "kind": e.kind, "recipient_session": e.recipient_session,
           "payload": e.payload})
}

fn event_line(e: &Event) -> String {
    let p = &e.payload;
    let s = |k: &str| p.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
    let mut line = format!("#{} {} {}", e.cursor, rfc3339(e.at), e.kind);
    if e.kind == writerctl::claim::masters::MASTER_PREEMPTED {
        line.push_str(&format!(
            ": {} ({}) -> {} ({}), reason {}, epoch {}",
            s("previous_master_identity"),
            s("previous_master_session_id"),
            s("new_master_identity"),
            s("new_master_session_id"),
            s("reason"),
            p.get("epoch").map_or("?".into(), |v| v.to_string())
        ));
        if let Some(op) = p.get("by_operator").and_then(|v| v.as_str()) {
            line.push_str(&format!(", by operator {op}"));
        }
    } else if e.kind == writerctl::claim::work_claims::CLAIM_RELEASED {
        let to = p.get("to").and_then(|v| v.as_str()).map_or("open".to_string(), |d| format!("deputy {d}"));
        line.push_str(&format!(
            ": {}/{} from {} -> {to} ({}, v{}), next step: {}",
            s("channel"),
            s("task"),
            s("from"),
            s("reason"),
            p.get("version").map_or("?".into(), |v| v.to_string()),
            p.get("next_step").and_then(|v| v.as_str()).unwrap_or("-")
        ));
    } else {
        line.push_str(&format!(": {p}"));
    }
    line
}

/// Runs `inbox`.
pub fn run(a: InboxArgs, out: Output) -> Result<()> {
    let c = a.at.coord.open()?;
    let token = a.token.token()?;
    let limit = usize::try_from(a.limit).unwrap_or(usize::MAX);
    if !a.follow {
        let q = InboxQuery { after: a.after, limit: Some(limit), wait_ms: 0 };
        let events = c.call::<Inbox>(IdentityPath::of(&a.at.project, &a.identity), q, token.as_ref())?.events;
        let next = events.last().map_or(a.after, |e| e.cursor);
        if out.json {
            let list: Vec<_> = events.iter().map(event_json).collect();
            out.json(&json!({"events": list, "next_cursor": next}))?;
        } else if events.is_empty() {
            out.line(&format!("no events for {} after cursor {}", a.identity, a.after))?;
        } else {
            for e in &events {
                out.line(&event_line(e))?;
            }
        }
        return Ok(());
    }
    let deadline = a.timeout.map(|t| Instant::now() + t);
    let mut after = a.after;
    // A server holds the request open until an event arrives (long poll); the embedded
    // store is polled.
    let remote = a.at.coord.is_remote();
    loop {
        let wait = match deadline {
            _ if !remote => Duration::ZERO,
            Some(d) => d.saturating_duration_since(Instant::now()).min(LONG_POLL),
            None => LONG_POLL,
        };
        let q = InboxQuery { after, limit: Some(limit), wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX) };
        let got = c.call::<Inbox>(IdentityPath::of(&a.at.project, &a.identity), q, token.as_ref())?.events;
        let empty = got.is_empty();
        for e in got {
            if out.json {
                out.line(&serde_json::to_string(&event_json(&e))?)?;
            } else {
                out.line(&event_line(&e))?;
            }
            after = e.cursor;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(());
        }
        if !remote && empty {
            std::thread::sleep(POLL);
        }
    }
}
