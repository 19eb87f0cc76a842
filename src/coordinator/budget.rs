//! What a flood from many addresses may cost `coordinator serve` (issue 28 point 4):
//!
//! * [`Argon2Budget`]: the operator password verifications (argon2, 19 MiB and 20-50 ms of
//!   one core each) that run at once, sized to the cores and the memory budget, each permit
//!   owning its 19 MiB of argon2 memory from the start (issue 39 point 1), with fair shares. Before this, one
//!   FIFO semaphore of 8 served every source in arrival order: 450 source addresses, each
//!   within its own per-source bound, together queued ahead of a correct `master claim`,
//!   which went from 0.04 s to 20 s. Now a waiting verification is served by tier, then
//!   round robin per source within its tier (FQ-CoDel's "new flows first"):
//!
//!   0. a proven pair: an operator id whose last attempt from this source succeeded (issue
//!      39 point 7: an address never seen earns no standing; only a record does);
//!   1. a clean source: not refused in the last [`REFUSAL_MEMORY`], proven or not;
//!   2. a source that was refused recently.
//!
//!   So the operator, from an address it claimed from before, is served before every
//!   queued guess of a flood, whatever number of fresh addresses it comes from: each fresh
//!   address is in tier 1 until its first refusal, so before this (when tier 0 was every
//!   clean source) 1,000 fresh addresses with two guesses each queued 2,000 verifications
//!   in the operator's own tier and put its correct claim at 19.4 s. A proof is lost by a
//!   refused attempt of the same pair (a typo: the pair drops to tier 1, its source is not
//!   marked as refused, the next success proves it again), and is per replica and in memory
//!   only: after a restart, or on another replica, the operator's first claim is in tier 1
//!   like any clean source's (see [`Argon2Budget::note_success`] for why not in the store).
//!   The memories of refused sources and of proven pairs are bounded ([`REMEMBERED`]
//!   each); forgetting a refusal only promotes a source, and only a correct password adds a
//!   proof, so a flood cannot push the operator's proof out.
//!   Waiting is bounded too: per source by [`super::limits::SourceSlots`] before a request
//!   gets here, in all by [`MAX_WAITING`]: past it, a newcomer takes the place of the
//!   newest waiter of a worse tier (which is answered `coordinator_unavailable` at once),
//!   and with none, is answered so itself. A full queue of guesses never keeps the
//!   operator out.
//! * [`SeatRates`]: a token bucket per (project, seat or session, credential) for the write
//!   verbs, so one seat cannot grow the store at network speed (54 MB of Redis in 5 s).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::limits::source_key;
use crate::claim::secret::{HASHING_MEMORY_BYTES, HashingMemory, lend_hashing_memory};

/// How long a refused attempt marks its source and operator id as suspect.
pub const REFUSAL_MEMORY: Duration = Duration::from_secs(600);
/// Sources remembered as recently refused, and (separately) proven (operator id, source)
/// pairs remembered (about 100 bytes each).
pub const REMEMBERED: usize = 65_536;
/// Verifications waiting at once, over every source (each holds one request).
pub const MAX_WAITING: usize = 4096;
/// Service tiers (see the module doc).
const TIERS: usize = 3;

