//! What keeps `coordinator serve` answering under abuse (issue 19): a cap on open
//! connections with a clean refusal past it, the open-file limit raised at start, and a
//! bound on the operator password verifications one source address may have in flight.
//!
//! The timeouts that free a connection slot (header read, idle keep-alive) are hyper's and
//! axum-server's; they are set in `server.rs` where the server is built. This module holds
//! the state those settings cannot express:
//!
//! * [`ConnGate`]: the number of open connections, the cap, and how many were refused.
//!   [`CappedAcceptor`] takes a slot for each accepted TCP connection before anything else
//!   runs (before TLS), and the slot is given back when the connection's stream is dropped,
//!   however the connection ended (answered, timed out, reset, shut down).
//! * [`raise_nofile_limit`]: a server whose soft open-file limit is lower than its cap would
//!   fail `accept` with EMFILE instead of refusing cleanly, so the soft limit is raised to
//!   the hard limit at start and the cap is kept below it ([`connection_cap`]).
//! * [`SourceSlots`]: per source address, how many `master claim` verifications (an argon2
//!   hash and, for a wrong password, the held-back answer) run at once, and how many may
//!   wait for them (in arrival order) before more are refused.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// File descriptors kept out of the connection cap: the listener, store connections (a
/// Redis multiplexed connection, a Postgres pool, SQLite and its journal), TLS material,
/// stdio and the runtime's own descriptors.
pub const RESERVED_FDS: u64 = 64;

/// The answer a connection past the cap gets on plain HTTP, before it is closed: the JSON
/// error envelope with `coordinator_unavailable` (a client retries later) and
/// `Connection: close`. Over TLS the connection is closed without an answer (a plain-text
/// answer is not something a TLS client can read).
const REFUSAL_BODY: &str = r#"{"error":{"code":"coordinator_unavailable","message":"coordinator store unavailable: too many open connections","hint":"retry later"}}"#;

/// How often a refusal is logged at most (a flood must not flood the log too).
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// Open connections, their cap, and refusals past it (shown on `/metrics`).
#[derive(Debug)]
pub struct ConnGate {
    max: usize,
    open: AtomicUsize,
    refused: AtomicU64,
    /// When a refusal was last logged, and how many refusals since.
    last_log: Mutex<(Option<Instant>, u64)>,
}

impl ConnGate {
    /// A gate admitting at most `max` connections at once.
    pub fn new(max: usize) -> ConnGate {
        ConnGate { max, open: AtomicUsize::new(0), refused: AtomicU64::new(0), last_log: Mutex::new((None, 0)) }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Connections refused since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// A slot for one connection, or None at the cap (counted as a refusal, and logged at
    /// most every [`REFUSAL_LOG_EVERY`]).
    pub fn try_enter(self: &Arc<ConnGate>) -> Option<ConnSlot> {
        let admitted =
            self.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1)).is_ok();
        if admitted {
            return Some(ConnSlot(self.clone()));
        }
        self.refused.fetch_add(1, Ordering::Relaxed);
        let mut log = self.last_log.lock().unwrap_or_else(|p| p.into_inner());
        log.1 += 1;
        if log.0.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_EVERY) {
            tracing::warn!(
                max_connections = self.max,
                refused_since_last_line = log.1,
                refused_total = self.refused(),
                "connection refused: the server holds --max-connections open connections"
            );
            *log = (Some(Instant::now()), 0);
        }
        None
    }
}

/// One admitted connection's place under the cap; given back on drop.
#[derive(Debug)]
pub struct ConnSlot(Arc<ConnGate>);

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection's stream with its [`ConnSlot`]: the slot lives exactly as long as the
/// stream, which hyper drops when the connection ends for any reason.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    _slot: ConnSlot,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The first acceptor every TCP connection meets (under TLS, before the handshake): it
/// takes a [`ConnSlot`] or refuses the connection at once.
#[derive(Debug, Clone)]
pub struct CappedAcceptor {
    gate: Arc<ConnGate>,
    /// Plain HTTP: answer a refused connection with the 503 envelope before closing it.
    answer_refusals: bool,
}

impl CappedAcceptor {
    /// An acceptor over `gate`; `answer_refusals` for plain HTTP (see [`REFUSAL_BODY`]).
    pub fn new(gate: Arc<ConnGate>, answer_refusals: bool) -> CappedAcceptor {
        CappedAcceptor { gate, answer_refusals }
    }
}

/// Answers a refused plain-HTTP connection without waiting on it: one non-blocking write
/// of the 503 envelope (a fresh socket's send buffer always takes it), then whatever request
/// bytes already arrived are read and dropped so that closing sends a FIN, not a reset that
/// could destroy the answer before the client reads it.
fn refuse(stream: &TcpStream) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\nretry-after: 1\r\n\r\n{REFUSAL_BODY}",
        REFUSAL_BODY.len()
    );
    let _ = stream.try_write(answer.as_bytes());
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match stream.try_read(&mut sink) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
}

impl<S> axum_server::accept::Accept<TcpStream, S> for CappedAcceptor {
    type Stream = Counted<TcpStream>;
    type Service = S;
    type Future = std::future::Ready<io::Result<(Self::Stream, S)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        match self.gate.try_enter() {
            Some(slot) => std::future::ready(Ok((Counted { inner: stream, _slot: slot }, service))),
            None => {
                if self.answer_refusals {
                    refuse(&stream);
                }
                std::future::ready(Err(io::Error::other("connection refused: --max-connections reached")))
            }
        }
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

    #[test]
    fn the_gate_admits_up_to_the_cap_and_counts_refusals() {
        let gate = Arc::new(ConnGate::new(2));
        let a = gate.try_enter().unwrap();
        let b = gate.try_enter().unwrap();
        assert!(gate.try_enter().is_none());
        assert_eq!((gate.open(), gate.refused()), (2, 1));
        drop(a);
        let c = gate.try_enter().unwrap();
        assert!(gate.try_enter().is_none());
        drop((b, c));
        assert_eq!((gate.open(), gate.refused(), gate.max()), (0, 2, 2));
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
