//! The vocabulary of `writerctl doctor` (issue 30 point 4): one [`Check`] per thing looked
//! at, each with a [`Verdict`], what was found and what to do about it.
//!
//! The checks themselves live beside what they judge, and reuse its rules rather than
//! restating them: [`crate::lockfile::diagnose`] (the lock directory's filesystem, who may
//! change R/tmp and the lock directory, every lock `status` calls stale, fenced, in
//! transition or malformed) and [`crate::coordinator::diagnose`] (reachability, `/readyz`,
//! the store, the clock, the TLS certificate, open registration). Every check only reads:
//! a doctor run on a production directory changes nothing in it.

use serde::Serialize;

/// How a check came out. Ordered: the worst verdict of a run is its maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing to do.
    Ok,
    /// Works, but something deserves a look (a stale lock plain `acquire` reclaims, a
    /// degraded audit plane, a certificate that expires soon).
    Warn,
    /// Something an operator must fix: a fenced or malformed lock, a refused filesystem,
    /// an unreachable coordinator.
    Fail,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable dotted name (`filesystem`, `lock.<session id>`, `coordinator.ready`, ...).
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What was found, in one sentence.
    pub detail: String,
    /// What to do next (`None` when nothing).
    pub hint: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check { name: name.into(), verdict: Verdict::Ok, detail: detail.into(), hint: None }
    }

    /// A check with a verdict and a hint.
    pub fn with(
        name: impl Into<String>,
        verdict: Verdict,
        detail: impl Into<String>,
        hint: impl Into<String>,
    ) -> Check {
        Check { name: name.into(), verdict, detail: detail.into(), hint: Some(hint.into()) }
    }

    /// This check with `prefix` (what was looked at) in front of its detail.
    pub fn with_detail_prefix(mut self, prefix: &str) -> Check {
        self.detail = format!("{prefix}: {}", self.detail);
        self
    }
}

/// What `doctor --json` prints: the worst verdict and every check, in the order run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The worst verdict of all checks (`ok` when there are none).
    pub verdict: Verdict,
    /// Every check.
    pub checks: Vec<Check>,
}

impl Report {
    /// The report of `checks`.
    pub fn of(checks: Vec<Check>) -> Report {
        let verdict = checks.iter().map(|c| c.verdict).max().unwrap_or(Verdict::Ok);
        Report { verdict, checks }
    }

    /// The names of the checks that failed.
    pub fn failed(&self) -> Vec<&str> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Fail).map(|c| c.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_verdict_is_the_worst_check() {
        assert_eq!(Report::of(vec![]).verdict, Verdict::Ok);
        let warn = Check::with("a", Verdict::Warn, "w", "h");
        let fail = Check::with("b", Verdict::Fail, "f", "h");
        let r = Report::of(vec![Check::ok("o", "fine"), warn.clone()]);
        assert_eq!(r.verdict, Verdict::Warn);
        assert!(r.failed().is_empty());
        let r = Report::of(vec![fail, warn, Check::ok("o", "fine")]);
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(r.failed(), vec!["b"]);
        assert_eq!(serde_json::to_value(Verdict::Warn).unwrap(), "warn");
    }
}
