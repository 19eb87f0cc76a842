//! What keeps `coordinator serve` answering under abuse (issue 19): a cap on open
//! connections with a clean refusal past it, the open-file limit raised at start, and a
//! bound on the operator password verifications one source address may have in flight.
//!
//! The timeouts that free a connection slot (header read, idle keep-alive, the TLS
//! handshake) are hyper's and axum-server's; they are set in `server/listen.rs` where the
//! server is built. This module holds the state those settings cannot express:
//!
//! * [`ConnGate`]: the open connections by peer address with what each is doing
//!   ([`Phase`]) and what it has shown (an answer written, a credential accepted), the
//!   global and per-source caps, and how many were refused, evicted or timed out (issue 28
//!   point 1: a full source or a full server evicts a connection rather than refusing, so a
//!   probe sharing the attacker's address is still served). [`CappedAcceptor`] takes a
//!   slot for each accepted TCP connection before anything else runs (before TLS), and the
//!   slot is given back when the connection's stream is dropped, however the connection
//!   ended (answered, timed out, evicted, reset, shut down). [`Counted`], that stream,
//!   carries out evictions and puts hyper's own error answers into the JSON envelope;
//!   [`AfterHandshake`] tells the gate when a TLS handshake is over.
//! * The long-poll pool ([`ConnGate::hold_long_poll`]): `master status --watch` and inbox
//!   long-polls are held open only within a bounded share of the connections.
//! * [`raise_nofile_limit`]: a server whose soft open-file limit is lower than its cap would
//!   fail `accept` with EMFILE instead of refusing cleanly, so the soft limit is raised to
//!   the hard limit at start and the cap is kept below it ([`connection_cap`]).
//!
//! # Which connection is evicted (issue 39 point 3)
//!
//! A newcomer past a cap evicts one open connection that is not being worked for (a
//! connection whose request is handled or whose answer is being written is never evicted);
//! only when there is none is it refused. At the per-source cap the victim is one of the
//! newcomer's own source, at the global cap one of any source, in both cases the first in
//! this order:
//!
//! 1. unauthenticated requests the server holds without working for them: long-polls held
//!    open (`master status --watch`: evicting one answers it at once with the state as it
//!    is, and its client simply polls again), deferred connections (below) and `master claim`s queued for an argon2
//!    permit or held back after a wrong password (answered `coordinator_unavailable`, or
//!    their refusal at once; the source's verification slot stays taken for the whole
//!    back-off). They go first because they cost only their connection, and a flood of
//!    them (1,000 addresses x 2 queued guesses) would otherwise keep every newcomer out,
//!    a probe included, which as a new connection would be the oldest waiter of class 2;
//! 2. unauthenticated connections waiting on their client: no complete head yet (a new
//!    connection, or idle keep-alive after an answer), or a body still arriving; the one
//!    waiting longest first. An idle or trickling flood, from one address or from
//!    thousands, is evicted here, oldest first, so it evicts itself: a real client's new
//!    connection sends its head at once and is the newest waiter;
//! 3. TLS handshakes in progress (the client has sent its hello): a real handshake lasts
//!    milliseconds, so evicting them only after every waiting connection of every source
//!    keeps a flood from cutting them; they have their own deadline
//!    ([`TLS_HANDSHAKE_TIMEOUT`]) and count against their source's cap;
//! 4. connections on which a request carried a credential the server accepted (a session or
//!    seat token, the admin token, a correct operator password: "proven"), waiting for
//!    their next request, the one waiting longest first;
//! 5. proven long-polls held open (an inbox poll with its session token).
//!
//! Within a class, a connection the server saw waiting goes before one it has not yet read
//! from (its head may be in the socket buffer), then the one waiting longest first; and a
//! candidate with unread bytes in its socket (about to be served) is skipped. The source's
//! size plays no part: the rule used to evict from the source holding the most
//! connections, which a flood from 1,500 single-connection addresses turned against an
//! 8-client host. What a flood can still take is an unauthenticated client's keep-alive
//! connection idle for longer than the flood's own connections have waited (its client
//! opens a new one, as the CLI does for every command anyway); a client that authenticates
//! is evicted only after every unauthenticated connection and held watch.
//!
//! A source whose unproven connection was evicted at the global cap is penalised for
//! [`EVICTION_PENALTY`] (doubling with each eviction, at most [`EVICTION_PENALTY_MAX`]): its
//! new connections may evict only its own, and are refused when it has none. Without this,
//! 1,500 single-connection addresses evicted one another round and round, and under TLS
//! each new connection cost the server a handshake.
//!
//! A source that sent more request heads hyper refused (400, 414, 431) than
//! [`BAD_HEADS_FREE`] in a [`BAD_HEAD_WINDOW`] has each new connection wait
//! [`BAD_HEAD_DEFER`] before the server reads from it (plain HTTP: under TLS those answers
//! are ciphertext here, and each attempt first costs the client a handshake). Refusing it
//! would lock out a probe sharing the address; reading it at once let 8 addresses make the
//! server parse 400 MB of heads a second.
//!
//! [`SourceSlots`] (per source address, how many `master claim` verifications run at once
//! and how many may wait) lives in `budget`, with the rest of what admits verifications.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

pub use super::budget::{SourceSlot, SourceSlots, SourceTicket};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// File descriptors kept out of the connection cap: the listener, store connections (a
/// Redis multiplexed connection, a Postgres pool, SQLite and its journal), TLS material,
/// stdio and the runtime's own descriptors.
pub const RESERVED_FDS: u64 = 64;

/// How often the per-source summary of refused, evicted and timed-out connections is logged
/// at most: a flood from one source writes one line per interval, not one per connection
/// (issue 28 point 1). The first event after a quiet interval is logged at once.
const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// Sources named one by one in a summary; events of further sources in the same interval
/// are summed under `0.0.0.0` (so a flood from many addresses keeps the map and the log
/// bounded).
const SUMMARY_SOURCES: usize = 64;

/// Evicted connections that may still be closing (they hold a descriptor until their task
/// runs) on top of `--max-connections`; kept well within [`RESERVED_FDS`].
const EVICTION_MARGIN: usize = 32;

/// How long a source whose connection was evicted at the global cap waits before a new
/// connection of it may evict another source's again (it may still evict its own, else it
/// is refused): the first time; it doubles with each further
/// eviction up to [`EVICTION_PENALTY_MAX`], and is forgotten after a quiet
/// [`EVICTION_PENALTY_MEMORY`]. Issue 39 point 3: 1,500 addresses whose idle connections
/// are evicted reconnect at once, and under TLS each reconnect is a handshake the server
/// computes (~2,000 a second in the abuse bench, a core's worth); refusing a penalised
/// source at accept costs nothing.
pub const EVICTION_PENALTY: Duration = Duration::from_secs(1);
/// The longest penalty.
pub const EVICTION_PENALTY_MAX: Duration = Duration::from_secs(32);
/// How long a penalised source is remembered after its penalty ends.
pub const EVICTION_PENALTY_MEMORY: Duration = Duration::from_secs(60);
/// Sources remembered as penalised at most (about 40 bytes each); past it, expired ones
/// are forgotten, and a new one is not remembered (it is only not penalised).
const PENALISED_SOURCES: usize = 65_536;

/// Request heads hyper refuses itself (400, 414, 431: malformed, target too long, head too
/// large) that one source may send per [`BAD_HEAD_WINDOW`] before its new connections are
/// deferred ([`BAD_HEAD_DEFER`]). A misconfigured client or a curious person sends a few;
/// issue 39's `big_names_watch` row sent 14,000 a second from 8 addresses, each answered at
/// once, and the parsing alone (400 MB/s of heads on two cores) put handoff p99 at 5-8x.
pub const BAD_HEADS_FREE: u32 = 16;
/// The window [`BAD_HEADS_FREE`] counts in: a source is deferred while its current or its
/// previous window went past the allowance.
pub const BAD_HEAD_WINDOW: Duration = Duration::from_secs(10);
/// How long a deferred source's new connection waits before the server reads from it. The
/// connection is evicted first at a cap while it waits (it is held without work), so it
/// takes no slot from anyone else; a source's rate of refused heads is then at most its
/// open connections (`--max-connections-per-source`) per second, not what two cores parse.
pub const BAD_HEAD_DEFER: Duration = Duration::from_secs(1);

