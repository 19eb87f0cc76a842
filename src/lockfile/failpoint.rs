//! Failpoints: named seams between two syscalls of a protocol step, compiled in only for
//! tests, debug builds (so the integration tests' binary can be crashed at any of them) and
//! the `failpoints` feature. In release builds `failpoint!` expands to nothing, so the
//! seam costs nothing.
//!
//! Two ways to arm one:
//!
//! * in unit tests, [`set_hook`] runs a closure at the named point on the current thread (e.g.
//!   create a transition claim file exactly between an install and the second transition claim
//!   check);
//! * in a binary built with `--features failpoints`, `WRITERCTL_FAILPOINTS=name=action[,…]`
//!   where action is `abort` (crash), `kill` (SIGKILL to self), `error` (return an I/O
//!   error, as if the next syscall failed) or `pause:PATH` (create `PATH.reached`, then wait
//!   until `PATH` exists).

#[cfg(any(test, debug_assertions, feature = "failpoints"))]
mod imp {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::io;

    type Hook = Box<dyn Fn() -> io::Result<()>>;

    thread_local! {
        static HOOKS: RefCell<HashMap<&'static str, Hook>> = RefCell::new(HashMap::new());
    }

    /// Runs `f` whenever the current thread reaches failpoint `name`.
    pub fn set_hook(name: &'static str, f: impl Fn() -> io::Result<()> + 'static) {
        HOOKS.with(|h| h.borrow_mut().insert(name, Box::new(f)));
    }

    /// Removes every hook and syscall fault of the current thread.
    pub fn clear_hooks() {
        HOOKS.with(|h| h.borrow_mut().clear());
        FAULTS.with(|f| f.borrow_mut().clear());
    }

    /// When an injected syscall error happens relative to the real call.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum When {
        /// The call is not made; the error is returned.
        Before,
        /// The call is made and takes effect, then the error is returned (the ambiguous
        /// "error after effect" of network filesystems).
        After,
    }

    #[derive(Debug, Clone)]
    struct Fault {
        op: &'static str,
        target_suffix: String,
        when: When,
        errno: i32,
        remaining: u32,
    }

    thread_local! {
        static FAULTS: RefCell<Vec<Fault>> = const { RefCell::new(Vec::new()) };
    }

    /// Makes the next `times` calls of `op` (`link`, `rename`, `unlink`) on this thread whose
    /// target name ends with `target_suffix` fail with `errno`, before or after the effect.
    pub fn inject_syscall(op: &'static str, target_suffix: &str, when: When, errno: i32, times: u32) {
        FAULTS.with(|f| {
            f.borrow_mut().push(Fault { op, target_suffix: target_suffix.to_owned(), when, errno, remaining: times })
        });
    }

    /// Consulted by `sys::Dir` before a mutating syscall.
    pub fn syscall_fault(op: &'static str, target: &std::ffi::OsStr) -> Option<(When, io::Error)> {
        let target = target.to_string_lossy();
        FAULTS.with(|f| {
            let mut faults = f.borrow_mut();
            let hit =
                faults.iter_mut().find(|x| x.op == op && x.remaining > 0 && target.ends_with(&x.target_suffix))?;
            hit.remaining -= 1;
            Some((hit.when, io::Error::from_raw_os_error(hit.errno)))
        })
    }

    /// Called by [`failpoint!`](crate::failpoint).
    pub fn hit(name: &'static str) -> io::Result<()> {
        let hooked = HOOKS.with(|h| h.borrow().get(name).map(|f| f()));
        if let Some(r) = hooked {
            r?;
        }
        let Ok(spec) = std::env::var("WRITERCTL_FAILPOINTS") else { return Ok(()) };
        for item in spec.split(',') {
            let Some((n, action)) = item.split_once('=') else { continue };
            if n.trim() != name {
                continue;
            }
            match action.trim() {
                "abort" => std::process::abort(),
                "kill" => {
                    let me = rustix::process::getpid();
                    let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
                    std::process::abort();
                }
                "error" => return Err(io::Error::other(format!("failpoint {name}"))),
                other => {
                    if let Some(gate) = other.strip_prefix("pause:") {
                        pause(std::path::Path::new(gate));
                    }
                }
            }
        }
        Ok(())
    }
    /// `pause:PATH`: creates `PATH.reached`, then waits (at most 60 s) until `PATH` exists,
    /// so a test can act at exactly this point of another process's protocol (a rewrite of
    /// the transcript inside a takeover's transition claim window, say).
    fn pause(gate: &std::path::Path) {
        let mut reached = gate.as_os_str().to_owned();
        reached.push(".reached");
        let _ = std::fs::File::create(&reached);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !gate.exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

#[cfg(any(test, debug_assertions, feature = "failpoints"))]
pub use imp::*;

/// Marks a failpoint inside a function returning `Result<_, LockError>`.
#[macro_export]
#[doc(hidden)]
macro_rules! failpoint {
    ($name:literal) => {
        #[cfg(any(test, debug_assertions, feature = "failpoints"))]
        {
            if let Err(e) = $crate::lockfile::failpoint::hit($name) {
                return Err($crate::lockfile::LockError::io(concat!("failpoint ", $name), e));
            }
        }
    };
}
