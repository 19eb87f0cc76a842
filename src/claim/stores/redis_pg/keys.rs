//! The namespace and every Redis key in it (see the parent's documentation for the layout).

use crate::claim::error::ClaimError;

/// Refuses a namespace that is not `[a-z0-9_]{1,40}` (it becomes a Postgres schema name and
/// a Redis hash tag) or that Postgres reserves (`pg_*`).
pub fn validate_namespace(ns: &str) -> Result<(), ClaimError> {
    let ok = !ns.is_empty()
        && ns.len() <= 40
        && ns.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !ns.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(ClaimError::invalid(
            "namespace",
            format!("namespace {ns:?} must be 1 to 40 of [a-z0-9_] and must not start with pg_"),
        ))
    }
}

/// A name as a key component: `%` and `:` escaped, so components never run together.
pub(super) fn esc(s: &str) -> String {
    s.replace('%', "%25").replace(':', "%3A")
}

/// The namespace's Redis keys.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    pub(super) base: String,
}

impl Keys {
    pub(super) fn new(ns: &str) -> Keys {
        Keys { base: format!("{{{ns}}}") }
    }
    pub(super) fn head(&self, project: &str) -> String {
        format!("{}:p:{}:head", self.base, esc(project))
    }
    pub(super) fn ctl(&self, project: &str) -> String {
        format!("{}:p:{}:ctl", self.base, esc(project))
    }
    pub(super) fn inbox(&self, project: &str, identity: &str) -> String {
        format!("{}:p:{}:inbox:{}", self.base, esc(project), esc(identity))
    }
}

/// The keys without a component: one `{ns}:<suffix>` builder each.
macro_rules! namespace_keys {
    ($($(#[$doc:meta])* $name:ident => $suffix:literal,)*) => {
        impl Keys {
            $(
                $(#[$doc])*
                pub(super) fn $name(&self) -> String {
                    format!(concat!("{}:", $suffix), self.base)
                }
            )*
        }
    };
}

namespace_keys! {
    cursor => "cursor",
    queue => "pgq",
    /// `{ns}:pgq:bytes`: the bytes of entry data the queue holds ([`QUEUE_LUA`]).
    queue_bytes => "pgq:bytes",
    /// `{ns}:pgq:failing`: set (with [`FAILING_TTL`]) by a drainer Postgres failed, deleted
    /// by one it served: what every replica reports as `degraded`, whoever drains.
    pg_failing => "pgq:failing",
    dead => "pgq:dead",
    drain_lock => "pgq:lock",
    ready => "ready",
    inbox_trims => "inbox_trims",
    due_projects => "due_projects",
    /// `{ns}:pauses`: hash, project → its pause record's JSON (issue 30).
    pauses => "pauses",
}

impl Keys {
    /// `{ns}:req:<key>`: a kept answer (string, expires with it).
    pub(super) fn request(&self, key: &str) -> String {
        format!("{}:req:{}", self.base, key)
    }
    pub(super) fn channels(&self, project: &str) -> String {
        format!("{}:p:{}:channels", self.base, esc(project))
    }
    pub(super) fn claims(&self, project: &str, channel: &str) -> String {
        format!("{}:p:{}:claims:{}", self.base, esc(project), esc(channel))
    }
    pub(super) fn history(&self, project: &str, channel: &str, task: &str) -> String {
        format!("{}:p:{}:hist:{}:{}", self.base, esc(project), esc(channel), esc(task))
    }
    pub(super) fn due(&self, project: &str) -> String {
        format!("{}:p:{}:due", self.base, esc(project))
    }
    pub(super) fn focus(&self, project: &str) -> String {
        format!("{}:p:{}:focus", self.base, esc(project))
    }
    pub(super) fn focus_version(&self, project: &str) -> String {
        format!("{}:p:{}:focus_version", self.base, esc(project))
    }
}