/// Default `--max-connections-per-source`: a source address (IPv4, or IPv6 /64) holds at
/// most this many open connections. A controller host runs a handful of CLI calls at once,
/// a NAT'd fleet or the 64-client load bench a few dozen, so 128 never touches real use,
/// while one source holds at most 1/8 of the default `--max-connections` and the other
/// sources keep the rest.
pub const DEFAULT_MAX_CONNECTIONS_PER_SOURCE: usize = 128;

/// Default `--body-timeout-seconds`: a request body must have fully arrived this long after
/// its head. Bodies are at most 64 KiB and real clients send them with the head, so 10 s is
/// generous; a trickled body holds its connection at most this long.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The minimum body rate: after [`BODY_RATE_GRACE`], a body still arriving must average at
/// least this many bytes per second since its head, or it is answered 408 at once (a byte
/// every few seconds is an attack, not a slow link).
pub const MIN_BODY_RATE: u64 = 64;

/// How long a body may arrive slower than [`MIN_BODY_RATE`] before the rate is checked.
pub const BODY_RATE_GRACE: Duration = Duration::from_secs(2);

/// The share of `--max-connections` that held long-polls may take at once: one in
/// [`LONG_POLL_SHARE`] (256 of the default 1024). Issue 39 point 2: held long-polls used to
/// count as busy and never be evicted, so unauthenticated `master/watch` requests from 8
/// addresses filled every slot and `/livez` answered 503.
pub const LONG_POLL_SHARE: usize = 4;

/// Long-polls one source address may have held at once: a controller host runs one
/// `master status --watch` and one inbox poll per controller, so a few.
pub const LONG_POLLS_PER_SOURCE: usize = 8;

/// The longest a TLS handshake may take once its connection is accepted (or the header
/// timeout, if shorter): a real client's handshake is a round trip or two, so 5 s leaves
/// room for a congested link, while a stalled one gives its slot back sooner than an idle
/// connection would. Issue 39 point 3: handshakes have their own deadline.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a connection is doing, for eviction (see the module documentation for the order):
/// a connection the server works for is never evicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for a request head: a new connection, or idle keep-alive after an answer.
    Head,
    /// A TLS handshake in progress: the client's hello has arrived, the handshake has not
    /// finished (a TLS connection that has sent nothing yet is [`Phase::Head`]).
    Handshake,
    /// A request head arrived; its body is still arriving.
    Body,
    /// The request is complete and being handled.
    Busy,
    /// A long-poll held open until there is news or its wait ends: the server waits, not
    /// for its client and not at work, so it may be evicted (and then answers at once with
    /// what it has). See [`ConnGate::hold_long_poll`].
    Held,
    /// The answer is produced and being written; back to [`Phase::Head`] once flushed.
    Answered,
}

/// What the per-source log summary counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnEvent {
    /// Refused at a cap (no connection of the source or of the server could be evicted).
    Refused,
    /// Closed to make room for a newer connection of the same (or the busiest) source.
    Evicted,
    /// Its request body did not arrive in time or fast enough (answered 408).
    BodyTimeout,
    /// Accepted, and read only after [`BAD_HEAD_DEFER`]: its source sent more heads hyper
    /// refused than [`BAD_HEADS_FREE`] allows.
    Deferred,
}

/// One open connection's state, shared by its stream ([`Counted`]) and the request guard in
/// `server/guard.rs` (which finds it by peer address: unique among open connections).
#[derive(Debug)]
pub struct ConnState {
    peer: SocketAddr,
    source: IpAddr,
    phase: Mutex<(Phase, Instant)>,
    evicted: AtomicBool,
    /// The server looked for this connection's next bytes in this phase and found none: it
    /// is known to be waiting on its client. A connection accepted a moment ago may already
    /// have its whole head in the socket buffer, unread; evicting those only after the
    /// known waiters keeps a fast reconnect flood from evicting a probe before its head is
    /// read.
    seen_waiting: AtomicBool,
    /// A request on this connection carried a credential the server accepted: evicted last
    /// (issue 39 point 3; see [`ConnState::prove`]).
    proven: AtomicBool,
    /// A TLS connection whose handshake has not finished ([`AfterHandshake`] clears it).
    tls_pending: AtomicBool,
    /// The stream's last read waker: an idle connection notices its eviction at once.
    read_waker: Mutex<Option<Waker>>,
    /// Wakes a request guard waiting for this connection's body.
    evict_notify: tokio::sync::Notify,
    /// The socket, to look (without reading) whether bytes wait in its receive buffer.
    socket: Option<Arc<TcpStream>>,
    /// Not read from until [`BAD_HEAD_DEFER`] after it was accepted (its source sent too
    /// many heads hyper refused); cleared when the wait is over.
    deferred: AtomicBool,
}

impl ConnState {
    fn new(peer: SocketAddr, socket: Option<Arc<TcpStream>>, tls: bool, deferred: bool) -> ConnState {
        ConnState {
            socket,
            deferred: AtomicBool::new(deferred),
            peer,
            source: source_key(peer.ip()),
            phase: Mutex::new((Phase::Head, Instant::now())),
            evicted: AtomicBool::new(false),
            seen_waiting: AtomicBool::new(false),
            proven: AtomicBool::new(false),
            tls_pending: AtomicBool::new(tls),
            read_waker: Mutex::new(None),
            evict_notify: tokio::sync::Notify::new(),
        }
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        self.phase.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// Enters `phase`, counted from now.
    pub fn set_phase(&self, phase: Phase) {
        *self.phase.lock().unwrap_or_else(|p| p.into_inner()) = (phase, Instant::now());
        self.seen_waiting.store(false, Ordering::Relaxed);
    }

    /// The peer address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Whether a newer connection took this one's place.
    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves once this connection is evicted (at once if it already was).
    pub async fn evicted(&self) {
        loop {
            let notified = self.evict_notify.notified();
            if self.is_evicted() {
                return;
            }
            notified.await;
        }
    }

    /// A request on this connection carried a credential the server accepted (a session or
    /// seat token, the admin token, a correct operator password): from now on it is evicted
    /// only after every connection that showed none (issue 39 point 3). Set by the handler
    /// once such a request succeeded; never cleared (the connection is the same client).
    pub fn prove(&self) {
        self.proven.store(true, Ordering::Relaxed);
    }

    /// Whether [`ConnState::prove`] was called.
    pub fn is_proven(&self) -> bool {
        self.proven.load(Ordering::Relaxed)
    }

    /// The TLS handshake finished: the connection now waits for its first request head.
    fn handshake_done(&self) {
        self.tls_pending.store(false, Ordering::Relaxed);
        self.set_phase(Phase::Head);
    }

    /// This connection's place in the eviction order (smaller is evicted first; see the
    /// module documentation): its class, then known waiters before ones not yet looked at,
    /// then the oldest first. None while the server works for it (never evicted).
    fn eviction_key(&self) -> Option<(u8, bool, Instant)> {
        let (phase, since) = *self.phase.lock().unwrap_or_else(|p| p.into_inner());
        if self.deferred.load(Ordering::Relaxed) {
            // Held by the server without work, like an unauthenticated held long-poll.
            return Some((0, false, since));
        }
        let proven = self.proven.load(Ordering::Relaxed);
        let waiting = matches!(phase, Phase::Head | Phase::Body);
        let class = match phase {
            Phase::Busy | Phase::Answered => return None,
            _ if waiting && proven => 3,
            _ if waiting => 1,
            Phase::Held if proven => 4,
            Phase::Held => 0,
            _ => 2, // Phase::Handshake
        };
        let unseen = waiting && !self.seen_waiting.load(Ordering::Relaxed);
        Some((class, unseen, since))
    }

    /// Bytes from the client wait in the socket's receive buffer, not yet read by the
    /// server: a probe whose head arrived while its task waits to run. Such a connection is
    /// about to be served, so it is not evicted (the kernel is asked; nothing is read). A
    /// deferred connection is not about to be served, whatever waits in its socket.
    fn has_unread_bytes(&self) -> bool {
        use rustix::net::{RecvFlags, recv};
        if self.deferred.load(Ordering::Relaxed) {
            return false;
        }
        let Some(sock) = &self.socket else { return false };
        let mut one = [0u8; 1];
        matches!(recv(&**sock, &mut one[..], RecvFlags::PEEK | RecvFlags::DONTWAIT), Ok((n, _)) if n > 0)
    }

    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.evict_notify.notify_waiters();
        if let Some(w) = self.read_waker.lock().unwrap_or_else(|p| p.into_inner()).take() {
            w.wake();
        }
    }
}

