//! Refusal audit rows, rate-limited (issue 28 point 4: "refusals are cheap and bounded").
//!
//! Every refused verb is audited, and before this a flood of wrong tokens wrote one audit
//! row per request (2.9 MB/s into SQLite). A refusal that carries its source address (a
//! server request, [`super::Coordinator::with_source`]) and that a caller without
//! credentials can provoke at will ([`limited`]: a wrong or missing token or key, a wrong
//! operator password, a seat over its rate) now goes through a [`RefusalLimiter`] first.
//! Refusals of proven callers (`stale_master`, `version_conflict`, ...) are decisions worth
//! a row each and stay one row each: their rate is bounded per seat instead. Per (source,
//! project, verb, code) and per interval ([`REFUSAL_INTERVAL`]):
//!
//! * the first [`AUDITED_PER_WINDOW`] refusals are audited as before (actor, target and
//!   details: a mistyped token or a short incident keeps its full attribution);
//! * later ones are only counted;
//! * when the interval has closed, one summary row carries the count (`detail.refusals`):
//!   written on that key's next refusal, by [`RefusalLimiter::due`] (a periodic flush: the
//!   server calls it on every `/metrics` scrape and once a second on refusals), and by
//!   [`RefusalLimiter::drain`] at shutdown.
//!
//! Memory is bounded: at most [`MAX_SOURCES`] keys carry a source address. Past that, a new
//! key is counted in a "many sources" bucket per (project, verb, code), and past twice that
//! in one bucket per (verb, code) for every project (project names are the caller's choice,
//! so they cannot be a bound either). A flood's rows per interval are therefore at most two
//! per key, with the number of keys bounded.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;

use super::model::{AuditEntry, Millis};
use crate::error::ErrorCode;

/// Whether refusals with `code` go through the limiter: the ones a caller without any
/// credential can provoke (see the module doc).
pub fn limited(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::Unauthorized | ErrorCode::InvalidOperatorCredentials | ErrorCode::RateLimited)
}

/// How long one refusal key's counting window lasts.
pub const REFUSAL_INTERVAL: Duration = Duration::from_secs(10);
/// Refusals per window audited one row each before the rest are only counted.
pub const AUDITED_PER_WINDOW: u32 = 8;
/// Keys with their own source address; more are aggregated (see the module doc).
pub const MAX_SOURCES: usize = 4096;
/// The actor of a summary row for the aggregated sources.
pub const MANY_SOURCES: &str = "many";

/// Who a refusal window counts: one source address, or every source past the cap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    /// None: the "many sources" bucket.
    source: Option<IpAddr>,
    /// The project, or `*` for the last-resort bucket.
    project: String,
    verb: String,
    code: String,
}

/// One key's open window.
#[derive(Debug)]
struct Window {
    opened_at: Millis,
    /// Refusals audited one row each in this window.
    audited: u32,
    /// Refusals counted and not audited since the window opened.
    counted: u64,
}

/// What [`RefusalLimiter::admit`] decided for one refusal.
#[derive(Debug, Default, PartialEq)]
pub struct Admitted {
    /// Write the refusal's own row (the first of its window).
    pub audit: bool,
    /// Summary rows of closed windows, to write now.
    pub summaries: Vec<AuditEntry>,
}

/// The refusal windows of one process (shared by every [`super::Coordinator`] a server
/// makes per request), and what they suppressed, for `/metrics`.
#[derive(Debug)]
pub struct RefusalLimiter {
    interval_ms: i64,
    per_window: u32,
    max_sources: usize,
    state: Mutex<State>,
    counted_total: AtomicU64,
    summaries_total: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    windows: HashMap<Key, Window>,
    /// Keys with a source address among `windows`.
    with_source: usize,
    /// When closed windows were last collected by an admit.
    last_scan: Millis,
}

impl Default for RefusalLimiter {
    fn default() -> RefusalLimiter {
        RefusalLimiter::new(REFUSAL_INTERVAL, MAX_SOURCES).with_rows_per_window(AUDITED_PER_WINDOW)
    }
}

impl RefusalLimiter {
    /// A limiter with windows of `interval`, at most `max_sources` keys with a source.
    pub fn new(interval: Duration, max_sources: usize) -> RefusalLimiter {
        RefusalLimiter {
            interval_ms: i64::try_from(interval.as_millis()).unwrap_or(i64::MAX).max(1),
            per_window: 1,
            max_sources: max_sources.max(1),
            state: Mutex::default(),
            counted_total: AtomicU64::new(0),
            summaries_total: AtomicU64::new(0),
        }
    }

