//! Failpoints: named seams between two syscalls of a protocol step, compiled in only for
//! tests and the `failpoints` feature. In release builds [`failpoint!`] expands to nothing,
//! so the seam costs nothing.
//!
//! Two ways to arm one:
//!
//! * in unit tests, [`set_hook`] runs a closure at the named point on the current thread
//!   (e.g. create a claim file exactly between an install and the second claim check);
//! * in a binary built with `--features failpoints`, `WRITERCTL_FAILPOINTS=name=action[,…]`
//!   where action is `abort` (crash), `kill` (SIGKILL to self) or `error` (return an I/O
//!   error, as if the next syscall failed).

#[cfg(any(test, feature = "failpoints"))]
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

    /// Removes every hook of the current thread.
    pub fn clear_hooks() {
        HOOKS.with(|h| h.borrow_mut().clear());
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
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(any(test, feature = "failpoints"))]
pub use imp::*;

/// Marks a failpoint inside a function returning `Result<_, LockError>`.
#[macro_export]
#[doc(hidden)]
macro_rules! failpoint {
    ($name:literal) => {
        #[cfg(any(test, feature = "failpoints"))]
        {
            if let Err(e) = $crate::lockfile::failpoint::hit($name) {
                return Err($crate::lockfile::LockError::io(concat!("failpoint ", $name), e));
            }
        }
    };
}