/// The open connections by peer address, and how many each source holds.
#[derive(Debug, Default)]
struct Registry {
    by_peer: HashMap<SocketAddr, Arc<ConnState>>,
    /// Each source's open connections (at most `--max-connections-per-source`): a victim of
    /// the source is chosen among these, not by a walk of every connection.
    per_source: HashMap<IpAddr, Vec<Arc<ConnState>>>,
    /// Sources evicted at the global cap: until when they may not evict, and how often.
    penalised: HashMap<IpAddr, (Instant, u32)>,
    /// Per source, the heads hyper refused in the current and the previous window.
    bad_heads: HashMap<IpAddr, BadHeads>,
}

/// A source's heads refused by hyper (see [`BAD_HEADS_FREE`]): the window that started at
/// `since`, how many in it, and how many in the window before (0 when that one was not the
/// one just before).
#[derive(Debug, Clone, Copy)]
struct BadHeads {
    since: Instant,
    now: u32,
    before: u32,
}

impl BadHeads {
    /// The counts as of `at`: windows that ended are rolled over.
    fn at(self, at: Instant) -> BadHeads {
        let age = at.saturating_duration_since(self.since);
        if age < BAD_HEAD_WINDOW {
            self
        } else if age < BAD_HEAD_WINDOW * 2 {
            BadHeads { since: self.since + BAD_HEAD_WINDOW, now: 0, before: self.now }
        } else {
            BadHeads { since: at, now: 0, before: 0 }
        }
    }

    fn over(self) -> bool {
        self.now > BAD_HEADS_FREE || self.before > BAD_HEADS_FREE
    }
}

impl Registry {
    /// Whether `source` may not evict anyone at the global cap at `now` (see
    /// [`EVICTION_PENALTY`]).
    fn penalised(&self, source: IpAddr, now: Instant) -> bool {
        self.penalised.get(&source).is_some_and(|(until, _)| now < *until)
    }

    /// `source` lost a connection at the global cap at `now`: its penalty starts, twice as
    /// long as its last one if that ended less than [`EVICTION_PENALTY_MEMORY`] ago.
    fn penalise(&mut self, source: IpAddr, now: Instant) {
        if self.penalised.len() >= PENALISED_SOURCES && !self.penalised.contains_key(&source) {
            self.penalised.retain(|_, (until, _)| now < *until + EVICTION_PENALTY_MEMORY);
            if self.penalised.len() >= PENALISED_SOURCES {
                return;
            }
        }
        let strikes = match self.penalised.get(&source) {
            Some((until, n)) if now < *until + EVICTION_PENALTY_MEMORY => n.saturating_add(1),
            _ => 1,
        };
        let penalty = EVICTION_PENALTY.saturating_mul(1 << (strikes - 1).min(16)).min(EVICTION_PENALTY_MAX);
        self.penalised.insert(source, (now + penalty, strikes));
    }

    /// Hyper refused a head of `source` at `now` (counted, see [`BAD_HEADS_FREE`]). The map
    /// is bounded like the penalties: past [`PENALISED_SOURCES`], quiet sources are
    /// forgotten first, and a new one is not remembered when none is.
    fn note_bad_head(&mut self, source: IpAddr, now: Instant) {
        if self.bad_heads.len() >= PENALISED_SOURCES && !self.bad_heads.contains_key(&source) {
            self.bad_heads.retain(|_, b| {
                let b = b.at(now);
                b.now > 0 || b.before > 0
            });
            if self.bad_heads.len() >= PENALISED_SOURCES {
                return;
            }
        }
        let b = self.bad_heads.get(&source).map_or(BadHeads { since: now, now: 0, before: 0 }, |b| b.at(now));
        self.bad_heads.insert(source, BadHeads { now: b.now.saturating_add(1), ..b });
    }

    /// Whether a new connection of `source` at `now` waits [`BAD_HEAD_DEFER`] before it is read.
    fn deferred(&self, source: IpAddr, now: Instant) -> bool {
        self.bad_heads.get(&source).is_some_and(|b| b.at(now).over())
    }

    fn insert(&mut self, c: Arc<ConnState>) {
        self.per_source.entry(c.source).or_default().push(c.clone());
        if let Some(old) = self.by_peer.insert(c.peer, c) {
            // Cannot happen (a peer address is unique among open connections); keep counts right.
            self.forget(&old);
        }
    }

    fn remove(&mut self, c: &Arc<ConnState>) {
        if self.by_peer.get(&c.peer).is_some_and(|x| Arc::ptr_eq(x, c)) {
            self.by_peer.remove(&c.peer);
            self.forget(c);
        }
    }

    /// Drops `c` from its source's list (and the source, with its last connection).
    fn forget(&mut self, c: &Arc<ConnState>) {
        if let Some(list) = self.per_source.get_mut(&c.source) {
            if let Some(i) = list.iter().position(|x| Arc::ptr_eq(x, c)) {
                list.swap_remove(i);
            }
            if list.is_empty() {
                self.per_source.remove(&c.source);
            }
        }
    }

    /// How many connections `source` holds.
    fn count(&self, source: IpAddr) -> usize {
        self.per_source.get(&source).map_or(0, Vec::len)
    }

    /// The connection to evict for a newcomer: the first in the eviction order (see the
    /// module documentation) among `source`'s connections, or among all when None.
    ///
    /// Each connection's key is read once and the candidates are heaped, not sorted, then
    /// taken in order until one has no unread bytes from its client (usually the first): at
    /// the global cap this runs for every accepted connection, and issue 39's `queue_jump`
    /// row at 5x (10,000 connections arriving at once, 5,120 allowed) spent seconds of the
    /// accept loop sorting, while the operator's connection waited in the listen queue.
    fn victim(&self, source: Option<IpAddr>) -> Option<Arc<ConnState>> {
        let pool: Vec<&Arc<ConnState>> = match source {
            Some(s) => self.per_source.get(&s).map(|l| l.iter().collect()).unwrap_or_default(),
            None => self.by_peer.values().collect(),
        };
        let mut order: std::collections::BinaryHeap<_> =
            pool.iter().enumerate().filter_map(|(i, c)| c.eviction_key().map(|k| std::cmp::Reverse((k, i)))).collect();
        while let Some(std::cmp::Reverse((_, i))) = order.pop() {
            if !pool[i].has_unread_bytes() {
                return Some(pool[i].clone());
            }
        }
        None
    }
}

/// When the summary was last logged (None: never), and per source its refused, evicted and
/// body-timeout and deferral counts since (indexed by [`ConnEvent`]).
type Summary = (Option<Instant>, HashMap<IpAddr, [u64; 4]>);

/// Open connections, their caps (global and per source), and what was refused, evicted or
/// timed out (shown on `/metrics`, summarized in the log per source per interval).
#[derive(Debug)]
pub struct ConnGate {
    max: usize,
    per_source: usize,
    /// Connections holding a descriptor: the registered ones and evicted ones still closing.
    open: AtomicUsize,
    refused: AtomicU64,
    evicted: AtomicU64,
    body_timeouts: AtomicU64,
    bad_heads: AtomicU64,
    deferred: AtomicU64,
    registry: Mutex<Registry>,
    /// When the summary was last logged, and each source's events since.
    summary: Mutex<Summary>,
    /// Long-polls held open now, in all and per source (see [`ConnGate::hold_long_poll`]).
    held: Mutex<HeldPolls>,
    max_held: usize,
    held_per_source: usize,
    /// Long-polls answered at once because the pool was full.
    not_held: AtomicU64,
}

/// Long-polls held open now: how many in all, and per source (sources with none are
/// forgotten, so the map is bounded by the pool's size).
#[derive(Debug, Default)]
struct HeldPolls {
    total: usize,
    per_source: HashMap<IpAddr, usize>,
}

impl ConnGate {
    /// A gate admitting at most `max` connections at once, with no per-source cap below it.
    pub fn new(max: usize) -> ConnGate {
        ConnGate::with_per_source(max, max)
    }

