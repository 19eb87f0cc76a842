//! Every process that descends from the supervisor — the writer and anything it left
//! behind — and the proof that none is left (issue 21 item 1).
//!
//! # Why the writer's process group is not enough
//!
//! A writer's child can leave the group (`setsid`, `setpgid`, a double fork) and keep the
//! transcript open. If the supervisor seals once the *group* is empty, such a process can
//! append after the seal, the replacement takes over a proof that is about to be wrong, and
//! the transcript has two writers. So nothing is handed off while any descendant lives.
//!
//! # How absence is proven
//!
//! The supervisor is a child subreaper (`PR_SET_CHILD_SUBREAPER`): an orphaned descendant
//! is reparented to it, never to init, however it detached. Hence a supervisor with no child
//! at all has no descendant at all. [`any_left`] asks the kernel exactly that, atomically:
//! `waitid(P_ALL, WNOHANG|WNOWAIT|WEXITED|__WALL)` fails with `ECHILD` only when there is no
//! child, live or zombie. No `/proc` scan can give that answer without racing a fork.
//!
//! # How they are found and stopped
//!
//! [`Descendants::signal_new`] scans `/proc` for the tree below our pid and signals each
//! process once, through a pidfd opened and then re-checked against the process's start
//! time, so a pid reused by an unrelated process between scan and signal is never hit.
//! [`drain`] repeats that until the kernel says no child is left: a stop signal, the grace
//! period, then SIGKILL.
//!
//! # In an own pid namespace
//!
//! The tree is `launcher → init (PID 1 of the namespace) → writer …`. The namespace's
//! processes are visible here with the pids of our namespace, so the scan finds them as in
//! the shared one. The launcher and init are plumbing: they ignore stop signals and leave
//! on their own once the namespace is empty, so the stop signal skips them ([`Exempt`]) and
//! only SIGKILL reaches them — SIGKILL to init makes the kernel kill the whole namespace.
//!
//! What voids the proof: a descendant that is itself a subreaper keeps its orphans, but they
//! are still its children, so it stays alive (and visible) as long as they do; a process
//! started through a daemon outside our tree (systemd-run, a container runtime) was never a
//! descendant and nothing local can see it. Keep writers in one process tree.

use std::collections::{HashMap, HashSet};
use std::io;
use std::time::{Duration, Instant};

use crate::lockfile::identity::{start_ticks_from_stat, stat_fields};
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, getpid, pidfd_open, pidfd_send_signal};

/// `__WALL`: also wait for children created with an exit signal other than SIGCHLD.
const WALL: u32 = 0x4000_0000;

/// How often [`drain`] polls while descendants remain.
const POLL: Duration = Duration::from_millis(20);

/// True while the supervisor has any child, live or zombie (the reaper thread collects
/// zombies within milliseconds). `Err` when the kernel's answer is not the usual one: the
/// caller cannot prove anything and must fail closed.
pub fn any_left() -> io::Result<bool> {
    let opts =
        WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT | WaitIdOptions::EXITED | WaitIdOptions::from_bits_retain(WALL);
    match rustix::process::waitid(WaitId::All, opts) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::CHILD) => Ok(false),
        Err(rustix::io::Errno::INTR) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// A process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    ppid: i32,
    /// Clock ticks after boot: with the pid, a process identity that survives pid reuse.
    start: u64,
    zombie: bool,
}

/// Parses `/proc/<pid>/stat` (see [`stat_fields`]).
fn parse_stat(text: &str) -> Option<Stat> {
    let f = stat_fields(text)?;
    Some(Stat {
        zombie: *f.first()? == "Z",
        ppid: f.get(1)?.parse().ok()?,
        start: start_ticks_from_stat(text)?.parse().ok()?,
    })
}

fn read_stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every live process below `root` in `table` (pid → stat), in no particular order.
fn below(root: i32, table: &HashMap<i32, Stat>) -> Vec<(i32, Stat)> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for (&pid, st) in table {
        children.entry(st.ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).into_iter().flatten() {
            let st = table[&c];
            if !st.zombie {
                out.push((c, st));
            }
            stack.push(c);
        }
    }
    out
}

/// `/proc` must describe our own pid namespace: after `unshare --pid --fork` without
/// `--mount-proc`, it still shows the parent namespace, where our pid (often 1) names
/// another process — init — and the "tree below us" would be the whole machine. Then the
/// tree cannot be enumerated, and the caller fails closed instead of signalling strangers.
fn proc_is_ours() -> io::Result<()> {
    let me = getpid().as_raw_nonzero().get().to_string();
    match std::fs::read_link("/proc/self") {
        Ok(p) if p.as_os_str() == me.as_str() => Ok(()),
        Ok(p) => Err(io::Error::other(format!(
            "/proc belongs to another pid namespace (/proc/self is {}, our pid is {me}); mount a /proc for this namespace",
            p.display()
        ))),
        Err(e) => Err(io::Error::new(e.kind(), format!("/proc/self: {e}"))),
    }
}

