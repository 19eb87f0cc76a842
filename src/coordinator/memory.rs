//! The memory budget `coordinator serve` keeps (issue 39 point 1: 20 wrong-password
//! claims took a server from 13 to 357 MiB, past the 256 MiB limit of the shipped
//! Kubernetes manifest, and it was OOM-killed).
//!
//! What the budget bounds, and how:
//!
//! * **Password hashing**, by construction: [`MemoryBudget::hashing_bytes`] (half the
//!   budget) sizes the argon2 permits (`budget::argon2_permits`: no more than the cores, no
//!   more than that share holds at 19 MiB each, at least one), and each permit owns its
//!   19 MiB buffer from the start. Hashing memory is then fixed whatever arrives.
//! * **Request heads**, by construction: hyper's read buffer is capped per connection
//!   (`server::MAX_HEAD_BYTES`), and connections are capped (`--max-connections`).
//! * **Everything else**, by refusal: a request that arrives while the resident set is above
//!   [`HIGH_WATER_PERCENT`] of the budget ([`MemoryGuard::over`], a read of
//!   `/proc/self/status` at most every [`RSS_RECHECK`]) is answered 503
//!   `coordinator_unavailable` at once, before its body is read; `/livez` and `/readyz`
//!   still answer, and the probe listener is not refused at all.
//!
//! Where the budget comes from ([`MemoryBudget::derive`]), first that applies:
//!
//! 1. `--memory-budget BYTES` (a number of bytes, or with `Ki`, `Mi`, `Gi` or `Ti`);
//! 2. [`CGROUP_SHARE_PERCENT`] of the memory limit of the cgroup the process runs in: the
//!    smallest `memory.max` (cgroup v2) or `memory.limit_in_bytes` (v1) of its cgroup and
//!    its ancestors, as `/proc/self/cgroup` names them under `/sys/fs/cgroup` (what a
//!    Kubernetes memory limit or a systemd `MemoryMax=` sets); the rest is left for what
//!    the kernel counts against the cgroup besides our resident set (page cache of the
//!    SQLite file, socket buffers);
//! 3. [`DEFAULT_MEMORY_BUDGET`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MIB: u64 = 1024 * 1024;

/// The budget when no flag is given and no cgroup limit is found.
pub const DEFAULT_MEMORY_BUDGET: u64 = 512 * MIB;
/// The smallest `--memory-budget` accepted: an idle server over SQLite is ~15 MiB resident,
/// plus one argon2 permit's 19 MiB, with room for requests under the high-water mark.
pub const MIN_MEMORY_BUDGET: u64 = 64 * MIB;
/// Share of a cgroup memory limit taken as the budget.
pub const CGROUP_SHARE_PERCENT: u64 = 80;
/// Share of the budget for argon2 memory (the permits' buffers).
pub const HASHING_SHARE_PERCENT: u64 = 50;
/// Resident share of the budget past which requests are refused.
pub const HIGH_WATER_PERCENT: u64 = 90;
/// Share of the budget for open connections (see [`MemoryBudget::connections`]).
pub const CONNECTION_SHARE_PERCENT: u64 = 40;
/// What one open connection is reckoned to cost: hyper's read buffer (at most 16 KiB), its
/// task, the request and its handler's future. Measured at about 34 KiB each in the abuse
/// bench's `queue_jump` at 5x (4,900 connections holding a queued `master claim`: 168 MiB
/// over the idle server), rounded up.
pub const CONNECTION_MEMORY_BYTES: u64 = 48 * 1024;
/// How old a resident-set reading may be when a request is checked against it.
pub const RSS_RECHECK: Duration = Duration::from_millis(20);

/// `percent`% of `bytes`, rounded down.
fn share(bytes: u64, percent: u64) -> u64 {
    u64::try_from(u128::from(bytes) * u128::from(percent) / 100).unwrap_or(u64::MAX)
}

/// A memory limit read from the cgroup file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLimit {
    /// 1 or 2.
    pub version: u8,
    /// The limit in bytes.
    pub bytes: u64,
    /// The file it was read from.
    pub file: PathBuf,
}

/// Where the budget came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetSource {
    /// `--memory-budget`.
    Flag,
    /// [`CGROUP_SHARE_PERCENT`] of this limit.
    Cgroup(CgroupLimit),
    /// [`DEFAULT_MEMORY_BUDGET`]: no flag, no cgroup limit.
    Default,
}

/// The memory budget and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes the server keeps its resident set under.
    pub bytes: u64,
    /// How [`MemoryBudget::bytes`] was decided.
    pub source: BudgetSource,
    /// The cgroup limit found (also when the flag decided), to warn about a budget above it.
    pub cgroup: Option<CgroupLimit>,
}