    /// The same limiter auditing the first `n` refusals of each window one row each.
    pub fn with_rows_per_window(mut self, n: u32) -> RefusalLimiter {
        self.per_window = n.max(1);
        self
    }

    /// Refusals counted instead of audited, since the start.
    pub fn counted_total(&self) -> u64 {
        self.counted_total.load(Ordering::Relaxed)
    }

    /// Summary rows produced since the start.
    pub fn summaries_total(&self) -> u64 {
        self.summaries_total.load(Ordering::Relaxed)
    }

    /// Open windows now (bounded by about twice `max_sources`).
    pub fn windows(&self) -> usize {
        self.lock().windows.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decides for the refusal `entry` (already carrying its result code) from `source` at
    /// `now`: audit it, or count it; and hands back the summaries of windows that closed.
    pub fn admit(&self, source: IpAddr, entry: &AuditEntry, now: Millis) -> Admitted {
        let mut st = self.lock();
        let mut out = Admitted::default();
        // Closed windows are collected at most once a second here, so a flood does not
        // scan the whole map on every refusal; between scans only the key's own window is.
        if now - st.last_scan >= 1000 {
            st.last_scan = now;
            out.summaries = self.close(&mut st, now, false);
        }
        let mut key = Key {
            source: Some(source),
            project: entry.project.clone(),
            verb: entry.verb.clone(),
            code: entry.result.clone(),
        };
        if !st.windows.contains_key(&key) && st.with_source >= self.max_sources {
            // Full: the "many sources" bucket of this project, or of every project past
            // twice the cap (project names cost the caller nothing).
            key.source = None;
            if !st.windows.contains_key(&key) && st.windows.len() >= 2 * self.max_sources {
                key.project = "*".into();
            }
        }
        if let Some(w) = st.windows.get_mut(&key) {
            if now - w.opened_at < self.interval_ms {
                if w.audited < self.per_window {
                    w.audited += 1;
                    out.audit = true;
                    return out;
                }
                w.counted += 1;
                self.counted_total.fetch_add(1, Ordering::Relaxed);
                return out;
            }
            let w = st.windows.remove(&key).expect("just seen");
            out.summaries.extend(self.summary(&key, &w, now));
            if key.source.is_some() {
                st.with_source -= 1;
            }
        }
        if key.source.is_some() {
            st.with_source += 1;
        }
        st.windows.insert(key, Window { opened_at: now, audited: 1, counted: 0 });
        out.audit = true;
        out
    }

    /// Summaries of the windows closed at `now` (a periodic flush).
    pub fn due(&self, now: Millis) -> Vec<AuditEntry> {
        let mut st = self.lock();
        self.close(&mut st, now, false)
    }

    /// Summaries of every window with a count, closed or not (shutdown: the count is not
    /// lost with the process).
    pub fn drain(&self, now: Millis) -> Vec<AuditEntry> {
        let mut st = self.lock();
        self.close(&mut st, now, true)
    }

    /// Removes closed windows (every window with `all`) and returns their summaries.
    fn close(&self, st: &mut State, now: Millis, all: bool) -> Vec<AuditEntry> {
        let interval = self.interval_ms;
        let mut out = Vec::new();
        let mut freed = 0;
        st.windows.retain(|key, w| {
            if !all && now - w.opened_at < interval {
                return true;
            }
            out.extend(self.summary(key, w, now));
            freed += usize::from(key.source.is_some());
            false
        });
        st.with_source -= freed;
        out
    }

    /// The summary row of a closed window, if it counted anything.
    fn summary(&self, key: &Key, w: &Window, now: Millis) -> Option<AuditEntry> {
        if w.counted == 0 {
            return None;
        }
        self.summaries_total.fetch_add(1, Ordering::Relaxed);
        let source = key.source.map_or_else(|| MANY_SOURCES.to_string(), |s| s.to_string());
        Some(AuditEntry {
            at: now,
            project: if key.project == "*" { String::new() } else { key.project.clone() },
            verb: key.verb.clone(),
            actor: format!("source:{source}"),
            target: None,
            result: key.code.clone(),
            epoch: None,
            detail: json!({
                "summary": true,
                "refusals": w.counted,
                "source": source,
                "first_at": w.opened_at,
                "interval_ms": self.interval_ms,
                "all_projects": key.project == "*",
            }),
            request: None,
            reason: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(project: &str, verb: &str, code: &str) -> AuditEntry {
        AuditEntry {
            at: 0,
            project: project.into(),
            verb: verb.into(),
            actor: "anonymous".into(),
            target: None,
            result: code.into(),
            epoch: None,
            detail: json!({}),
            request: None,
            reason: None,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Issue 28 point 4: a flood of N refusals from one source writes the first rows and one
    /// summary with the rest's count per interval, not N rows.
    #[test]
    fn a_flood_is_one_row_and_one_summary_per_interval() {
        let l = RefusalLimiter::new(Duration::from_secs(10), 16);
        let e = refusal("p", "session.heartbeat", "unauthorized");
        let mut rows = 0;
        let mut summaries = Vec::new();
        for i in 0..1000 {
            let a = l.admit(ip("127.0.0.2"), &e, 5_000 + i);
            rows += usize::from(a.audit);
            summaries.extend(a.summaries);
        }
        assert_eq!((rows, summaries.len(), l.counted_total()), (1, 0, 999));
        // The next interval's first refusal closes the window: one summary, one new row.
        let a = l.admit(ip("127.0.0.2"), &e, 15_000);
        assert!(a.audit);
        assert_eq!(a.summaries.len(), 1);
        let s = &a.summaries[0];
        assert_eq!((s.detail["refusals"].as_u64(), s.result.as_str()), (Some(999), "unauthorized"));
        assert_eq!(
            (s.actor.as_str(), s.project.as_str(), s.verb.as_str()),
            ("source:127.0.0.2", "p", "session.heartbeat")
        );
        // Quiet afterwards: a window with nothing counted writes no summary.
        assert!(l.due(100_000).is_empty());
        assert_eq!(l.windows(), 0);
    }

    #[test]
    fn the_first_rows_of_a_window_keep_their_attribution() {
        let l = RefusalLimiter::new(Duration::from_secs(10), 16).with_rows_per_window(3);
        let e = refusal("p", "claim.take", "unauthorized");
        let audited: Vec<bool> = (0..5).map(|i| l.admit(ip("127.0.0.2"), &e, i).audit).collect();
        assert_eq!(audited, [true, true, true, false, false]);
        assert_eq!(l.drain(6)[0].detail["refusals"], 2);
    }

    #[test]
    fn keys_are_separate_and_a_periodic_flush_or_shutdown_keeps_the_count() {
        let l = RefusalLimiter::new(Duration::from_secs(10), 16);
        for (src, verb, code) in
            [("127.0.0.2", "a", "x"), ("127.0.0.3", "a", "x"), ("127.0.0.2", "b", "x"), ("127.0.0.2", "a", "y")]
        {
            assert!(l.admit(ip(src), &refusal("p", verb, code), 0).audit, "{src} {verb} {code} is a key of its own");
            assert!(!l.admit(ip(src), &refusal("p", verb, code), 1).audit);
        }
        assert!(l.due(9_999).is_empty(), "not closed yet");
        let closed = l.due(10_000);
        assert_eq!(closed.len(), 4);
        assert!(closed.iter().all(|s| s.detail["refusals"] == 1));
        // Shutdown drains open windows too.
        l.admit(ip("127.0.0.2"), &refusal("p", "a", "x"), 20_000);
        l.admit(ip("127.0.0.2"), &refusal("p", "a", "x"), 20_001);
        let drained = l.drain(20_002);
        assert_eq!(drained.len(), 1);
        assert_eq!(drained[0].detail["refusals"], 1);
        assert_eq!(l.windows(), 0);
    }

    /// Bounded memory: past the cap, sources share a per-project "many" bucket, and past
    /// twice the cap one bucket for every project.
    #[test]
    fn many_sources_and_projects_are_aggregated_within_the_cap() {
        let cap = 8;
        let l = RefusalLimiter::new(Duration::from_secs(10), cap);
        let mut rows = 0;
        for i in 0..200u32 {
            let src = IpAddr::from(std::net::Ipv4Addr::from(0x7f00_0000 + i));
            rows += usize::from(l.admit(src, &refusal(&format!("p{}", i % 50), "v", "unauthorized"), 0).audit);
        }
        assert!(l.windows() <= 2 * cap + 1, "{} windows", l.windows());
        assert!(rows <= 2 * cap + 1, "{rows} rows");
        let s = l.drain(1);
        let total: u64 = s.iter().map(|e| e.detail["refusals"].as_u64().unwrap()).sum();
        assert_eq!(total as usize + rows, 200, "every refusal is a row or in a count");
        assert!(s.iter().any(|e| e.actor == "source:many"));
    }
}