fn proc_table() -> io::Result<HashMap<i32, Stat>> {
    proc_is_ours()?;
    let mut table = HashMap::new();
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        // A process that exited since the listing simply has no stat any more.
        if let Some(st) = read_stat(pid) {
            table.insert(pid, st);
        }
    }
    Ok(table)
}

/// The pid-namespace launcher (own namespace only): it and its direct children (init) get
/// no stop signal, only SIGKILL (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exempt(pub Option<u32>);

impl Exempt {
    fn covers(self, pid: i32, st: &Stat) -> bool {
        self.0.is_some_and(|l| l as i32 == pid || l as i32 == st.ppid)
    }
}

/// The descendants signalled so far, each once per signal.
#[derive(Debug, Default)]
pub struct Descendants {
    signalled: HashSet<(i32, u64, i32)>,
    exempt: Exempt,
}

impl Descendants {
    /// Tracks the descendants of this process, with `exempt` spared every signal but SIGKILL.
    pub fn new(exempt: Exempt) -> Descendants {
        Descendants { signalled: HashSet::new(), exempt }
    }

    /// Sends `sig` to every live descendant not yet sent `sig`; returns how many were hit.
    pub fn signal_new(&mut self, sig: Signal) -> io::Result<usize> {
        let me = getpid().as_raw_nonzero().get();
        let mut hit = 0;
        for (pid, st) in below(me, &proc_table()?) {
            if self.signalled.contains(&(pid, st.start, sig.as_raw())) {
                continue;
            }
            if sig != Signal::KILL && self.exempt.covers(pid, &st) {
                continue;
            }
            if signal_exact(pid, st.start, sig) {
                hit += 1;
            }
            self.signalled.insert((pid, st.start, sig.as_raw()));
        }
        Ok(hit)
    }
}

/// Signals process `pid` only if it is still the process that started at `start`: the pidfd
/// pins the pid, so once the start time read *after* opening it matches, the signal cannot
/// reach a process that reused the number.
fn signal_exact(pid: i32, start: u64, sig: Signal) -> bool {
    let Some(p) = Pid::from_raw(pid) else { return false };
    let Ok(fd) = pidfd_open(p, PidfdFlags::empty()) else { return false };
    match read_stat(pid) {
        Some(st) if st.start == start && !st.zombie => pidfd_send_signal(&fd, sig).is_ok(),
        _ => false,
    }
}

/// How a [`drain`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// No descendant was left to stop.
    Nothing,
    /// Every descendant exited after the stop signal, within the deadline.
    Stopped(usize),
    /// Some ignored the stop past the deadline and were killed; all are gone now.
    Killed(usize),
}

/// Why a [`drain`] could not prove the tree empty.
#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    /// Killed, yet still present after `after_kill` (uninterruptible sleep, a hung mount).
    #[error("{0} descendant process(es) of the writer survived SIGKILL")]
    Survived(usize),
    /// The kernel or /proc did not answer as expected.
    #[error("cannot enumerate the writer's descendants: {0}")]
    Unprovable(#[source] io::Error),
}

/// Stops every descendant: `stop` (then SIGCONT, so a job-control-stopped one can act on
/// it) to each as it is found, until `deadline`; then SIGKILL until none is left or
/// `after_kill` has passed. Succeeds only once the kernel says no child is left.
pub fn drain(stop: Signal, deadline: Instant, after_kill: Duration, exempt: Exempt) -> Result<Drained, DrainError> {
    let unprovable = DrainError::Unprovable;
    if !any_left().map_err(unprovable)? {
        return Ok(Drained::Nothing);
    }
    let mut d = Descendants::new(exempt);
    let mut stopped = 0;
    while Instant::now() < deadline {
        stopped += d.signal_new(stop).map_err(unprovable)?;
        d.signal_new(Signal::CONT).map_err(unprovable)?;
        std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        if !any_left().map_err(unprovable)? {
            return Ok(Drained::Stopped(stopped));
        }
    }
    let kill_until = Instant::now() + after_kill;
    let mut killed = 0;
    loop {
        // SIGKILL is sent again to processes found again: it cannot hurt, and a process
        // that was mid-fork when first killed may have left a child.
        let mut fresh = Descendants::new(exempt);
        killed = killed.max(fresh.signal_new(Signal::KILL).map_err(unprovable)?);
        std::thread::sleep(POLL);
        if !any_left().map_err(unprovable)? {
            return Ok(Drained::Killed(killed));
        }
        if Instant::now() >= kill_until {
            let left = below(getpid().as_raw_nonzero().get(), &proc_table().map_err(unprovable)?).len();
            return Err(DrainError::Survived(left.max(1)));
        }
    }
}