/// Verifications that run at once, given `hashing_bytes` of the memory budget for them
/// (issue 39 point 1: sized from the configured memory, not only from the node's cores):
/// one per core (argon2 is CPU-bound; more at once only makes each slower), no more than
/// that memory holds at [`HASHING_MEMORY_BYTES`] each, and at least one.
pub fn argon2_permits(hashing_bytes: u64) -> usize {
    permits_for(hashing_bytes, std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// [`argon2_permits`] for a given core count.
fn permits_for(hashing_bytes: u64, cores: usize) -> usize {
    let fit = usize::try_from(hashing_bytes / HASHING_MEMORY_BYTES).unwrap_or(usize::MAX);
    cores.min(fit).max(1)
}

/// One queued verification: woken with its permit.
#[derive(Debug)]
struct Waiter {
    wake: oneshot::Sender<()>,
}

#[derive(Debug, Default)]
struct State {
    in_use: usize,
    waiting: usize,
    /// Per tier: sources with waiters, in round-robin order.
    order: [VecDeque<IpAddr>; TIERS],
    /// Per tier and source: its waiters, in arrival order.
    queues: [HashMap<IpAddr, VecDeque<Waiter>>; TIERS],
    /// Recently refused sources, with when.
    refused: HashMap<IpAddr, Instant>,
    /// (source, operator id) pairs whose last attempt succeeded, with when.
    proven: HashMap<(IpAddr, String), Instant>,
}

/// The argon2 budget (see the module doc).
#[derive(Debug)]
pub struct Argon2Budget {
    permits: usize,
    max_waiting: usize,
    state: Mutex<State>,
    /// Verifications admitted, by tier.
    admitted: [AtomicU64; TIERS],
    /// Verifications refused because [`MAX_WAITING`] were waiting (the newcomer, or the
    /// worse-tier waiter it displaced).
    refused_full: AtomicU64,
    /// The argon2 memory of the permits not held now: one [`HashingMemory`] per permit,
    /// allocated (and written) once in [`Argon2Budget::new`], lent by each
    /// [`Argon2Permit`] and given back when it drops (issue 39 point 1: hashing memory is
    /// fixed at start, whatever arrives).
    memory: Mutex<Vec<HashingMemory>>,
}

/// Why no permit: too many waiting already.
#[derive(Debug, PartialEq, Eq)]
pub struct BudgetFull;

/// A running verification's permit, with the argon2 memory it lends
/// ([`Argon2Permit::lend`]); both given back (to the next waiter by tier and round robin)
/// on drop.
#[derive(Debug)]
pub struct Argon2Permit {
    budget: Arc<Argon2Budget>,
    /// The tier it was admitted in.
    pub tier: usize,
    /// One of the budget's buffers (None only if one was lost to a panic: then the
    /// verification allocates its own, see [`lend_hashing_memory`]).
    memory: Option<HashingMemory>,
}

impl Argon2Permit {
    /// Runs `f` (a verb, on the thread that runs it) with this permit's argon2 memory lent
    /// to that thread, so the password verification inside computes into it.
    pub fn lend<R>(&mut self, f: impl FnOnce() -> R) -> R {
        match &mut self.memory {
            Some(m) => lend_hashing_memory(m, f),
            None => f(),
        }
    }
}

impl Drop for Argon2Permit {
    fn drop(&mut self) {
        // The memory goes back before the permit, so the next permit finds it.
        if let Some(m) = self.memory.take() {
            self.budget.memory.lock().unwrap_or_else(|p| p.into_inner()).push(m);
        }
        let mut st = self.budget.lock();
        st.in_use -= 1;
        self.budget.hand_on(&mut st);
    }
}

/// A place in the queue; dropping it (a hang-up, a timeout) leaves the queue.
struct Queued {
    budget: Arc<Argon2Budget>,
    woken: oneshot::Receiver<()>,
    tier: usize,
    /// Woken (a permit is counted for it) and not turned into an [`Argon2Permit`].
    holds: bool,
}

impl Argon2Budget {
    /// `permits` verifications at once, at most `max_waiting` waiting; allocates (and
    /// writes) the argon2 memory of every permit now, [`HASHING_MEMORY_BYTES`] each.
    pub fn new(permits: usize, max_waiting: usize) -> Argon2Budget {
        let permits = permits.max(1);
        Argon2Budget {
            permits,
            max_waiting,
            state: Mutex::default(),
            admitted: Default::default(),
            refused_full: AtomicU64::new(0),
            memory: Mutex::new((0..permits).map(|_| HashingMemory::new()).collect()),
        }
    }

    /// The permit for a place counted in `in_use`, with one of the free buffers (there is
    /// one per permit, and every permit gives its own back before its place).
    fn permit(self: &Arc<Argon2Budget>, tier: usize) -> Argon2Permit {
        let memory = self.memory.lock().unwrap_or_else(|p| p.into_inner()).pop();
        Argon2Permit { budget: self.clone(), tier, memory }
    }

    /// Bytes of argon2 memory the permits own (allocated at start).
    pub fn memory_bytes(&self) -> u64 {
        self.permits as u64 * HASHING_MEMORY_BYTES
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The permit count.
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// Permits held now.
    pub fn in_use(&self) -> usize {
        self.lock().in_use
    }

    /// Verifications waiting now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting
    }

    /// Verifications admitted so far in `tier`.
    pub fn admitted(&self, tier: usize) -> u64 {
        self.admitted[tier].load(Ordering::Relaxed)
    }

    /// Verifications refused because the queue was full.
    pub fn refused_full(&self) -> u64 {
        self.refused_full.load(Ordering::Relaxed)
    }

    /// Sources remembered as refused now.
    pub fn remembered(&self) -> usize {
        self.lock().refused.len()
    }

    /// (operator id, source) pairs remembered as proven now.
    pub fn proven(&self) -> usize {
        self.lock().proven.len()
    }

    /// The tier of a verification from `source` for `operator` at `now` (see the module
    /// doc; issue 39 point 7). Only a proof lifts a request above the middle tier: being
    /// unknown is worth nothing, since a flood has as many unknown addresses as it likes.
    fn tier(st: &State, source: IpAddr, operator: Option<&str>, now: Instant) -> usize {
        if let Some(o) = operator
            && st.proven.contains_key(&(source, o.to_string()))
        {
            0
        } else if st.refused.get(&source).is_some_and(|at| now.duration_since(*at) < REFUSAL_MEMORY) {
            2
        } else {
            1
        }
    }

    /// A permit for a verification from `source` (already a source key: IPv4 or IPv6 /64)
    /// naming `operator`: at once when one is free and nobody waits, otherwise in turn.
    pub async fn acquire(
        self: &Arc<Argon2Budget>,
        source: IpAddr,
        operator: Option<&str>,
    ) -> Result<Argon2Permit, BudgetFull> {
        let queued = match self.try_enter(source, operator, Instant::now())? {
            Ok(permit) => return Ok(permit),
            Err(q) => q,
        };
        queued.wait().await
    }

    /// A permit now, or a place in the queue (the first step of [`Argon2Budget::acquire`],
    /// separate so tests can queue without a runtime).
    fn try_enter(
        self: &Arc<Argon2Budget>,
        source: IpAddr,
        operator: Option<&str>,
        now: Instant,
    ) -> Result<Result<Argon2Permit, Queued>, BudgetFull> {
        let mut st = self.lock();
        let tier = Self::tier(&st, source, operator, now);
        if st.in_use < self.permits && st.waiting == 0 {
            st.in_use += 1;
            self.admitted[tier].fetch_add(1, Ordering::Relaxed);
            return Ok(Ok(self.permit(tier)));
        }
        if st.waiting >= self.max_waiting {
            self.refused_full.fetch_add(1, Ordering::Relaxed);
            if !Self::displace(&mut st, tier) {
                return Err(BudgetFull);
            }
        }
        let (wake, woken) = oneshot::channel();
        let q = st.queues[tier].entry(source).or_default();
        if q.is_empty() {
            st.order[tier].push_back(source);
        }
        st.queues[tier].get_mut(&source).expect("just made").push_back(Waiter { wake });
        st.waiting += 1;
        Ok(Err(Queued { budget: self.clone(), woken, tier, holds: false }))
    }

    /// Makes room in a full queue for a newcomer of `tier`: the last waiter of the last
    /// source in the round robin of the worst tier below it leaves (dropping its waker
    /// answers that request `coordinator_unavailable` at once, as a full queue would have).
    /// False when no waiter is in a worse tier: the newcomer is refused. Issue 39 point 7
    /// at 5x: 5,000 fresh addresses kept the queue full (4,096 in tier 1) for ten seconds,
    /// and the operator's correct claim, first in tier 0, was refused at the door until
    /// places came free (8 s).
    fn displace(st: &mut State, tier: usize) -> bool {
        for worse in (tier + 1..TIERS).rev() {
            let Some(&source) = st.order[worse].back() else { continue };
            let q = st.queues[worse].get_mut(&source).expect("ordered sources have a queue");
            drop(q.pop_back());
            if q.is_empty() {
                st.queues[worse].remove(&source);
                st.order[worse].pop_back();
            }
            st.waiting -= 1;
            return true;
        }
        false
    }

    /// Gives free permits to waiters: the lowest tier first, round robin per source within
    /// it. A waiter that left (its receiver dropped) is skipped.
    fn hand_on(&self, st: &mut State) {
        while st.in_use < self.permits && st.waiting > 0 {
            let Some(tier) = (0..TIERS).find(|t| !st.order[*t].is_empty()) else { return };
            let source = st.order[tier].pop_front().expect("not empty");
            let q = st.queues[tier].get_mut(&source).expect("ordered sources have a queue");
            let waiter = q.pop_front().expect("queues in the order are not empty");
            if q.is_empty() {
                st.queues[tier].remove(&source);
            } else {
                st.order[tier].push_back(source);
            }
            st.waiting -= 1;
            if waiter.wake.send(()).is_ok() {
                st.in_use += 1;
                self.admitted[tier].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Remembers a refused attempt from `source` naming `operator`: the pair loses its proof
    /// (its last attempt no longer succeeded), and the source is marked as refused unless
    /// the pair was proven (a typo of the operator costs its first tier, not its source's
    /// standing: its retry is in tier 1, not behind the flood in tier 2).
    pub fn note_refused(&self, source: IpAddr, operator: Option<&str>, now: Instant) {
        let mut st = self.lock();
        let was_proven = operator.is_some_and(|o| st.proven.remove(&(source, o.to_string())).is_some());
        if !was_proven {
            remember(&mut st.refused, source, now, |at| now.duration_since(*at) < REFUSAL_MEMORY);
        }
    }

    /// Remembers that `operator`'s attempt from `source` succeeded (a correct password):
    /// the pair is proven and goes to tier 0 until a refused attempt of its own (issue 39
    /// point 7). The source's refusals are left to expire: they concern other ids.
    ///
    /// Kept in memory, per replica, not in the store: keeping it there would put a store
    /// read before every queued verification (a flood's included) and a write after every
    /// success, and a schema change in all three backends, for a queue hint. What is lost
    /// on a restart, or on another replica, is one claim's priority: the operator's first
    /// claim there is in tier 1 like any clean source's, and proves the pair again.
    pub fn note_success(&self, source: IpAddr, operator: &str, now: Instant) {
        let mut st = self.lock();
        // Only a correct password adds here, so nothing a flood sends can evict a proof;
        // past the bound, the oldest proofs go.
        remember(&mut st.proven, (source, operator.to_string()), now, |_| true);
    }
}

/// Inserts `key` at `now` into a bounded memory: past [`REMEMBERED`], the entries `keep`
/// refuses go, then the older half.
fn remember<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, Instant>,
    key: K,
    now: Instant,
    keep: impl Fn(&Instant) -> bool,
) {
    if !map.contains_key(&key) && map.len() + 1 > REMEMBERED {
        map.retain(|_, at| keep(at));
        if map.len() + 1 > REMEMBERED {
            let mut ages: Vec<Instant> = map.values().copied().collect();
            let mid = ages.len() / 2;
            let (_, median, _) = ages.select_nth_unstable(mid);
            let median = *median;
            map.retain(|_, at| *at > median);
        }
    }
    map.insert(key, now);
}

impl Queued {
    /// Waits for the permit [`Argon2Budget::hand_on`] gives this place.
    async fn wait(mut self) -> Result<Argon2Permit, BudgetFull> {
        match (&mut self.woken).await {
            // The permit counted for this place now belongs to the Argon2Permit.
            Ok(()) => Ok(self.budget.permit(self.tier)),
            // The sender is only dropped by hand_on after a failed send, never here.
            Err(_) => Err(BudgetFull),
        }
    }

    /// Whether this place was woken (tests poll it without a runtime).
    #[cfg(test)]
    fn check(&mut self) -> bool {
        if !self.holds && self.woken.try_recv().is_ok() {
            self.holds = true;
        }
        self.holds
    }
}

impl Drop for Queued {
    /// A place dropped while queued leaves nothing behind (hand_on skips a waiter whose
    /// receiver is gone); one dropped after it was woken gives its permit on.
    fn drop(&mut self) {
        if self.holds || self.woken.try_recv().is_ok() {
            let mut st = self.budget.lock();
            st.in_use -= 1;
            self.budget.hand_on(&mut st);
        }
    }
}

// ---------------------------------------------------------------------------------------
// per-seat write rates
// ---------------------------------------------------------------------------------------

/// Default burst of writes one seat may send at once.
pub const SEAT_BURST: f64 = 60.0;
/// Default sustained writes per second of one seat (a heartbeat every few seconds and a
/// claim write now and then is far below it).
pub const SEAT_RATE_PER_SEC: f64 = 20.0;
/// Seats tracked at once; past that, full buckets (idle seats) are forgotten first.
pub const MAX_SEATS: usize = 65_536;

/// One seat's token bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Per (project, seat or session, credential) token buckets for the write verbs, per
/// replica (issue 28 point 4). The credential (a hash of the bearer token) is part of the
/// key so a stranger sending writes in a seat's name with wrong tokens drains a bucket of
/// its own, not the seat's.
#[derive(Debug)]
pub struct SeatRates {
    burst: f64,
    per_sec: f64,
    max: usize,
    buckets: Mutex<HashMap<String, Bucket>>,
    limited: AtomicU64,
}

impl Default for SeatRates {
    fn default() -> SeatRates {
        SeatRates::new(SEAT_BURST, SEAT_RATE_PER_SEC, MAX_SEATS)
    }
}

impl SeatRates {
    /// Buckets of `burst` tokens refilled at `per_sec`, at most `max` of them.
    pub fn new(burst: f64, per_sec: f64, max: usize) -> SeatRates {
        SeatRates { burst, per_sec, max: max.max(1), buckets: Mutex::default(), limited: AtomicU64::new(0) }
    }

    /// Writes refused since the start.
    pub fn limited(&self) -> u64 {
        self.limited.load(Ordering::Relaxed)
    }

    /// Seats tracked now.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Takes one token for `key` at `now`; Err(how long until the next one) past the rate.
    pub fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut b = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if !b.contains_key(key) && b.len() >= self.max {
            // A full bucket is the same as none: forget idle seats first.
            let (burst, per_sec) = (self.burst, self.per_sec);
            b.retain(|_, v| v.tokens + now.duration_since(v.at).as_secs_f64() * per_sec < burst);
            if b.len() >= self.max {
                // Every tracked seat is busy: the newcomer shares one overflow bucket.
                return self.take_in(&mut b, "\u{0}overflow", now);
            }
        }
        self.take_in(&mut b, key, now)
    }

    fn take_in(&self, b: &mut HashMap<String, Bucket>, key: &str, now: Instant) -> Result<(), Duration> {
        let e = b.entry(key.to_string()).or_insert(Bucket { tokens: self.burst, at: now });
        e.tokens = (e.tokens + now.saturating_duration_since(e.at).as_secs_f64() * self.per_sec).min(self.burst);
        e.at = now;
        if e.tokens >= 1.0 {
            e.tokens -= 1.0;
            return Ok(());
        }
        self.limited.fetch_add(1, Ordering::Relaxed);
        Err(Duration::from_secs_f64((1.0 - e.tokens) / self.per_sec))
    }
}

/// How many operator verifications each source address may have running, and waiting.
#[derive(Debug)]
pub struct SourceSlots {
    per_source: usize,
    waiting_per_source: usize,
    /// Per source with something running or waiting: its semaphore and how many hold or
    /// wait for it. An entry goes when that count reaches zero, so the map is bounded by
    /// the requests in flight, never by the addresses ever seen.
    busy: Mutex<HashMap<IpAddr, (Arc<tokio::sync::Semaphore>, usize)>>,
}

impl SourceSlots {
    /// At most `per_source` running and `waiting_per_source` waiting per source.
    pub fn new(per_source: usize, waiting_per_source: usize) -> SourceSlots {
        SourceSlots { per_source, waiting_per_source, busy: Mutex::default() }
    }

    /// A place in `ip`'s source queue, or None when it is full (`per_source` running and
    /// `waiting_per_source` waiting): refused at once, without waiting on anyone.
    pub fn try_join(self: &Arc<SourceSlots>, ip: IpAddr) -> Option<SourceTicket> {
        let key = source_key(ip);
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let (sem, n) = busy.entry(key).or_insert_with(|| (Arc::new(tokio::sync::Semaphore::new(self.per_source)), 0));
        if *n >= self.per_source + self.waiting_per_source {
            return None;
        }
        *n += 1;
        Some(SourceTicket { slots: self.clone(), key, sem: sem.clone() })
    }

    /// Sources with a verification running or waiting now.
    pub fn sources_busy(&self) -> usize {
        self.busy.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A place in one source's queue; given back on drop (also while still waiting).
#[derive(Debug)]
pub struct SourceTicket {
    slots: Arc<SourceSlots>,
    key: IpAddr,
    sem: Arc<tokio::sync::Semaphore>,
}

impl SourceTicket {
    /// Waits (in arrival order) for one of the source's running slots.
    pub async fn enter(self) -> SourceSlot {
        let permit = self.sem.clone().acquire_owned().await.expect("the semaphore is never closed");
        SourceSlot { _permit: permit, _ticket: self }
    }
}

impl Drop for SourceTicket {
    fn drop(&mut self) {
        let mut busy = self.slots.busy.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, n)) = busy.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                busy.remove(&self.key);
            }
        }
    }
}

/// One running verification of a source; its slot is given back on drop.
#[derive(Debug)]
pub struct SourceSlot {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _ticket: SourceTicket,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn permit(r: Result<Result<Argon2Permit, Queued>, BudgetFull>) -> Argon2Permit {
        match r {
            Ok(Ok(p)) => p,
            _ => panic!("expected a permit at once"),
        }
    }

    fn queued(r: Result<Result<Argon2Permit, Queued>, BudgetFull>) -> Queued {
        match r {
            Ok(Err(q)) => q,
            _ => panic!("expected to queue"),
        }
    }

    /// Issue 28 point 4: with the budget saturated and a flood from many refused sources
    /// queued, a correct operator's claim from a fresh source is admitted before every one
    /// of them (on main, one FIFO semaphore served it after all of them).
    #[test]
    fn a_clean_source_goes_before_a_queued_flood_of_refused_sources() {
        let b = Arc::new(Argon2Budget::new(2, 1000));
        let now = Instant::now();
        for s in 10..60 {
            b.note_refused(ip(s), Some("ops"), now);
        }
        let running = [permit(b.try_enter(ip(10), Some("ops"), now)), permit(b.try_enter(ip(11), Some("ops"), now))];
        assert_eq!(running.iter().map(|p| p.tier).collect::<Vec<_>>(), [2, 2]);
        let mut flood: Vec<Queued> = (12..60).map(|s| queued(b.try_enter(ip(s), Some("ops"), now))).collect();
        // The operator, from an address that never guessed, for the id being guessed at.
        let mut clean = queued(b.try_enter(ip(2), Some("ops"), now));
        assert_eq!((clean.tier, b.waiting()), (1, 49));
        drop(running);
        // Two permits came free: the clean one got the first, one of the flood the second.
        assert!(clean.check(), "the clean source is served first");
        let served: usize = flood.iter_mut().map(|q| usize::from(q.check())).sum();
        assert_eq!(served, 1);
        assert_eq!((b.in_use(), b.waiting()), (2, 47));
        assert_eq!((b.admitted(1), b.admitted(2)), (1, 3));
    }

    #[test]
    fn tiers_then_round_robin_per_source_and_leaving_frees_the_place() {
        let b = Arc::new(Argon2Budget::new(1, 3));
        let now = Instant::now();
        b.note_refused(ip(9), Some("x"), now);
        let p = permit(b.try_enter(ip(1), None, now));
        let mut a1 = queued(b.try_enter(ip(3), None, now));
        let mut a2 = queued(b.try_enter(ip(3), None, now));
        let mut c = queued(b.try_enter(ip(4), None, now));
        assert!(matches!(b.try_enter(ip(5), None, now), Err(BudgetFull)), "the queue is bounded");
        assert_eq!(b.refused_full(), 1);
        assert_eq!((a1.tier, a2.tier, c.tier), (1, 1, 1), "an address never seen earns no standing");
        drop(p);
        assert!(a1.check());
        // a1's permit goes back on drop (after its wake, it counts as running).
        drop(a1);
        assert!(c.check(), "round robin: the other source before a's second");
        assert!(!a2.check());
        // A waiter that hangs up is skipped: the permit reaches nobody and is not lost.
        drop(a2);
        drop(c);
        assert_eq!((b.in_use(), b.waiting()), (0, 0));
        assert!(permit(b.try_enter(ip(9), None, now)).tier == 2, "a refused source is suspect");
        // The memory forgets after REFUSAL_MEMORY.
        let later = now + REFUSAL_MEMORY + Duration::from_secs(1);
        assert_eq!(permit(b.try_enter(ip(9), Some("x"), later)).tier, 1);
    }

    /// A full queue of a worse tier does not refuse a better one: the newcomer takes the
    /// newest waiter's place (that request answered at once), while a newcomer of the same
    /// or a worse tier is refused.
    #[test]
    fn a_full_queue_makes_room_for_a_better_tier() {
        let b = Arc::new(Argon2Budget::new(1, 2));
        let now = Instant::now();
        let operator = IpAddr::from([10, 9, 8, 7]);
        b.note_success(operator, "ops", now);
        b.note_refused(ip(9), Some("x"), now);
        let running = permit(b.try_enter(ip(1), None, now));
        let mut older = queued(b.try_enter(ip(3), None, now));
        let newer = queued(b.try_enter(ip(4), None, now));
        assert!(matches!(b.try_enter(ip(5), None, now), Err(BudgetFull)), "same tier: refused");
        assert!(matches!(b.try_enter(ip(9), None, now), Err(BudgetFull)), "worse tier: refused");
        let mut oper = queued(b.try_enter(operator, Some("ops"), now));
        assert_eq!((oper.tier, b.waiting(), b.refused_full()), (0, 2, 3));
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(rt.block_on(newer.wait()).err(), Some(BudgetFull), "the displaced waiter is answered at once");
        drop(running);
        assert!(oper.check() && !older.check(), "the operator is served next");
    }

    /// Issue 39 point 7, the measured attack: 1,000 fresh addresses with two wrong
    /// guesses each, all queued before any of them was refused (so none is marked yet),
    /// and the operator's correct claim from the address it claimed from before queued
    /// last. It is served with the first permit that comes free, whatever the flood's
    /// size: its wait is one verification, not one per flooding address. Before, a fresh
    /// address was in the operator's own tier and the claim was served after ~1,000 of
    /// them (19.4 s).
    #[test]
    fn the_operator_from_a_proven_address_goes_before_any_number_of_fresh_addresses() {
        let now = Instant::now();
        let operator = IpAddr::from([10, 9, 8, 7]);
        for addresses in [1u32, 10, 1_000, 2_040] {
            let b = Arc::new(Argon2Budget::new(2, MAX_WAITING));
            // The operator claimed from this address before, correctly.
            b.note_success(operator, "ops", now);
            let running = [permit(b.try_enter(ip(1), None, now)), permit(b.try_enter(ip(2), None, now))];
            let mut flood = Vec::new();
            for a in 0..addresses {
                let src = IpAddr::from(std::net::Ipv4Addr::from(0x7f01_0000 + a));
                for guess in 0..2 {
                    // Half name the operator's id, half unknown ids: neither earns a tier.
                    let id = if guess == 0 { "ops".to_string() } else { format!("nobody{a}") };
                    flood.push(queued(b.try_enter(src, Some(&id), now)));
                }
            }
            assert!(flood.iter().all(|q| q.tier == 1), "fresh addresses are in the middle tier");
            let mut claim = queued(b.try_enter(operator, Some("ops"), now));
            assert_eq!(claim.tier, 0);
            assert_eq!(b.waiting(), 2 * addresses as usize + 1);
            drop(running);
            assert!(claim.check(), "{addresses} addresses: the proven claim is served first");
            let served: usize = flood.iter_mut().map(|q| usize::from(q.check())).sum();
            assert_eq!(served, 1, "the second permit went to the flood, round robin");
            assert_eq!((b.admitted(0), b.admitted(1)), (1, 3));
        }
    }

    /// Issue 39 point 7: a proof is the pair's, and only while its last attempt
    /// succeeded. Another id from the proven address, or the proven id from another
    /// address, earns nothing; the operator's typo costs the pair its proof (tier 1) but
    /// not its source's standing (tier 2 is a second refusal); a success proves it again.
    #[test]
    fn a_proof_is_one_pair_and_lasts_until_its_own_refusal() {
        let b = Arc::new(Argon2Budget::new(1, 16));
        let now = Instant::now();
        let tier = |src: u8, id: &str| Argon2Budget::tier(&b.lock(), ip(src), Some(id), now);
        b.note_success(ip(5), "ops", now);
        assert_eq!((tier(5, "ops"), tier(5, "other"), tier(6, "ops")), (0, 1, 1));
        assert_eq!(Argon2Budget::tier(&b.lock(), ip(5), None, now), 1, "no id, no pair");
        // A stranger's refusal from another address does not touch the proof.
        b.note_refused(ip(6), Some("ops"), now);
        assert_eq!((tier(5, "ops"), tier(6, "ops")), (0, 2));
        // The operator's typo: the pair drops to tier 1, its source is not marked.
        b.note_refused(ip(5), Some("ops"), now);
        assert_eq!((tier(5, "ops"), tier(5, "other"), b.proven(), b.remembered()), (1, 1, 0, 1));
        // A second refusal marks the source like any other.
        b.note_refused(ip(5), Some("ops"), now);
        assert_eq!(tier(5, "ops"), 2);
        // A correct password proves the pair again, ahead of the source's refusal.
        b.note_success(ip(5), "ops", now);
        assert_eq!((tier(5, "ops"), tier(5, "other")), (0, 2));
    }

    /// Only successes add proofs, and past [`REMEMBERED`] the oldest go: the memory is
    /// bounded, and the newest proof survives.
    #[test]
    fn the_proof_memory_is_bounded() {
        let b = Argon2Budget::new(1, 1);
        let t0 = Instant::now();
        for i in 0..(REMEMBERED as u32 + 10_000) {
            let src = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            b.note_success(src, "ops", t0 + Duration::from_micros(u64::from(i)));
        }
        assert!(b.proven() <= REMEMBERED, "{}", b.proven());
        let newest = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + REMEMBERED as u32 + 9_999));
        assert_eq!(Argon2Budget::tier(&b.lock(), newest, Some("ops"), t0), 0);
    }

    #[test]
    fn the_refusal_memory_is_bounded() {
        let b = Argon2Budget::new(1, 1);
        let t0 = Instant::now();
        for i in 0..(REMEMBERED as u32 + 10_000) {
            let src = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            b.note_refused(src, None, t0 + Duration::from_micros(u64::from(i)));
        }
        assert!(b.remembered() <= REMEMBERED, "{}", b.remembered());
    }

    #[test]
    fn the_async_path_hands_permits_on() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let b = Arc::new(Argon2Budget::new(1, 8));
            let p = b.acquire(ip(1), None).await.unwrap();
            let b2 = b.clone();
            let next = tokio::spawn(async move { b2.acquire(ip(2), None).await.map(|p| p.tier) });
            tokio::task::yield_now().await;
            assert_eq!(b.waiting(), 1);
            drop(p);
            assert_eq!(next.await.unwrap(), Ok(1));
            assert_eq!((b.in_use(), b.waiting()), (0, 0));
        });
    }

    /// Issue 39 point 1: permits come from the memory budget's hashing share as well as the
    /// cores, never fewer than one.
    #[test]
    fn permits_follow_the_memory_budget_and_the_cores() {
        let mib = 1024 * 1024;
        assert_eq!(permits_for(0, 8), 1, "at least one");
        assert_eq!(permits_for(HASHING_MEMORY_BYTES - 1, 8), 1);
        assert_eq!(permits_for(2 * HASHING_MEMORY_BYTES, 8), 2);
        assert_eq!(permits_for(128 * mib, 8), 6, "128 MiB holds six of 19 MiB");
        assert_eq!(permits_for(128 * mib, 2), 2, "no more than the cores");
        assert_eq!(permits_for(u64::MAX, 4), 4);
    }

    /// Issue 39 point 1: the budget owns one argon2 buffer per permit from the start; a
    /// permit lends its buffer to the verb's thread and gives it back, so the buffers never
    /// grow in number, whatever is admitted.
    #[test]
    fn each_permit_lends_one_of_the_buffers_allocated_at_start() {
        use crate::claim::secret::{Secret, hash_password, verify_password};
        let b = Arc::new(Argon2Budget::new(2, 8));
        let free = |b: &Argon2Budget| b.memory.lock().unwrap().len();
        assert_eq!((free(&b), b.memory_bytes()), (2, 2 * HASHING_MEMORY_BYTES));
        let now = Instant::now();
        let mut p1 = permit(b.try_enter(ip(1), None, now));
        let p2 = permit(b.try_enter(ip(2), None, now));
        assert_eq!(free(&b), 0);
        let mut q = queued(b.try_enter(ip(3), None, now));
        let pw = Secret::new("pw".into());
        let h = hash_password(&pw).unwrap();
        let ok = p1.lend(|| {
            assert_eq!(format!("{:?}", p2.memory), "Some(HashingMemory(19456 blocks))");
            verify_password(&h, &pw)
        });
        assert!(ok);
        assert_eq!(format!("{:?}", p1.memory), "Some(HashingMemory(19456 blocks))", "given back whole");
        drop(p1);
        assert!(q.check());
        assert_eq!(free(&b), 1, "the waiter's permit takes the buffer when it becomes one");
        drop(q);
        drop(p2);
        assert_eq!((free(&b), b.in_use()), (2, 0));
        for _ in 0..5 {
            let mut p = b.try_enter(ip(4), None, now).ok().and_then(Result::ok).unwrap();
            assert!(p.lend(|| verify_password(&h, &pw)));
        }
        assert_eq!(free(&b), 2, "no buffer is made after the start");
    }

    /// Issue 28 point 4: one seat's writes past the burst are refused with the time until
    /// the next token; other seats are not affected; the map is bounded.
    #[test]
    fn seat_buckets_bound_one_seat_and_stay_bounded() {
        let r = SeatRates::new(3.0, 10.0, 4);
        let t = Instant::now();
        for _ in 0..3 {
            r.take("p/a", t).unwrap();
        }
        let wait = r.take("p/a", t).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_millis(100), "{wait:?}");
        r.take("p/b", t).expect("another seat has its own bucket");
        r.take("p/a", t + Duration::from_millis(150)).expect("refilled");
        for i in 0..100 {
            let _ = r.take(&format!("p/s{i}"), t);
        }
        assert!(r.tracked() <= 5, "{}", r.tracked());
        // Two seats' own buckets, then every newcomer in one overflow bucket of 3.
        assert_eq!(r.limited(), 1 + 95);
    }
}
