//! A census of master slots across every project of the namespace, for `/metrics`.
//!
//! Redis keeps no index of projects (each verb names its own), so this walks the keyspace
//! with `SCAN MATCH {ns}:p:*:ctl` — incremental, never blocking Redis the way `KEYS` would —
//! then asks each such project's head whether its slot holds a master, a pipeline of
//! `HEXISTS` per [`PIPELINE_CHUNK`] projects. Cost: one pass over the keyspace per scrape
//! (Redis visits every key of the database, about 1 ms per 10,000 keys, in `COUNT`-sized
//! steps), plus one round trip per 1,000 projects. Not a snapshot: a project that changes
//! during the walk is counted as it was when its head was read.

use redis::Value;

use super::Inner;
use super::replies::{as_array, as_int, as_text, bad_reply};
use super::work::PIPELINE_CHUNK;
use crate::claim::error::ClaimError;

/// Keys per `SCAN` step.
const SCAN_COUNT: usize = 1000;

/// Projects with a controller hash (`ctl`; Redis deletes an emptied hash, so it exists only
/// while a controller is registered) and a head without `master_session_id`.
pub(super) fn projects_without_master(inner: &Inner) -> Result<u64, ClaimError> {
    if !inner.ready()? {
        return Err(ClaimError::Unavailable("redis has not been restored from postgres yet".into()));
    }
    let heads = heads_of_registered_projects(inner)?;
    let mut without = 0u64;
    for chunk in heads.chunks(PIPELINE_CHUNK) {
        let mut p = redis::pipe();
        for head in chunk {
            p.cmd("HEXISTS").arg(head).arg("master_session_id");
        }
        let replies: Vec<Value> = inner.redis.run_idempotent(|c| p.query(c))?;
        for r in &replies {
            if as_int("master slot", r)? == 0 {
                without += 1;
            }
        }
    }
    Ok(without)
}

/// The head key of every project whose `ctl` hash exists, each once.
fn heads_of_registered_projects(inner: &Inner) -> Result<Vec<String>, ClaimError> {
    let prefix = format!("{}:p:", inner.keys.base);
    let pattern = format!("{}*:ctl", glob_escape(&prefix));
    // `{ns}:p:<project>:ctl` with an escaped project (no `:` in it); the pattern also
    // matches e.g. an inbox of an identity named `ctl`, which has more segments.
    Ok(scan_keys(inner, &pattern, None)?
        .into_iter()
        .filter_map(|key| {
            let project = key.strip_prefix(&prefix)?.strip_suffix(":ctl")?;
            (!project.contains(':')).then(|| format!("{prefix}{project}:head"))
        })
        .collect())
}

/// Every key matching `pattern` (and of type `kind`, when given), sorted, each once (`SCAN`
/// may return a key twice). Incremental: never blocks Redis the way `KEYS` would.
pub(super) fn scan_keys(inner: &Inner, pattern: &str, kind: Option<&str>) -> Result<Vec<String>, ClaimError> {
    let mut found = Vec::new();
    let mut cursor = String::from("0");
    loop {
        let reply = inner.redis.run_idempotent(|c| {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(&cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(SCAN_COUNT);
            if let Some(kind) = kind {
                cmd.arg("TYPE").arg(kind);
            }
            cmd.query::<Value>(c)
        })?;
        let [next, keys] = as_array("scan", &reply)? else {
            return Err(bad_reply("scan", &reply));
        };
        for key in as_array("scan keys", keys)? {
            found.push(as_text(key).ok_or_else(|| bad_reply("scan key", key))?);
        }
        cursor = as_text(next).ok_or_else(|| bad_reply("scan cursor", next))?;
        if cursor == "0" {
            break;
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// `s` with Redis glob metacharacters escaped (a namespace may contain them).
pub(super) fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn glob_escape_escapes_only_metacharacters() {
        assert_eq!(super::glob_escape("{a*b?[c]\\d}:p:"), "{a\\*b\\?\\[c\\]\\\\d}:p:");
    }
}