impl MemoryBudget {
    /// The budget from the flag, else from the cgroup limit, else the default (see the
    /// module doc).
    pub fn derive(flag: Option<u64>, cgroup: Option<CgroupLimit>) -> MemoryBudget {
        let (bytes, source) = match (flag, &cgroup) {
            (Some(b), _) => (b, BudgetSource::Flag),
            (None, Some(c)) => (share(c.bytes, CGROUP_SHARE_PERCENT), BudgetSource::Cgroup(c.clone())),
            (None, None) => (DEFAULT_MEMORY_BUDGET, BudgetSource::Default),
        };
        MemoryBudget { bytes, source, cgroup }
    }

    /// [`MemoryBudget::derive`] with this process's cgroup limit.
    pub fn detect(flag: Option<u64>) -> MemoryBudget {
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        MemoryBudget::derive(flag, cgroup_limit(Path::new("/sys/fs/cgroup"), &own))
    }

    /// The default budget (no flag, no cgroup looked at): a router built without a server.
    pub fn fallback() -> MemoryBudget {
        MemoryBudget::derive(None, None)
    }

    /// The share for argon2 memory ([`HASHING_SHARE_PERCENT`]).
    pub fn hashing_bytes(&self) -> u64 {
        share(self.bytes, HASHING_SHARE_PERCENT)
    }

    /// The resident size past which requests are refused ([`HIGH_WATER_PERCENT`]).
    pub fn high_water(&self) -> u64 {
        share(self.bytes, HIGH_WATER_PERCENT)
    }

    /// The open connections that fit in [`CONNECTION_SHARE_PERCENT`] of the budget at
    /// [`CONNECTION_MEMORY_BYTES`] each (at least 16): `--max-connections` is lowered to it.
    /// Without this, a cap past what the budget holds turns a flood into 503s for everyone
    /// (the high-water refusal) instead of evictions of the flood's own connections: at 10x
    /// the abuse bench's `queue_jump` asks 10,240 connections of a 256 MiB budget.
    pub fn connections(&self) -> usize {
        usize::try_from(share(self.bytes, CONNECTION_SHARE_PERCENT) / CONNECTION_MEMORY_BYTES)
            .unwrap_or(usize::MAX)
            .max(16)
    }

    /// How the budget was decided, for the start log.
    pub fn describe(&self) -> String {
        match &self.source {
            BudgetSource::Flag => "--memory-budget".to_string(),
            BudgetSource::Cgroup(c) => format!(
                "{CGROUP_SHARE_PERCENT}% of the cgroup v{} memory limit of {} bytes ({})",
                c.version,
                c.bytes,
                c.file.display()
            ),
            BudgetSource::Default => {
                format!(
                    "the default {} MiB: no --memory-budget and no cgroup memory limit",
                    DEFAULT_MEMORY_BUDGET / MIB
                )
            }
        }
    }
}

/// Parses `--memory-budget`: a number of bytes, or a number with `Ki`, `Mi`, `Gi` or `Ti`
/// (powers of 1024, as Kubernetes writes them), at least [`MIN_MEMORY_BUDGET`].
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits);
    let shift = match suffix {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        "Ti" => 40,
        other => return Err(format!("unknown unit {other:?}: write bytes, or a number with Ki, Mi, Gi or Ti")),
    };
    let n: u64 = number.parse().map_err(|_| format!("{s:?} is not a size: write e.g. 256Mi or 268435456"))?;
    let bytes = n.checked_mul(1u64 << shift).ok_or_else(|| format!("{s} is too large"))?;
    if bytes < MIN_MEMORY_BUDGET {
        return Err(format!("{s} is below the smallest budget, {}Mi", MIN_MEMORY_BUDGET / MIB));
    }
    Ok(bytes)
}

