//! Refusal audit rows, rate-limited (issue 28 point 4: "refusals are cheap and bounded";
//! issue 39 point 3: "whatever names they carry").
//!
//! Every refused verb is audited, and before this a flood of wrong tokens wrote one audit
//! row per request (2.9 MB/s into SQLite). A refusal that carries its source address (a
//! server request, [`RequestCtx::source`](super::engine::RequestCtx::source)) and that a caller without
//! credentials can provoke at will ([`limited`]: a wrong or missing token or key, a wrong
//! operator password, a seat over its rate) now goes through a [`RefusalLimiter`] first.
//! Refusals of proven callers (`stale_master`, `version_conflict`, ...) are decisions worth
//! a row each and stay one row each: their rate is bounded per seat instead.
//!
//! Windows are kept per (source, verb, code) and interval ([`REFUSAL_INTERVAL`]). The
//! project is not part of the key: project names are the caller's choice, and issue 39
//! measured 8,200 rows per 10 s from one source that varied them. A window names the first
//! [`PROJECTS_NAMED`] projects it saw and counts the rest.
//!
//! * the first [`AUDITED_PER_WINDOW`] refusals of a window are audited as before (actor,
//!   target and details: a mistyped token or a short incident keeps its full attribution),
//!   as long as the whole process has written fewer than [`ROWS_PER_INTERVAL`] such rows in
//!   the current interval (a flood from many addresses cannot buy a row per address);
//! * later ones are only counted;
//! * when a window has closed, its count is written in a summary row (`detail.refusals`):
//!   on its key's next refusal, by [`RefusalLimiter::due`] (a periodic flush: the server
//!   calls it every interval and on `/metrics` scrapes), and by [`RefusalLimiter::drain`]
//!   at shutdown. Of the windows closed at once, the [`SOURCES_NAMED`] with the largest
//!   counts per (verb, code) get a row naming their source; the others are summed into one
//!   `source:many` row.
//!
//! Memory is bounded: at most [`MAX_SOURCES`] windows carry a source address, each naming
//! at most [`PROJECTS_NAMED`] projects. Past that cap, a new source is counted in one
//! "many sources" window per (verb, code). Rows per interval are therefore bounded by
//! [`ROWS_PER_INTERVAL`] plus `SOURCES_NAMED + 1` summaries per (verb, code) and flush,
//! whatever the number of addresses and names.

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
/// Refusal rows of their own the whole process writes per interval; past it, every
/// refusal is counted into a summary (issue 39 point 3: 10,000 addresses must not buy
/// 10,000 rows).
pub const ROWS_PER_INTERVAL: u32 = 16;
/// Windows with their own source address; more are aggregated (see the module doc).
pub const MAX_SOURCES: usize = 4096;
/// Projects a window names in its summary; refusals naming others are only counted.
pub const PROJECTS_NAMED: usize = 4;
/// Sources per (verb, code) given a summary row of their own when windows close together;
/// the rest share one `source:many` row.
pub const SOURCES_NAMED: usize = 8;
/// The actor of a summary row for the aggregated sources.
pub const MANY_SOURCES: &str = "many";

/// Who a refusal window counts: one source address, or every source past the cap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    /// None: the "many sources" bucket.
    source: Option<IpAddr>,
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
    /// The first projects the window's refusals named (at most [`PROJECTS_NAMED`]).
    projects: Vec<String>,
    /// Refusals that named a project past those (a lower bound once windows are merged).
    other_projects: u64,
}

impl Window {
    fn new(opened_at: Millis) -> Window {
        Window { opened_at, audited: 0, counted: 0, projects: Vec::new(), other_projects: 0 }
    }

    /// Notes the project a refusal named: one of the first few, or only counted.
    fn saw(&mut self, project: &str) {
        if self.projects.iter().any(|p| p == project) {
            return;
        }
        if self.projects.len() < PROJECTS_NAMED {
            self.projects.push(project.to_string());
        } else {
            self.other_projects += 1;
        }
    }
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
    /// The process-wide row budget's interval: when it began, and rows written in it.
    rows_since: Millis,
    rows: u32,
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

