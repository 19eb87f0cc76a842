//! Where a command's verbs run: in-process on the embedded store ([`Coordinator`]) or on a
//! `writerctl coordinator serve` over HTTP ([`HttpCoordinator`]). A command names the verb
//! it runs ([`Endpoint::call`]`::<V>`) with the verb's own path and request types; nothing
//! between the command and the verb's definition restates it.

use std::time::{Duration, Instant};

use super::client::HttpCoordinator;
use super::verb::{Caller, Gate, Origin, Verb};
use crate::claim::secret::Secret;
use crate::claim::{ClaimError, Coordinator};

/// How long a long-poll waits before returning when the server answered "nothing new" in
/// less than half the wait asked for: the server had no room to hold the request (issue 39
/// point 2: its long-poll pool, or this address's share of it, was full) and answered at
/// once, so polling again at once would turn `--watch` and `inbox --follow` into a busy
/// loop against a server under load.
pub const NOT_HELD_PAUSE: Duration = Duration::from_secs(1);

/// Where a command's verbs run.
pub enum Endpoint {
    /// The embedded store, in this process, bound to the command's request (its request
    /// id; administrative verbs audited as `local`).
    Embedded(Coordinator),
    /// A `writerctl coordinator serve`.
    Remote(HttpCoordinator),
}

impl Endpoint {
    /// Runs `V` with `bearer` as the caller's token: the same verb definition, the same
    /// conversions, in-process or over HTTP. A long poll ([`Gate::LongPoll`],
    /// [`Gate::Pushed`]) that came back with nothing new in less than half its wait pauses
    /// [`NOT_HELD_PAUSE`] before returning (see there).
    pub fn call<V: Verb>(
        &self,
        path: V::Path,
        input: V::Input,
        bearer: Option<&Secret>,
    ) -> Result<V::Answer, ClaimError> {
        let wait = match V::GATE {
            Gate::LongPoll | Gate::Pushed => V::hold_open(&input),
            _ => Duration::ZERO,
        };
        let started = Instant::now();
        let answer = match self {
            Endpoint::Embedded(c) => {
                let caller = Caller { bearer: bearer.cloned(), origin: Origin::Local, admin: false };
                V::apply(c, path, input.clone(), &caller)?
            }
            Endpoint::Remote(h) => h.call::<V>(&path, &input, bearer)?,
        };
        if !wait.is_zero() && started.elapsed() < wait / 2 && !V::worth_answering(&input, &answer) {
            std::thread::sleep(NOT_HELD_PAUSE);
        }
        Ok(answer)
    }

    /// The server's client, when the verbs run remotely.
    pub fn remote(&self) -> Option<&HttpCoordinator> {
        match self {
            Endpoint::Embedded(_) => None,
            Endpoint::Remote(h) => Some(h),
        }
    }
}