    /// A gate admitting at most `max` connections, at most `per_source` from one source.
    pub fn with_per_source(max: usize, per_source: usize) -> ConnGate {
        let per_source = per_source.max(1);
        let max_held = (max / LONG_POLL_SHARE).max(1);
        ConnGate {
            max,
            per_source,
            held: Mutex::default(),
            max_held,
            held_per_source: LONG_POLLS_PER_SOURCE.min(per_source).min(max_held),
            not_held: AtomicU64::new(0),
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            body_timeouts: AtomicU64::new(0),
            bad_heads: AtomicU64::new(0),
            deferred: AtomicU64::new(0),
            registry: Mutex::default(),
            summary: Mutex::new((None, HashMap::new())),
        }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The per-source cap.
    pub fn max_per_source(&self) -> usize {
        self.per_source
    }

    /// Connections open now (including evicted ones still closing).
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections refused since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Connections evicted since the start.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Request bodies answered 408 since the start.
    pub fn body_timeouts(&self) -> u64 {
        self.body_timeouts.load(Ordering::Relaxed)
    }

    /// Request heads hyper refused itself (400, 414, 431) so far.
    pub fn bad_heads(&self) -> u64 {
        self.bad_heads.load(Ordering::Relaxed)
    }

    /// Connections deferred so far (see [`BAD_HEAD_DEFER`]).
    pub fn deferred(&self) -> u64 {
        self.deferred.load(Ordering::Relaxed)
    }

    /// Hyper refused a head of a connection from `source`: counted towards the source's
    /// allowance ([`BAD_HEADS_FREE`]).
    fn note_bad_head(&self, source: IpAddr) {
        self.bad_heads.fetch_add(1, Ordering::Relaxed);
        self.registry.lock().unwrap_or_else(|p| p.into_inner()).note_bad_head(source, Instant::now());
    }

    /// Long-polls that may be held open at once (one in [`LONG_POLL_SHARE`] of the cap).
    pub fn max_long_polls(&self) -> usize {
        self.max_held
    }

    /// Long-polls held open now.
    pub fn long_polls(&self) -> usize {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// Long-polls answered at once since the start: the pool (or their source's share of
    /// it) was full.
    pub fn long_polls_not_held(&self) -> u64 {
        self.not_held.load(Ordering::Relaxed)
    }

    /// A place in the long-poll pool for a request on `conn`, or None: the request must be
    /// answered at once with what there is (its client polls again), counted.
    ///
    /// Issue 39 point 2: a long-poll (`master status --watch` needs no credential) held a
    /// connection as "busy" for up to 30 s, never evicted, so 8 addresses x 128 of them
    /// filled `--max-connections` and every other request, `/livez` included, got 503. Now
    /// at most one connection in [`LONG_POLL_SHARE`] is held by long-polls, and at most
    /// [`LONG_POLLS_PER_SOURCE`] per source; while held the connection is in
    /// [`Phase::Held`], which a newcomer may evict (the poll then answers at once). So
    /// long-polls never take the slots other requests need. A connection the gate no
    /// longer knows (already evicted) gets no place.
    pub fn hold_long_poll(self: &Arc<ConnGate>, conn: &Arc<ConnState>) -> Option<HeldPoll> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let of_source = held.per_source.get(&conn.source).copied().unwrap_or(0);
        if conn.is_evicted() || held.total >= self.max_held || of_source >= self.held_per_source {
            drop(held);
            self.not_held.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        held.total += 1;
        *held.per_source.entry(conn.source).or_default() += 1;
        drop(held);
        conn.set_phase(Phase::Held);
        Some(HeldPoll { gate: Some(self.clone()), conn: Some(conn.clone()) })
    }

    /// The open connection from `peer`.
    pub fn conn(&self, peer: SocketAddr) -> Option<Arc<ConnState>> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner()).by_peer.get(&peer).cloned()
    }

    /// A slot for a new connection from `peer`, or None (counted and logged as a refusal).
    ///
    /// Issue 28 point 1: an attacker and a probe may share one source address, so a full
    /// source (or a full server) does not simply refuse the newcomer: it evicts a
    /// connection the server is not working for, of the same source at the per-source cap,
    /// of any source at the global cap, the first in the order the module documentation
    /// gives (issue 39 point 3: connections that never completed a request and showed no
    /// credential first, oldest waiting first; proven ones last; never by the size of their
    /// source). A real client sends its head at once and is then busy, so a flood of idle
    /// or trickling connections evicts itself. Only when nothing is evictable is the
    /// newcomer refused.
    pub fn try_enter(self: &Arc<ConnGate>, peer: SocketAddr) -> Option<ConnSlot> {
        self.try_enter_with(peer, None, false)
    }

    /// [`ConnGate::try_enter`] for a connection whose socket eviction may look at, `tls`
    /// when a TLS handshake comes first (see [`AfterHandshake`]).
    pub fn try_enter_with(
        self: &Arc<ConnGate>,
        peer: SocketAddr,
        socket: Option<Arc<TcpStream>>,
        tls: bool,
    ) -> Option<ConnSlot> {
        let source = source_key(peer.ip());
        let mut reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        let deferred = reg.deferred(source, now);
        let state = Arc::new(ConnState::new(peer, socket, tls, deferred));
        let full_source = reg.count(source) >= self.per_source;
        let full_server = !full_source && reg.by_peer.len() >= self.max;
        let victim = if full_source {
            Some(reg.victim(Some(source)))
        } else if full_server && !reg.penalised(source, now) {
            Some(reg.victim(None))
        } else if full_server {
            // A source evicted at the cap a moment ago evicts only its own connections (a
            // probe sharing an address with a flood is still served, issue 28 point 1); a
            // source with none left, like each of 1,500 single-connection addresses, is
            // refused.
            Some(reg.victim(Some(source)))
        } else {
            None
        };
        // Nothing evictable, or too many evicted connections still closing: refuse.
        let refuse = matches!(victim, Some(None)) || self.open() >= self.max + EVICTION_MARGIN;
        if refuse {
            drop(reg);
            self.refused.fetch_add(1, Ordering::Relaxed);
            self.note(peer.ip(), ConnEvent::Refused);
            return None;
        }
        let victim = victim.flatten();
        if let Some(v) = &victim {
            reg.remove(v);
            v.evict();
            // A proven connection's source is a client that showed a credential: it is not
            // penalised (it was last in the order anyway).
            if full_server && !v.proven.load(Ordering::Relaxed) {
                reg.penalise(v.source, now);
            }
        }
        reg.insert(state.clone());
        self.open.fetch_add(1, Ordering::AcqRel);
        drop(reg);
        if let Some(v) = victim {
            self.evicted.fetch_add(1, Ordering::Relaxed);
            self.note(v.peer.ip(), ConnEvent::Evicted);
        }
        if deferred {
            self.deferred.fetch_add(1, Ordering::Relaxed);
            self.note(peer.ip(), ConnEvent::Deferred);
        }
        Some(ConnSlot { gate: self.clone(), state })
    }

    /// Counts `event` for `ip`'s source, and logs the summary of every source's events when
    /// the last one is at least `SUMMARY_EVERY` old: one line per source per interval.
    pub fn note(&self, ip: IpAddr, event: ConnEvent) {
        if event == ConnEvent::BodyTimeout {
            self.body_timeouts.fetch_add(1, Ordering::Relaxed);
        }
        let mut s = self.summary.lock().unwrap_or_else(|p| p.into_inner());
        let mut key = source_key(ip);
        if s.1.len() >= SUMMARY_SOURCES && !s.1.contains_key(&key) {
            key = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
        }
        s.1.entry(key).or_default()[event as usize] += 1;
        if s.0.is_none_or(|at| at.elapsed() >= SUMMARY_EVERY) {
            let since = s.0.map(|at| at.elapsed().as_secs());
            for (source, [refused, evicted, body_timeouts, deferred]) in s.1.drain() {
                tracing::warn!(
                    %source,
                    refused,
                    evicted,
                    body_timeouts,
                    deferred,
                    since_last_summary_s = since,
                    max_connections = self.max,
                    max_connections_per_source = self.per_source,
                    "connection limits: connections of one source refused, evicted, timed out or deferred (one line per source per interval)"
                );
            }
            s.0 = Some(Instant::now());
        }
    }
}

/// One admitted connection's place under the caps; given back on drop.
#[derive(Debug)]
pub struct ConnSlot {
    gate: Arc<ConnGate>,
    state: Arc<ConnState>,
}

impl ConnSlot {
    /// The connection's state.
    pub fn state(&self) -> &Arc<ConnState> {
        &self.state
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.gate.registry.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.state);
        self.gate.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A long-poll's place in the pool ([`ConnGate::hold_long_poll`]); given back on drop, when
/// the connection is the handler's again ([`Phase::Busy`]) until its answer is written.
#[derive(Debug)]
pub struct HeldPoll {
    gate: Option<Arc<ConnGate>>,
    conn: Option<Arc<ConnState>>,
}

impl HeldPoll {
    /// A place outside any pool: a router driven without a socket has no connections to
    /// share (in-process tests).
    pub fn unbounded() -> HeldPoll {
        HeldPoll { gate: None, conn: None }
    }