/// A cgroup v2 `memory.max`: bytes, or `max` (no limit: None).
fn parse_memory_max(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// A cgroup v1 `memory.limit_in_bytes`: bytes; "no limit" is the largest page-aligned
/// counter (9223372036854771712 on 4 KiB pages), so anything from 2^62 up is None.
fn parse_limit_in_bytes(s: &str) -> Option<u64> {
    s.trim().parse().ok().filter(|&n: &u64| n < 1 << 62)
}

/// The memory limit that applies to the process whose `/proc/self/cgroup` is
/// `proc_self_cgroup`, with the cgroup file system mounted at `root`: the smallest limit of
/// its cgroup and every ancestor (a limit on a parent slice bounds it too). cgroup v2 first
/// (the `0::PATH` line, `memory.max` under `root`); then v1 (the line naming the `memory`
/// controller, `memory.limit_in_bytes` under `root/memory`). None when no file says a limit.
pub fn cgroup_limit(root: &Path, proc_self_cgroup: &str) -> Option<CgroupLimit> {
    let path_of = |wanted: &dyn Fn(&str) -> bool| {
        proc_self_cgroup.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            wanted(controllers).then(|| path.to_string())
        })
    };
    let v2 =
        path_of(&|c| c.is_empty()).and_then(|p| smallest(&root.join(rel(&p)), root, "memory.max", parse_memory_max));
    let v1 = || {
        let base = root.join("memory");
        let p = path_of(&|c| c.split(',').any(|c| c == "memory"))?;
        smallest(&base.join(rel(&p)), &base, "memory.limit_in_bytes", parse_limit_in_bytes)
    };
    match v2 {
        Some((bytes, file)) => Some(CgroupLimit { version: 2, bytes, file }),
        None => v1().map(|(bytes, file)| CgroupLimit { version: 1, bytes, file }),
    }
}

/// A cgroup path from `/proc/self/cgroup`, relative (for joining under the mount).
fn rel(p: &str) -> &Path {
    Path::new(p.trim_start_matches('/'))
}

/// The smallest limit `parse` finds in `file` of `dir` and of each of its ancestors up to
/// `top` (included), with the file it came from.
fn smallest(dir: &Path, top: &Path, file: &str, parse: fn(&str) -> Option<u64>) -> Option<(u64, PathBuf)> {
    let mut best: Option<(u64, PathBuf)> = None;
    for d in dir.ancestors() {
        let f = d.join(file);
        if let Some(n) = std::fs::read_to_string(&f).ok().and_then(|s| parse(&s))
            && best.as_ref().is_none_or(|(b, _)| n < *b)
        {
            best = Some((n, f));
        }
        if d == top {
            break;
        }
    }
    best
}

/// This process's resident set in bytes (`VmRSS` of `/proc/self/status`, in KiB there).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 =
        status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// The budget as the request path checks it: the resident set, read at most every
/// [`RSS_RECHECK`], against the high-water mark.
#[derive(Debug)]
pub struct MemoryGuard {
    budget: MemoryBudget,
    started: Instant,
    /// The last reading, and when (milliseconds since `started`, plus one: 0 is "never").
    rss: AtomicU64,
    read_at_ms: AtomicU64,
    /// Requests refused for memory.
    refused: AtomicU64,
}