/// After a [`drain`] failed — survivors of SIGKILL (uninterruptible sleep: a hung network
/// mount, a stuck disk) or a tree that could not be enumerated — the supervisor stays: it
/// keeps its lock, SIGKILLs again every `pause`, and reports (`report(alive)` when the count
/// changes, and every 60 rounds), until the kernel says no child is left (issue 27 item 3).
/// A process in `D` state may still complete a write when it wakes, so exiting earlier
/// would leave a lock whose holder is gone while a write may be in flight.
pub fn wait_out_survivors(exempt: Exempt, pause: Duration, report: &mut dyn FnMut(usize)) -> usize {
    // An error from the kernel proves nothing is gone: keep waiting.
    let left = || any_left().unwrap_or(true);
    let kill = || {
        let alive = proc_table().map(|t| below(getpid().as_raw_nonzero().get(), &t).len()).unwrap_or(0);
        let _ = Descendants::new(exempt).signal_new(Signal::KILL);
        alive
    };
    wait_out(left, kill, || std::thread::sleep(pause), report)
}

/// [`wait_out_survivors`]' loop, with its probes passed in (for the unit test).
fn wait_out(
    mut left: impl FnMut() -> bool,
    mut kill: impl FnMut() -> usize,
    mut pause: impl FnMut(),
    report: &mut dyn FnMut(usize),
) -> usize {
    let mut rounds = 0;
    let mut last = None;
    while left() {
        let alive = kill();
        if last != Some(alive) || rounds % 60 == 0 {
            report(alive);
            last = Some(alive);
        }
        pause();
        rounds += 1;
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survivors_are_waited_out_re_killed_every_round_and_reported_on_change() {
        let mut alive = vec![2usize, 2, 1, 1, 1, 0];
        let mut kills = 0;
        let mut reports = Vec::new();
        let rounds = {
            let alive_now = std::cell::RefCell::new(&mut alive);
            wait_out(
                || alive_now.borrow()[0] > 0,
                || {
                    kills += 1;
                    let n = alive_now.borrow()[0];
                    alive_now.borrow_mut().remove(0);
                    n
                },
                || {},
                &mut |n| reports.push(n),
            )
        };
        assert_eq!(rounds, 5, "the loop ends only once nothing is left");
        assert_eq!(kills, 5, "SIGKILL again every round");
        assert_eq!(reports, vec![2, 1], "a report when the count changes");
    }

    #[test]
    fn stat_lines_parse_from_the_last_parenthesis() {
        let line = "4242 (we(ird) na)me) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(line), Some(Stat { ppid: 17, start: 987654, zombie: false }));
        let z = "7 (sh) Z 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert_eq!(parse_stat(z), Some(Stat { ppid: 1, start: 55, zombie: true }));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_tree_below_a_root_skips_zombies_but_walks_through_them() {
        let st = |ppid, zombie| Stat { ppid, start: 1, zombie };
        let table: HashMap<i32, Stat> = [
            (10, st(1, false)),  // us
            (11, st(10, false)), // the writer
            (12, st(11, true)),  // a zombie child of the writer
            (13, st(12, false)), // (only possible transiently) a child below the zombie
            (14, st(10, false)), // an orphan reparented to us
            (20, st(1, false)),  // unrelated
            (21, st(20, false)), // unrelated
        ]
        .into_iter()
        .collect();
        let mut got: Vec<i32> = below(10, &table).into_iter().map(|(p, _)| p).collect();
        got.sort();
        assert_eq!(got, vec![11, 13, 14]);
    }

    #[test]
    fn the_launcher_and_init_are_exempt_from_stop_signals_only() {
        let st = |ppid| Stat { ppid, start: 1, zombie: false };
        let e = Exempt(Some(11));
        assert!(e.covers(11, &st(10)), "the launcher");
        assert!(e.covers(12, &st(11)), "init, its child");
        assert!(!e.covers(13, &st(12)), "the writer, init's child");
        assert!(!Exempt(None).covers(11, &st(10)), "shared namespace: nothing is exempt");
    }

    #[test]
    fn proc_describes_our_own_pid_namespace_here() {
        proc_is_ours().expect("the test runs with its own /proc");
    }

    #[test]
    fn our_own_stat_parses_and_names_our_parent() {
        let me = getpid().as_raw_nonzero().get();
        let st = read_stat(me).expect("own /proc stat");
        assert_eq!(Some(st.ppid), rustix::process::getppid().map(|p| p.as_raw_nonzero().get()));
        assert!(!st.zombie);
    }
}