    /// Resolves when the held connection is evicted (never for [`HeldPoll::unbounded`]):
    /// the long-poll then answers at once with what it has.
    pub async fn evicted(&self) {
        match &self.conn {
            Some(c) => c.evicted().await,
            None => std::future::pending().await,
        }
    }
}

impl Drop for HeldPoll {
    fn drop(&mut self) {
        if let (Some(gate), Some(conn)) = (&self.gate, &self.conn) {
            let mut held = gate.held.lock().unwrap_or_else(|p| p.into_inner());
            held.total -= 1;
            if let Some(n) = held.per_source.get_mut(&conn.source) {
                *n -= 1;
                if *n == 0 {
                    held.per_source.remove(&conn.source);
                }
            }
            drop(held);
            if conn.phase() == Phase::Held {
                conn.set_phase(Phase::Busy);
            }
        }
    }
}

/// The JSON error envelope as a complete HTTP/1.1 answer that closes the connection: for
/// answers written below hyper (refusals, evictions, and hyper's own error answers).
fn envelope_answer(status: u16, code: &str, message: &str, hint: &str) -> Vec<u8> {
    let body = serde_json::json!({"error": {"code": code, "message": message, "hint": hint}}).to_string();
    let reason = axum::http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Error");
    let retry = if code == "coordinator_unavailable" { "retry-after: 1\r\n" } else { "" };
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{retry}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The answer a connection past a cap gets on plain HTTP, before it is closed, and an
/// evicted connection that had not sent a complete request: `coordinator_unavailable` (a
/// client retries later). Over TLS the connection is closed without an answer (a plain-text
/// answer is not something a TLS client can read).
fn refusal_answer() -> Vec<u8> {
    envelope_answer(
        503,
        "coordinator_unavailable",
        "coordinator store unavailable: too many open connections",
        "retry later",
    )
}

/// Issue 28 point 5, "every answer, hyper's included, in the JSON envelope": hyper answers
/// a request head it cannot parse (400), one too large (431) or a target too long (414)
/// itself, before any request reaches the router, with an empty body. `buf` is what hyper
/// writes; when it is such an answer (an error status line and no content type: every
/// answer the router makes carries one), this is the same status as the envelope.
fn hyper_error_answer(buf: &[u8]) -> Option<Vec<u8>> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..end]).ok()?.to_ascii_lowercase();
    let status: u16 = head.strip_prefix("http/1.")?.get(2..5)?.parse().ok()?;
    if status < 400 || head.contains("\r\ncontent-type:") {
        return None;
    }
    let (code, message, hint) = match status {
        400 => ("invalid_argument", "malformed HTTP request head", "send a well-formed HTTP/1.1 request"),
        414 => ("invalid_argument", "request target too long", "send a shorter path and query"),
        431 => ("invalid_argument", "request head too large", "send fewer or shorter header fields"),
        s if s < 500 => {
            ("invalid_argument", "the request was refused before it was read", "send a well-formed HTTP/1.1 request")
        }
        _ => ("coordinator_unavailable", "the server could not read the request", "retry later"),
    };
    Some(envelope_answer(status, code, message, hint))
}

/// A connection's stream with its [`ConnSlot`]: the slot lives exactly as long as the
/// stream, which hyper drops when the connection ends for any reason. It also carries out
/// an eviction (see [`ConnGate::try_enter`]) and puts hyper's own error answers into the
/// JSON envelope (plain HTTP only: under TLS these bytes are ciphertext).
#[derive(Debug)]
pub struct Counted<S> {
    /// Dropped first: the registry forgets the connection before its socket closes.
    slot: ConnSlot,
    inner: S,
    /// Plain HTTP: answers may be written below hyper.
    plain: bool,
    /// An answer written in hyper's place, and how much of it is written.
    pending: Vec<u8>,
    pending_at: usize,
    /// Bytes written and not yet flushed: an eviction waits for them (never cuts an answer).
    unflushed: bool,
    /// The eviction answer was tried.
    told: bool,
    /// A deferred connection's wait before its first read (see [`BAD_HEAD_DEFER`]).
    defer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Counted<S> {
    fn new(inner: S, slot: ConnSlot, plain: bool) -> Counted<S> {
        Counted { inner, slot, plain, pending: Vec::new(), pending_at: 0, unflushed: false, told: false, defer: None }
    }
}

impl<S: AsyncWrite + Unpin> Counted<S> {
    /// Writes what is left of an answer written in hyper's place.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.pending_at < self.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.pending_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending_at += n;
        }
        self.pending.clear();
        self.pending_at = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        {
            let mut w = self.slot.state.read_waker.lock().unwrap_or_else(|p| p.into_inner());
            if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *w = Some(cx.waker().clone());
            }
        }
        // An evicted connection waiting for a head ends here, once whatever was written on
        // it is flushed (a body still arriving is answered by the request guard instead).
        let this = &mut *self;
        let phase = this.slot.state.phase();
        if this.slot.state.is_evicted()
            && matches!(phase, Phase::Head | Phase::Handshake)
            && !this.unflushed
            && this.pending.is_empty()
        {
            if this.plain && !this.told {
                this.told = true;
                let answer = envelope_answer(
                    503,
                    "coordinator_unavailable",
                    "too many open connections from this source: this one waited longest for a request",
                    "retry later",
                );
                let _ = Pin::new(&mut this.inner).poll_write(cx, &answer);
                // Read what already arrived so that closing sends a FIN, not a reset.
                let mut sink = [0u8; 4096];
                for _ in 0..16 {
                    let mut b = ReadBuf::new(&mut sink);
                    match Pin::new(&mut this.inner).poll_read(cx, &mut b) {
                        Poll::Ready(Ok(())) if !b.filled().is_empty() => continue,
                        _ => break,
                    }
                }
            }
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionAborted, "connection evicted")));
        }
        if this.slot.state.deferred.load(Ordering::Relaxed) {
            // Its source sent too many heads hyper refused: nothing is read (nothing parsed)
            // until the wait is over; an eviction meanwhile wakes the read and ends above.
            let wait = this.defer.get_or_insert_with(|| Box::pin(tokio::time::sleep(BAD_HEAD_DEFER)));
            ready!(wait.as_mut().poll(cx));
            this.defer = None;
            this.slot.state.deferred.store(false, Ordering::Relaxed);
        }
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if r.is_pending() {
            this.slot.state.seen_waiting.store(true, Ordering::Relaxed);
        } else if phase == Phase::Head
            && buf.filled().len() > before
            && this.slot.state.tls_pending.load(Ordering::Relaxed)
        {
            // The client's hello: a handshake is in progress (evicted after idle
            // connections, see the module documentation) until `AfterHandshake` ends it.
            this.slot.state.set_phase(Phase::Handshake);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.drain(cx))?;
        if this.plain
            && this.slot.state.phase() == Phase::Head
            && let Some(answer) = hyper_error_answer(buf)
        {
            if answer.starts_with(b"HTTP/1.1 4") {
                this.slot.gate.note_bad_head(this.slot.state.source);
            }
            this.pending = answer;
            this.unflushed = true;
            if let Poll::Ready(Err(e)) = this.drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.unflushed = true;
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.drain(cx))?;
        ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
        this.unflushed = false;
        let state = &this.slot.state;
        if state.phase() == Phase::Answered {
            // The answer is out: the connection waits on its client again (idle keep-alive).
            state.set_phase(Phase::Head);
            if state.is_evicted() {
                cx.waker().wake_by_ref();
            }
        }
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.plain && self.slot.state.phase() == Phase::Head {
            // Only hyper's own error answers are written in this phase (rarely): check them
            // whole.
            let joined: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            return self.poll_write(cx, &joined);
        }
        let this = &mut *self;
        ready!(this.drain(cx))?;
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.unflushed = true;
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A TCP stream shared with the connection registry (which only peeks at it, see
/// `ConnState::has_unread_bytes`); reads and writes go through tokio's readiness.
#[derive(Debug)]
pub struct SharedTcp(Arc<TcpStream>);

impl AsyncRead for SharedTcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for SharedTcp {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.0.poll_write_ready(cx))?;
            match self.0.try_write_vectored(bufs) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
    fn is_write_vectored(&self) -> bool {
        true
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(rustix::net::shutdown(&*self.0, rustix::net::Shutdown::Write).map_err(io::Error::from))
    }
}