impl MemoryGuard {
    /// A guard for `budget`.
    pub fn new(budget: MemoryBudget) -> MemoryGuard {
        MemoryGuard {
            budget,
            started: Instant::now(),
            rss: AtomicU64::new(0),
            read_at_ms: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// The budget.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// The resident set now (a fresh reading, also kept for [`MemoryGuard::over`]); 0 when
    /// `/proc` cannot say.
    pub fn resident(&self) -> u64 {
        let rss = resident_bytes().unwrap_or(0);
        self.rss.store(rss, Ordering::Relaxed);
        self.read_at_ms.store(self.started.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
        rss
    }

    /// The resident set when it is above the high-water mark (and counts a refusal), None
    /// otherwise. A reading younger than [`RSS_RECHECK`] is reused: under a flood this is
    /// one small read of `/proc` per interval, not one per request. When `/proc` cannot be
    /// read (no procfs), nothing is refused: the other bounds still hold.
    pub fn over(&self) -> Option<u64> {
        let now_ms = self.started.elapsed().as_millis() as u64 + 1;
        let at = self.read_at_ms.load(Ordering::Relaxed);
        let rss = if at == 0 || now_ms.saturating_sub(at) >= RSS_RECHECK.as_millis() as u64 {
            self.resident()
        } else {
            self.rss.load(Ordering::Relaxed)
        };
        (rss > self.budget.high_water()).then(|| {
            self.refused.fetch_add(1, Ordering::Relaxed);
            rss
        })
    }

    /// Requests refused for memory so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units_and_a_floor() {
        assert_eq!(parse_size("256Mi"), Ok(256 * MIB));
        assert_eq!(parse_size("1Gi"), Ok(1024 * MIB));
        assert_eq!(parse_size("2Ti"), Ok(2 << 40));
        assert_eq!(parse_size("268435456"), Ok(256 * MIB));
        assert_eq!(parse_size(" 65536Ki "), Ok(64 * MIB));
        for bad in ["", "Mi", "256M", "256MB", "256 Mi", "-1Gi", "1.5Gi", "99999999999Ti"] {
            assert!(parse_size(bad).is_err(), "{bad:?} parsed");
        }
        assert!(parse_size("63Mi").unwrap_err().contains("below the smallest budget"));
    }

    #[test]
    fn cgroup_files_parse_max_and_unlimited_as_none() {
        assert_eq!(parse_memory_max("max\n"), None);
        assert_eq!(parse_memory_max("268435456\n"), Some(256 * MIB));
        assert_eq!(parse_memory_max("garbage"), None);
        assert_eq!(parse_limit_in_bytes("9223372036854771712\n"), None, "v1's 'no limit'");
        assert_eq!(parse_limit_in_bytes("536870912\n"), Some(512 * MIB));
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let f = root.join(rel);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    }

    /// A container (cgroup namespace: its own cgroup is `/`), a systemd service (a limit
    /// on the unit and a smaller one on its slice), v1, and no limit at all.
    #[test]
    fn the_cgroup_limit_is_the_smallest_of_the_cgroup_and_its_ancestors() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        write(root, "memory.max", "268435456\n");
        assert_eq!(
            cgroup_limit(root, "0::/\n"),
            Some(CgroupLimit { version: 2, bytes: 256 * MIB, file: root.join("memory.max") })
        );
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        write(root, "system.slice/memory.max", "201326592\n");
        write(root, "system.slice/w.service/memory.max", "268435456\n");
        let own = "0::/system.slice/w.service\n";
        assert_eq!(cgroup_limit(root, own).map(|c| c.bytes), Some(192 * MIB), "the slice's smaller limit");
        write(root, "system.slice/memory.max", "max\n");
        assert_eq!(cgroup_limit(root, own).map(|c| (c.version, c.bytes)), Some((2, 256 * MIB)));
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        write(root, "memory/pod/memory.limit_in_bytes", "536870912\n");
        write(root, "memory/memory.limit_in_bytes", "9223372036854771712\n");
        let own = "12:pids:/pod\n4:memory:/pod\n0::/\n";
        assert_eq!(
            cgroup_limit(root, own),
            Some(CgroupLimit { version: 1, bytes: 512 * MIB, file: root.join("memory/pod/memory.limit_in_bytes") })
        );
        write(root, "memory/pod/memory.limit_in_bytes", "9223372036854771712\n");
        assert_eq!(cgroup_limit(root, own), None, "unlimited everywhere");
        assert_eq!(cgroup_limit(root, ""), None, "no /proc/self/cgroup");
    }

    #[test]
    fn the_budget_is_the_flag_else_a_share_of_the_cgroup_limit_else_the_default() {
        let limit = CgroupLimit { version: 2, bytes: 256 * MIB, file: "/sys/fs/cgroup/memory.max".into() };
        let flag = MemoryBudget::derive(Some(100 * MIB), Some(limit.clone()));
        assert_eq!((flag.bytes, &flag.source), (100 * MIB, &BudgetSource::Flag));
        let derived = MemoryBudget::derive(None, Some(limit.clone()));
        assert_eq!(derived.bytes, 256 * MIB * 4 / 5);
        assert!(
            derived.describe().contains("80% of the cgroup v2 memory limit of 268435456 bytes"),
            "{}",
            derived.describe()
        );
        let default = MemoryBudget::derive(None, None);
        assert_eq!((default.bytes, &default.source), (DEFAULT_MEMORY_BUDGET, &BudgetSource::Default));
        assert_eq!(derived.hashing_bytes(), derived.bytes / 2);
        assert_eq!(derived.high_water(), derived.bytes * 9 / 10);
    }

    /// The shipped manifest's 256 MiB limit (a 204.8 MiB budget) holds the default 1024
    /// connections with room; the default budget more; a tiny one still serves some.
    #[test]
    fn the_connections_a_budget_holds() {
        let manifest = MemoryBudget::derive(None, Some(CgroupLimit { version: 2, bytes: 256 * MIB, file: "x".into() }));
        assert_eq!(manifest.connections(), 1747);
        assert_eq!(MemoryBudget::derive(None, None).connections(), 4369);
        assert_eq!(MemoryBudget::derive(Some(256 * MIB), None).connections(), 2184);
        assert_eq!(MemoryBudget::derive(Some(MIB), None).connections(), 16);
    }

    #[test]
    fn the_guard_refuses_above_the_high_water_mark_only() {
        let rss = resident_bytes().expect("procfs");
        assert!(rss > 0);
        let roomy = MemoryGuard::new(MemoryBudget::derive(Some(rss * 100), None));
        assert_eq!((roomy.over(), roomy.refused()), (None, 0));
        let tight = MemoryGuard::new(MemoryBudget::derive(Some(rss / 2), None));
        assert!(tight.over().is_some_and(|r| r > rss / 2));
        assert_eq!(tight.refused(), 1);
    }
}