    /// Open windows now (bounded by `max_sources` plus one per verb and code).
    pub fn windows(&self) -> usize {
        self.lock().windows.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes one row of the process-wide budget at `now`, if any is left.
    fn take_row(&self, st: &mut State, now: Millis) -> bool {
        if now - st.rows_since >= self.interval_ms {
            st.rows_since = now;
            st.rows = 0;
        }
        if st.rows >= ROWS_PER_INTERVAL {
            return false;
        }
        st.rows += 1;
        true
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
        let mut key = Key { source: Some(source), verb: entry.verb.clone(), code: entry.result.clone() };
        if !st.windows.contains_key(&key) && st.with_source >= self.max_sources {
            // Full: the "many sources" bucket of this verb and code.
            key.source = None;
        }
        if let Some(w) = st.windows.get(&key)
            && now - w.opened_at >= self.interval_ms
        {
            let w = st.windows.remove(&key).expect("just seen");
            let closed = self.summaries(vec![(key.clone(), w)], now);
            out.summaries.extend(closed);
            if key.source.is_some() {
                st.with_source -= 1;
            }
        }
        if !st.windows.contains_key(&key) {
            if key.source.is_some() {
                st.with_source += 1;
            }
            st.windows.insert(key.clone(), Window::new(now));
        }
        let window_has_room = st.windows.get(&key).is_some_and(|w| w.audited < self.per_window);
        let audit = window_has_room && self.take_row(&mut st, now);
        let w = st.windows.get_mut(&key).expect("just made");
        w.saw(&entry.project);
        if audit {
            w.audited += 1;
        } else {
            w.counted += 1;
            self.counted_total.fetch_add(1, Ordering::Relaxed);
        }
        out.audit = audit;
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
        let keys: Vec<Key> =
            st.windows.iter().filter(|(_, w)| all || now - w.opened_at >= interval).map(|(k, _)| k.clone()).collect();
        let mut closed = Vec::with_capacity(keys.len());
        for key in keys {
            let w = st.windows.remove(&key).expect("listed");
            if key.source.is_some() {
                st.with_source -= 1;
            }
            closed.push((key, w));
        }
        self.summaries(closed, now)
    }

    /// The summary rows of windows closed together: per (verb, code), the
    /// [`SOURCES_NAMED`] largest counts one row each, the others summed in one
    /// `source:many` row. Windows that counted nothing write nothing.
    fn summaries(&self, closed: Vec<(Key, Window)>, now: Millis) -> Vec<AuditEntry> {
        let mut groups: HashMap<(String, String), Vec<Closed>> = HashMap::new();
        for (key, w) in closed.into_iter().filter(|(_, w)| w.counted > 0) {
            groups.entry((key.verb, key.code)).or_default().push((key.source, w));
        }
        let mut out = Vec::new();
        for ((verb, code), mut windows) in groups {
            windows.sort_by_key(|(source, w)| (std::cmp::Reverse(w.counted), source.is_none()));
            let rest = if windows.len() > SOURCES_NAMED { windows.split_off(SOURCES_NAMED) } else { Vec::new() };
            // A "many sources" window never keeps a row of its own: it joins the rest.
            let (mut named, many): (Vec<_>, Vec<_>) = windows.into_iter().partition(|(s, _)| s.is_some());
            let rest: Vec<_> = rest.into_iter().chain(many).collect();
            if !rest.is_empty() {
                named.push((None, merge(rest)));
            }
            for (source, w) in named {
                out.push(self.summary(source, &verb, &code, &w, now));
            }
        }
        out
    }

    /// The summary row of one source's (or many sources') closed window.
    fn summary(&self, source: Option<IpAddr>, verb: &str, code: &str, w: &Window, now: Millis) -> AuditEntry {
        self.summaries_total.fetch_add(1, Ordering::Relaxed);
        let source = source.map_or_else(|| MANY_SOURCES.to_string(), |s| s.to_string());
        let one_project = (w.projects.len() == 1 && w.other_projects == 0).then(|| w.projects[0].clone());
        AuditEntry {
            at: now,
            project: one_project.clone().unwrap_or_default(),
            verb: verb.to_string(),
            actor: format!("source:{source}"),
            target: None,
            result: code.to_string(),
            epoch: None,
            detail: json!({
                "summary": true,
                "refusals": w.counted,
                "source": source,
                "first_at": w.opened_at,
                "interval_ms": self.interval_ms,
                "all_projects": one_project.is_none(),
                "projects": w.projects,
                "other_projects": w.other_projects,
            }),
            request: None,
            reason: None,
        }
    }
}

/// A closed window and its source (None: many sources).
type Closed = (Option<IpAddr>, Window);

/// Many closed windows as one: counts summed, the first projects kept.
fn merge(windows: Vec<Closed>) -> Window {
    let mut out = Window::new(windows.iter().map(|(_, w)| w.opened_at).min().unwrap_or_default());
    for (_, w) in windows {
        out.counted += w.counted;
        out.audited += w.audited;
        out.other_projects += w.other_projects;
        for p in &w.projects {
            out.saw(p);
        }
    }
    out
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

    /// Issue 39 point 3: one source varying the project name (8,200 rows per 10 s on main)
    /// writes its window's rows and one summary naming the first projects, not a row per
    /// name.
    #[test]
    fn varying_names_do_not_multiply_rows() {
        let l = RefusalLimiter::default();
        let mut rows = 0;
        for i in 0..8_200u32 {
            rows += usize::from(l.admit(ip("127.0.0.2"), &refusal(&format!("p{i}"), "admin", "unauthorized"), 0).audit);
        }
        assert_eq!((rows, l.windows()), (AUDITED_PER_WINDOW as usize, 1));
        let s = l.drain(1);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].detail["refusals"], 8_200 - u64::from(AUDITED_PER_WINDOW));
        assert_eq!(s[0].detail["projects"].as_array().unwrap().len(), PROJECTS_NAMED);
        assert_eq!((s[0].project.as_str(), &s[0].detail["all_projects"]), ("", &json!(true)));
    }

    /// Issue 39 point 3: 10,000 addresses (each a window of its own up to the cap) write at
    /// most the process-wide row budget, and their summaries are a bounded number of rows
    /// whose counts account for every refusal.
    #[test]
    fn many_addresses_cannot_buy_a_row_each() {
        let l = RefusalLimiter::default();
        let mut rows = 0;
        for i in 0..10_000u32 {
            let src = IpAddr::from(std::net::Ipv4Addr::from(0x7f00_0000 + i));
            rows += usize::from(
                l.admit(src, &refusal(&format!("p{i}"), "master.claim", "unauthorized"), i64::from(i) / 10).audit,
            );
        }
        assert_eq!(rows, ROWS_PER_INTERVAL as usize);
        assert!(l.windows() <= MAX_SOURCES + 1, "{}", l.windows());
        let s = l.drain(5_000);
        assert!(s.len() <= SOURCES_NAMED + 1, "{} summary rows", s.len());
        let total: u64 = s.iter().map(|e| e.detail["refusals"].as_u64().unwrap()).sum();
        assert_eq!(total as usize + rows, 10_000, "every refusal is a row or in a count");
        assert!(s.iter().any(|e| e.actor == "source:many"));
    }
}