/// Turns Nagle's algorithm off on an accepted connection. Every answer is written whole, so
/// there is nothing to coalesce; but under TLS an answer leaves as several records, and
/// with Nagle on the last waits for the client's delayed ACK: the abuse bench saw every
/// TLS request take 40-45 ms (issue 39's TLS row) where plain HTTP took 2 ms. A failure
/// leaves the connection as it was (slower, not wrong).
fn no_delay(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY not set");
    }
}

/// The first acceptor every TCP connection meets (under TLS, before the handshake): it
/// takes a [`ConnSlot`] (evicting a waiting connection if need be) or refuses the
/// connection at once.
#[derive(Debug, Clone)]
pub struct CappedAcceptor {
    gate: Arc<ConnGate>,
    /// Plain HTTP: answers may be written below hyper (refusals, evictions, hyper's errors).
    plain: bool,
}

impl CappedAcceptor {
    /// An acceptor over `gate`; `plain` for plain HTTP (see `refusal_answer`).
    pub fn new(gate: Arc<ConnGate>, plain: bool) -> CappedAcceptor {
        CappedAcceptor { gate, plain }
    }
}

/// Answers a refused plain-HTTP connection without waiting on it: one non-blocking write
/// of the 503 envelope (a fresh socket's send buffer always takes it), then whatever request
/// bytes already arrived are read and dropped so that closing sends a FIN, not a reset that
/// could destroy the answer before the client reads it.
fn refuse(stream: &TcpStream) {
    let _ = stream.try_write(&refusal_answer());
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match stream.try_read(&mut sink) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
}

impl<S> axum_server::accept::Accept<TcpStream, S> for CappedAcceptor {
    type Stream = Counted<SharedTcp>;
    type Service = S;
    type Future = std::future::Ready<io::Result<(Self::Stream, S)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        no_delay(&stream);
        let stream = Arc::new(stream);
        let slot =
            stream.peer_addr().ok().and_then(|peer| self.gate.try_enter_with(peer, Some(stream.clone()), !self.plain));
        match slot {
            Some(slot) => std::future::ready(Ok((Counted::new(SharedTcp(stream), slot, self.plain), service))),
            None => {
                if self.plain {
                    refuse(&stream);
                }
                std::future::ready(Err(io::Error::other("connection refused: a connection cap is reached")))
            }
        }
    }
}

/// Wraps the TLS acceptor (which wraps [`CappedAcceptor`]): once the handshake has
/// finished, the connection's phase goes from [`Phase::Handshake`] to waiting for its first
/// request head (issue 39 point 3: a handshake in progress has its own place in the
/// eviction order). The gate finds the connection by its peer address, as the request
/// guard does.
#[derive(Debug, Clone)]
pub struct AfterHandshake<A> {
    inner: A,
    gate: Arc<ConnGate>,
}

impl<A> AfterHandshake<A> {
    /// `inner` (a TLS acceptor over a [`CappedAcceptor`] of `gate`), telling `gate`.
    pub fn new(inner: A, gate: Arc<ConnGate>) -> AfterHandshake<A> {
        AfterHandshake { inner, gate }
    }
}

impl<S, A> axum_server::accept::Accept<TcpStream, S> for AfterHandshake<A>
where
    A: axum_server::accept::Accept<TcpStream, S>,
    A::Future: Send + 'static,
{
    type Stream = A::Stream;
    type Service = A::Service;
    type Future = Pin<Box<dyn std::future::Future<Output = io::Result<(A::Stream, A::Service)>> + Send>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let peer = stream.peer_addr().ok();
        let gate = self.gate.clone();
        let handshake = self.inner.accept(stream, service);
        Box::pin(async move {
            let done = handshake.await;
            if done.is_ok()
                && let Some(conn) = peer.and_then(|p| gate.conn(p))
            {
                conn.handshake_done();
            }
            done
        })
    }
}

/// The open-file limit before and after [`raise_nofile_limit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileLimit {
    /// The soft limit the process started with (None: unlimited).
    pub soft_before: Option<u64>,
    /// The soft limit now.
    pub soft: Option<u64>,
    /// The hard limit.
    pub hard: Option<u64>,
}

/// Raises the soft open-file limit to the hard limit (an unprivileged process may), so the
/// connection cap, not EMFILE, decides when a connection is refused. A failure leaves the
/// soft limit as it was; the result says what it is.
pub fn raise_nofile_limit() -> NofileLimit {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let mut now = before.current;
    if before.current != before.maximum {
        let raised = rustix::process::Rlimit { current: before.maximum, maximum: before.maximum };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            now = getrlimit(Resource::Nofile).current;
        }
    }
    NofileLimit { soft_before: before.current, soft: now, hard: before.maximum }
}

/// The connection cap to use: `requested`, lowered to the soft open-file limit minus
/// [`RESERVED_FDS`] (at least 1) so that a full server still has descriptors to accept and
/// refuse with, to talk to its store and to log.
pub fn connection_cap(requested: usize, nofile_soft: Option<u64>) -> usize {
    match nofile_soft {
        None => requested,
        Some(soft) => {
            let room = usize::try_from(soft.saturating_sub(RESERVED_FDS)).unwrap_or(usize::MAX).max(1);
            requested.min(room)
        }
    }
}

/// The key a source address is counted under: an IPv4 address, or an IPv6 /64 (one
/// subscriber is usually handed a whole /64, so its addresses are one source).
pub(crate) fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mut seg = v6.segments();
                seg[4..].fill(0);
                IpAddr::V6(seg.into())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(ip: &str, port: u16) -> SocketAddr {
        SocketAddr::new(ip.parse().unwrap(), port)
    }

    #[test]
    fn the_gate_admits_up_to_the_cap_and_counts_refusals() {
        let gate = Arc::new(ConnGate::new(2));
        let a = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        let b = gate.try_enter(peer("10.0.0.2", 1)).unwrap();
        // Both are busy: nothing to evict, the third is refused.
        a.state().set_phase(Phase::Busy);
        b.state().set_phase(Phase::Busy);
        assert!(gate.try_enter(peer("10.0.0.3", 1)).is_none());
        assert_eq!((gate.open(), gate.refused()), (2, 1));
        drop(a);
        let c = gate.try_enter(peer("10.0.0.3", 1)).unwrap();
        c.state().set_phase(Phase::Busy);
        assert!(gate.try_enter(peer("10.0.0.4", 1)).is_none());
        drop((b, c));
        assert_eq!((gate.open(), gate.refused(), gate.max()), (0, 2, 2));
    }

    /// Issue 39's bad-head flood: a source is deferred once it sent more refused heads than
    /// the allowance in a window, stays deferred through the next window, and is forgotten
    /// after a quiet one; other sources are not touched.
    #[test]
    fn a_source_past_its_refused_heads_is_deferred_for_two_windows() {
        let mut reg = Registry::default();
        let (src, other): (IpAddr, IpAddr) = ("10.0.0.7".parse().unwrap(), "10.0.0.8".parse().unwrap());
        let t = Instant::now();
        for _ in 0..BAD_HEADS_FREE {
            reg.note_bad_head(src, t);
        }
        assert!(!reg.deferred(src, t), "the allowance itself defers nothing");
        reg.note_bad_head(src, t);
        assert!(reg.deferred(src, t) && !reg.deferred(other, t));
        assert!(reg.deferred(src, t + BAD_HEAD_WINDOW + Duration::from_secs(1)), "the next window remembers");
        assert!(!reg.deferred(src, t + BAD_HEAD_WINDOW * 2), "a quiet window forgets");
        // A new window counts from zero, with the last one's count carried as `before`.
        let later = t + BAD_HEAD_WINDOW * 3;
        reg.note_bad_head(src, later);
        assert!(!reg.deferred(src, later));
    }

    /// A deferred connection is held without work (class 0, with held long-polls): it goes
    /// before an older connection waiting on its client, and it is counted.
    #[test]
    fn a_deferred_connection_is_evicted_first() {
        let gate = Arc::new(ConnGate::new(3));
        let src = "10.0.0.7".parse().unwrap();
        for _ in 0..=BAD_HEADS_FREE {
            gate.note_bad_head(src);
        }
        let waiting = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        let busy = gate.try_enter(peer("10.0.0.2", 1)).unwrap();
        busy.state().set_phase(Phase::Busy);
        std::thread::sleep(Duration::from_millis(5));
        let deferred = gate.try_enter(peer("10.0.0.7", 1)).unwrap();
        assert!(deferred.state().deferred.load(Ordering::Relaxed) && !waiting.state().deferred.load(Ordering::Relaxed));
        assert_eq!((gate.deferred(), gate.bad_heads()), (1, u64::from(BAD_HEADS_FREE) + 1));
        let _probe = gate.try_enter(peer("10.0.0.3", 1)).expect("evicts the deferred connection");
        assert!(deferred.state().is_evicted() && !waiting.state().is_evicted() && !busy.state().is_evicted());
    }

    /// Issue 28 point 1: a full source evicts its own connection that waited on its client
    /// the longest, never a busy one, and never another source's.
    #[test]
    fn a_full_source_evicts_its_longest_waiting_connection() {
        let gate = Arc::new(ConnGate::with_per_source(100, 3));
        let other = gate.try_enter(peer("10.0.0.9", 1)).unwrap();
        let busy = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        busy.state().set_phase(Phase::Busy);
        let oldest = gate.try_enter(peer("10.0.0.1", 2)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let newer = gate.try_enter(peer("10.0.0.1", 3)).unwrap();
        newer.state().set_phase(Phase::Body);
        let probe = gate.try_enter(peer("10.0.0.1", 4)).expect("evicts a waiting one");
        assert!(oldest.state().is_evicted() && !busy.state().is_evicted() && !newer.state().is_evicted());
        assert!(!other.state().is_evicted());
        assert!(gate.conn(peer("10.0.0.1", 2)).is_none(), "an evicted connection no longer counts");
        assert_eq!((gate.evicted(), gate.refused(), gate.open()), (1, 0, 5));
        probe.state().set_phase(Phase::Busy);
        newer.state().set_phase(Phase::Busy);
        assert!(gate.try_enter(peer("10.0.0.1", 5)).is_none(), "nothing left to evict: refused");
        drop(oldest);
        assert_eq!(gate.open(), 4);
    }

    /// A connection the server found waiting is evicted before an older one it has not yet
    /// read from (whose head may be in the socket buffer: a probe during a reconnect flood).
    #[test]
    fn known_waiters_are_evicted_before_unread_connections() {
        let gate = Arc::new(ConnGate::with_per_source(100, 2));
        let unread = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let idle = gate.try_enter(peer("10.0.0.1", 2)).unwrap();
        idle.state().seen_waiting.store(true, Ordering::Relaxed);
        let _new = gate.try_enter(peer("10.0.0.1", 3)).unwrap();
        assert!(idle.state().is_evicted() && !unread.state().is_evicted());
    }

    /// Issue 39 point 3, scaled down: at the global cap, a flood of single-connection
    /// addresses that never send anything evicts only its own connections (the oldest
    /// first), never those of a host whose clients are busy, idle between requests, or
    /// proven. On main the source holding the most connections lost one: the host.
    #[test]
    fn a_distributed_flood_evicts_itself_not_a_host_with_many_clients() {
        let gate = Arc::new(ConnGate::with_per_source(12, 12));
        let host: Vec<ConnSlot> = (1..=4).map(|port| gate.try_enter(peer("10.0.0.1", port)).unwrap()).collect();
        // One client authenticated (a heartbeat with its session token), two are busy.
        host[1].state().prove();
        host[2].state().set_phase(Phase::Busy);
        host[3].state().set_phase(Phase::Busy);
        // A request by the host's first two clients: answered, then idle (seen waiting).
        let request = |slots: &[ConnSlot]| {
            for s in slots {
                s.state().set_phase(Phase::Busy);
                s.state().set_phase(Phase::Head);
                s.state().seen_waiting.store(true, Ordering::Relaxed);
            }
        };
        let mut flood: Vec<(u16, ConnSlot)> = Vec::new();
        let mut evicted = Vec::new();
        for i in 0..200u16 {
            if i % 4 == 0 {
                request(&host[..2]);
            }
            std::thread::sleep(Duration::from_micros(100));
            let ip = format!("10.1.{}.{}", i / 250, i % 250 + 1);
            let slot = gate.try_enter(peer(&ip, 1)).expect("a flood connection evicts another");
            slot.state().seen_waiting.store(true, Ordering::Relaxed);
            flood.push((i, slot));
            // Evicted connections close (and give their descriptor back).
            evicted.extend(flood.iter().filter(|(_, s)| s.state().is_evicted()).map(|(i, _)| *i));
            flood.retain(|(_, s)| !s.state().is_evicted());
        }
        assert!(host.iter().all(|s| !s.state().is_evicted()), "the host lost a connection to the flood");
        assert_eq!(gate.evicted(), 200 - 8, "every newcomer past the cap evicted one flood connection");
        assert_eq!(evicted, (0..192).collect::<Vec<u16>>(), "the oldest flood connections went first");
        // Without requests the idle client ages; the proven one still outlasts the flood.
        for i in 200..220u16 {
            let slot = gate.try_enter(peer(&format!("10.2.0.{}", i - 199), 1)).unwrap();
            slot.state().seen_waiting.store(true, Ordering::Relaxed);
            flood.push((i, slot));
            flood.retain(|(_, s)| !s.state().is_evicted());
        }
        assert!(host[0].state().is_evicted() && !host[1].state().is_evicted());
    }

    /// Issue 39 point 3: a source whose connection was evicted at the global cap cannot
    /// come straight back and evict someone else (under TLS every such reconnect is a
    /// handshake the server computes); its penalty doubles with each eviction, a proven
    /// connection's source is never penalised, and the per-source cap is unaffected.
    #[test]
    fn a_source_evicted_at_the_cap_is_refused_for_its_penalty() {
        let gate = Arc::new(ConnGate::with_per_source(2, 2));
        let a = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let b = gate.try_enter(peer("10.0.0.2", 1)).unwrap();
        let c = gate.try_enter(peer("10.0.0.3", 1)).expect("evicts the oldest waiter");
        assert!(a.state().is_evicted() && !b.state().is_evicted());
        drop(a);
        assert!(gate.try_enter(peer("10.0.0.1", 2)).is_none(), "the evicted source is refused at the cap");
        assert!(!b.state().is_evicted() && !c.state().is_evicted());
        // A penalised source that still holds a waiting connection evicts its own.
        c.state().set_phase(Phase::Busy);
        gate.registry.lock().unwrap().penalise("10.0.0.2".parse().unwrap(), Instant::now());
        let b2 = gate.try_enter(peer("10.0.0.2", 2)).expect("evicts its own waiting connection");
        assert!(b.state().is_evicted() && !c.state().is_evicted());
        drop(b);
        let b = b2;
        c.state().set_phase(Phase::Head);
        // A proven connection evicted at the cap leaves no penalty on its source.
        b.state().prove();
        c.state().set_phase(Phase::Busy);
        let d = gate.try_enter(peer("10.0.0.4", 1)).expect("evicts the proven idle one");
        assert!(b.state().is_evicted());
        drop(b);
        d.state().set_phase(Phase::Busy);
        let mut reg = Registry::default();
        let t = Instant::now();
        let src: IpAddr = "10.0.0.9".parse().unwrap();
        reg.penalise(src, t);
        assert!(reg.penalised(src, t) && !reg.penalised(src, t + EVICTION_PENALTY));
        reg.penalise(src, t + EVICTION_PENALTY);
        assert!(reg.penalised(src, t + EVICTION_PENALTY * 2), "the second penalty is twice as long");
        let later = t + EVICTION_PENALTY * 3 + EVICTION_PENALTY_MEMORY;
        reg.penalise(src, later);
        assert!(!reg.penalised(src, later + EVICTION_PENALTY), "forgotten after a quiet minute: 1 s again");
        let gate2 = Arc::new(ConnGate::with_per_source(100, 1));
        let _x = gate2.try_enter(peer("10.0.0.5", 1)).unwrap();
        assert!(gate2.try_enter(peer("10.0.0.5", 2)).is_some(), "a full source still evicts its own");
        assert!(gate2.try_enter(peer("10.0.0.5", 3)).is_some(), "and is not penalised for it");
    }

    /// Accepted connections answer without waiting for the client's delayed ACK.
    #[test]
    fn accepted_connections_have_nagle_off() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (accepted, _) = listener.accept().await.unwrap();
            assert!(!accepted.nodelay().unwrap(), "the kernel's default, which the acceptor changes");
            no_delay(&accepted);
            assert!(accepted.nodelay().unwrap());
        });
    }

    /// The eviction order of the module documentation, class by class: a held
    /// unauthenticated long-poll, unauthenticated connections waiting on their client (the
    /// oldest first), a TLS handshake in progress, an idle proven one, a held proven
    /// long-poll; a busy one never.
    #[test]
    fn eviction_follows_the_documented_order() {
        let gate = Arc::new(ConnGate::with_per_source(8, 8));
        let held_proven = gate.try_enter(peer("10.0.0.6", 1)).unwrap();
        held_proven.state().prove();
        let _h1 = gate.hold_long_poll(held_proven.state()).unwrap();
        let proven = gate.try_enter(peer("10.0.0.5", 1)).unwrap();
        proven.state().prove();
        let handshake = gate.try_enter_with(peer("10.0.0.4", 1), None, true).unwrap();
        handshake.state().set_phase(Phase::Handshake);
        let held = gate.try_enter(peer("10.0.0.3", 1)).unwrap();
        let _h2 = gate.hold_long_poll(held.state()).unwrap();
        let idle = gate.try_enter(peer("10.0.0.2", 1)).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let new = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        let busy = gate.try_enter(peer("10.0.0.9", 1)).unwrap();
        busy.state().set_phase(Phase::Busy);
        let busy2 = gate.try_enter(peer("10.0.0.9", 2)).unwrap();
        busy2.state().set_phase(Phase::Busy);
        let order = [&held, &idle, &new, &handshake, &proven, &held_proven];
        let mut newcomers = Vec::new();
        for (i, expected) in order.iter().enumerate() {
            let newcomer = gate.try_enter(peer("10.0.1.1", i as u16 + 1)).expect("one is evictable");
            newcomer.state().set_phase(Phase::Busy);
            newcomers.push(newcomer);
            for (j, c) in order.iter().enumerate() {
                assert_eq!(c.state().is_evicted(), j <= i, "after {} evictions, class {j}", i + 1);
            }
            assert!(expected.state().is_evicted());
        }
        assert!(gate.try_enter(peer("10.0.1.2", 1)).is_none(), "only busy ones left: refused");
        assert!(!busy.state().is_evicted());
    }

    /// Issue 39 point 3, TLS: a handshake in progress counts against its source's cap, and
    /// at the global cap it is evicted only after the idle connections of every source.
    #[test]
    fn a_tls_handshake_is_not_the_first_victim() {
        let gate = Arc::new(ConnGate::with_per_source(3, 2));
        let handshake = gate.try_enter_with(peer("10.0.0.1", 1), None, true).unwrap();
        // The hello arrived (as `Counted` sees it): a handshake in progress.
        handshake.state().set_phase(Phase::Handshake);
        std::thread::sleep(Duration::from_millis(5));
        let idle = gate.try_enter(peer("10.0.0.2", 1)).unwrap();
        idle.state().seen_waiting.store(true, Ordering::Relaxed);
        let other = gate.try_enter(peer("10.0.0.3", 1)).unwrap();
        other.state().set_phase(Phase::Busy);
        let _n = gate.try_enter(peer("10.0.0.4", 1)).unwrap();
        assert!(idle.state().is_evicted() && !handshake.state().is_evicted(), "the older handshake was cut first");
        // Its source's cap counts it: a second connection fits, a third evicts within it.
        let second = gate.try_enter_with(peer("10.0.0.1", 2), None, true).unwrap();
        second.state().set_phase(Phase::Busy);
        assert_eq!(gate.registry.lock().unwrap().count(IpAddr::from([10, 0, 0, 1])), 2);
        let _third = gate.try_enter(peer("10.0.0.1", 3)).expect("evicts the handshake of its own source");
        assert!(handshake.state().is_evicted());
        // A TLS connection that has sent nothing yet waits like any new connection, and its
        // handshake's end makes it one waiting for its first request.
        let quiet = gate.try_enter_with(peer("10.0.0.8", 1), None, true).unwrap();
        assert_eq!(quiet.state().phase(), Phase::Head);
        let c = ConnState::new(peer("10.0.0.9", 1), None, true, false);
        c.set_phase(Phase::Handshake);
        c.handshake_done();
        assert_eq!((c.phase(), c.tls_pending.load(Ordering::Relaxed)), (Phase::Head, false));
    }

    /// Issue 39 point 2: long-polls are held within one connection in [`LONG_POLL_SHARE`]
    /// of the cap and [`LONG_POLLS_PER_SOURCE`] per source; past either the request gets no
    /// place (answered at once), and a place is given back on drop.
    #[test]
    fn long_polls_are_held_within_their_pool() {
        let gate = Arc::new(ConnGate::with_per_source(64, 64));
        assert_eq!(gate.max_long_polls(), 16);
        let conns: Vec<ConnSlot> =
            (0..20u16).map(|i| gate.try_enter(peer(&format!("10.0.0.{}", i / 10 + 1), i)).unwrap()).collect();
        let mut held = Vec::new();
        for c in &conns {
            c.state().set_phase(Phase::Busy);
            if let Some(h) = gate.hold_long_poll(c.state()) {
                assert_eq!(c.state().phase(), Phase::Held);
                held.push(h);
            }
        }
        // Two sources of 10 each: 8 held per source, 2 each answered at once.
        assert_eq!((held.len(), gate.long_polls(), gate.long_polls_not_held()), (16, 16, 4));
        let more = gate.try_enter(peer("10.0.0.9", 1)).unwrap();
        assert!(gate.hold_long_poll(more.state()).is_none(), "the pool is full");
        drop(held.pop());
        let kept = gate.hold_long_poll(more.state());
        assert!(kept.is_some(), "a place was given back");
        drop(held);
        assert_eq!(gate.long_polls(), 1);
        assert!(conns.iter().all(|c| c.state().phase() == Phase::Busy), "back to the handler");
        // An evicted connection gets no place.
        let gate = Arc::new(ConnGate::with_per_source(4, 4));
        let a = gate.try_enter(peer("10.0.0.1", 1)).unwrap();
        let _b = gate.try_enter(peer("10.0.0.1", 2)).unwrap();
        let _c = gate.try_enter(peer("10.0.0.1", 3)).unwrap();
        let _d = gate.try_enter(peer("10.0.0.1", 4)).unwrap();
        let _e = gate.try_enter(peer("10.0.0.2", 1)).unwrap();
        assert!(a.state().is_evicted());
        assert!(gate.hold_long_poll(a.state()).is_none());
    }

    #[test]
    fn hyper_error_answers_are_put_into_the_envelope() {
        let out =
            hyper_error_answer(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 431 "), "{text}");
        let body: serde_json::Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["error"]["code"], "invalid_argument");
        assert!(hyper_error_answer(b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\r\n{}").is_none());
        assert!(hyper_error_answer(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(hyper_error_answer(b"{\"ok\":true}").is_none());
    }

    #[test]
    fn the_cap_stays_below_the_open_file_limit() {
        assert_eq!(connection_cap(1024, None), 1024);
        assert_eq!(connection_cap(1024, Some(1_048_576)), 1024);
        assert_eq!(connection_cap(1024, Some(256)), 256 - RESERVED_FDS as usize);
        assert_eq!(connection_cap(1024, Some(10)), 1);
    }

    #[test]
    fn raising_the_limit_reaches_the_hard_limit() {
        let l = raise_nofile_limit();
        // An unlimited hard limit cannot be a soft limit for files (EPERM past fs.nr_open).
        if l.hard.is_some() {
            assert_eq!(l.soft, l.hard, "{l:?}");
        }
        assert_eq!(raise_nofile_limit().soft_before, l.soft, "idempotent");
    }

    #[test]
    fn sources_are_bounded_separately_and_forgotten_when_idle() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let slots = Arc::new(SourceSlots::new(2, 1));
            let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
            let a1 = slots.try_join(a).unwrap().enter().await;
            let _a2 = slots.try_join(a).unwrap().enter().await;
            let a3 = slots.try_join(a).expect("a third from one source may wait");
            assert!(slots.try_join(a).is_none(), "a fourth is refused at once");
            let b1 = slots.try_join(b).expect("another source is not held up by the first").enter().await;
            // The waiting one runs as soon as one of its source's running ones ends.
            let third = tokio::spawn(a3.enter());
            drop(a1);
            let a3 = third.await.unwrap();
            drop((a3, b1));
            assert_eq!(slots.sources_busy(), 1);
        });
        // One IPv6 /64 is one source; a v4-mapped address is its IPv4 address.
        let v6 = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(source_key(v6("2001:db8:1:2:aaaa::1")), source_key(v6("2001:db8:1:2:bbbb::9")));
        assert_ne!(source_key(v6("2001:db8:1:2::1")), source_key(v6("2001:db8:1:3::1")));
        assert_eq!(source_key(v6("::ffff:127.0.0.2")), v6("127.0.0.2"));
    }
}
