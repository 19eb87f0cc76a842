//! Listening and serving: the sockets, TLS, the probe listener, graceful shutdown, and
//! the background sweeper and pruner that run while the server listens.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::app::{PROBE_MAX_CONNECTIONS, ServeOptions, Shared, new_app};
use super::routes::{probe_routes, routes};
use crate::claim::ClaimError;
use crate::claim::retention::Retention;
use crate::coordinator::limits::{AfterHandshake, CappedAcceptor, ConnGate, TLS_HANDSHAKE_TIMEOUT};

/// One sweep of every project with a due claim, on the blocking pool.
async fn sweep_once(app: &Shared) {
    let started = Instant::now();
    let app2 = app.clone();
    let result = match tokio::task::spawn_blocking(move || app2.coord.sweep_all()).await {
        Ok(r) => r,
        Err(e) => Err(ClaimError::store_because("sweep task failed", e)),
    };
    app.record_sweep(&result, started.elapsed());
}

/// Runs `job` every `every` until `stop` turns true (or its sender is gone). A run that
/// takes longer than `every` delays the next one: runs never overlap, and a stop waits for
/// the run in flight (one store round per batch) instead of abandoning it.
async fn periodic<F, Fut>(every: Duration, mut stop: tokio::sync::watch::Receiver<bool>, mut job: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        tokio::select! {
            biased;
            changed = stop.changed() => if changed.is_err() { return },
            _ = tick.tick() => job().await,
        }
    }
}

/// One prune of both planes, on the blocking pool.
async fn prune_once(app: &Shared, policy: Retention) {
    let started = Instant::now();
    let app2 = app.clone();
    let result = match tokio::task::spawn_blocking(move || app2.coord.prune(&policy, "coordinator")).await {
        Ok(r) => r,
        Err(e) => Err(ClaimError::store_because("prune task failed", e)),
    };
    app.record_prune(&result, started.elapsed());
}

/// The listen backlog asked for (the kernel caps it at `net.core.somaxconn`, 4096 on
/// current kernels). Issue 28's abuse bench: under a reconnect flood from one address the
/// default of 128 (std's, and axum-server's `bind`) overflowed (`TcpExtListenOverflows`);
/// the kernel then drops a SYN, and the client retries it only after 1 s, so a kubelet
/// probe missed its 1 s deadline although the server would have answered it at once.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listening TCP socket on `addr` with [`LISTEN_BACKLOG`] (address reuse as std sets
/// it), handed to axum-server as a std listener. Needs a tokio runtime (tokio's socket
/// registers with it; `into_std` takes it back out).
pub(super) fn listen_socket(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)?.into_std()
}

/// hyper's per-connection read buffer cap (its `max_buf_size`; hyper's own floor is 8192),
/// which bounds a request head: a head that does not fit is answered 431 in the envelope and
/// its connection closed. Issue 39 point 4: hyper's default (~400 KB) let ~950 connections
/// from 10 addresses take the server from 58 to 533 MiB. A CLI request head is well under
/// 1 KiB (its largest field a 64-digit bearer token); 16 KiB leaves room for a proxy's
/// headers. The number of fields stays bounded by hyper's default of 100 (parsed on the
/// stack; setting `max_headers` would move that array to the heap for every request).
/// The write buffer is capped at the same size; a larger answer is written as it drains.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Logs the memory budget, how it was decided, and what it sizes (issue 39 point 1), and
/// warns when `--memory-budget` is above the cgroup limit (the kernel's limit then acts
/// first, by OOM kill).
fn log_memory_budget(app: &Shared) {
    let budget = app.memory.budget();
    tracing::info!(
        budget_bytes = budget.bytes,
        from = %budget.describe(),
        argon2_permits = app.verifications.permits(),
        argon2_memory_bytes = app.verifications.memory_bytes(),
        refuse_above_bytes = budget.high_water(),
        resident_bytes = app.memory.resident(),
        "memory budget"
    );
    if let Some(c) = budget.cgroup.as_ref().filter(|c| c.bytes < budget.bytes) {
        tracing::warn!(
            budget_bytes = budget.bytes,
            cgroup_limit_bytes = c.bytes,
            file = %c.file.display(),
            "--memory-budget is above the cgroup memory limit: the kernel will kill the process before the budget refuses work; lower it"
        );
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Bad TLS material.
    #[error("TLS: {0}")]
    Tls(String),
    /// Could not bind or serve.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Serves until `shutdown` resolves, then stops accepting and lets in-flight requests
/// finish (up to 10 s). `on_bound` receives the bound address (useful with port 0).
///
/// With `opts.sweep_every`, a background sweeper: once the server listens, every interval
/// it releases the work claims whose TTL ran out in every project
/// ([`Coordinator::sweep_all`](crate::claim::Coordinator::sweep_all) on the blocking pool), never two sweeps at once. It stops
/// when `shutdown` resolves (a sweep in flight finishes first) and is waited for before
/// this returns.
pub async fn serve(
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    on_bound: impl FnOnce(SocketAddr, bool) + Send + 'static,
) -> Result<(), ServeError> {
    // Bound before anything starts, so a taken port fails here with nothing left running.
    let main_listener = axum_server::from_tcp(listen_socket(opts.listen)?)?;
    let probe_listener = opts.probe_listen.map(|a| axum_server::from_tcp(listen_socket(a)?)).transpose()?;
    let tls = opts.tls.is_some();
    let max_connections = opts.max_connections.min(opts.memory_budget.connections());
    if max_connections < opts.max_connections {
        tracing::warn!(
            requested = opts.max_connections,
            max_connections,
            budget_bytes = opts.memory_budget.bytes,
            "--max-connections lowered to what the memory budget holds (40% of it at 48 KiB a connection); raise --memory-budget (or the cgroup limit) to serve more"
        );
    }
    let gate = Arc::new(ConnGate::with_per_source(max_connections, opts.max_connections_per_source));
    let state =
        new_app(opts.coordinator, opts.admin_token_hash, Some(gate.clone()), opts.body_timeout, opts.memory_budget);
    log_memory_budget(&state);
    let probe_gate = Arc::new(ConnGate::new(PROBE_MAX_CONNECTIONS));
    let probe_app = probe_routes(state.clone(), probe_gate.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let app = routes(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let handle = axum_server::Handle::new();
    let probe_handle = axum_server::Handle::new();
    let (h2, p2) = (handle.clone(), probe_handle.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stop_tx = Arc::new(stop_tx);
    let stop_on_signal = stop_tx.clone();
    let watchers = state.watchers.clone();
    tokio::spawn(async move {
        shutdown.await;
        stop_on_signal.send_replace(true);
        // Long polls of `master status --watch` answer now instead of holding the
        // graceful shutdown for their whole wait.
        watchers.close();
        h2.graceful_shutdown(Some(Duration::from_secs(10)));
        p2.graceful_shutdown(Some(Duration::from_secs(1)));
    });
    let sweeping = opts.sweep_every.filter(|d| !d.is_zero()).map(|every| {
        let (h, mut stop, app) = (handle.clone(), stop_rx.clone(), state.clone());
        tokio::spawn(async move {
            // Only a server that listens sweeps (a failed bind returns None).
            tokio::select! {
                bound = h.listening() => if bound.is_none() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
            tracing::info!(every_s = every.as_secs_f64(), "sweeper started");
            periodic(every, stop, || sweep_once(&app)).await;
            tracing::info!("sweeper stopped");
        })
    });
    let pruning = opts.retention.filter(|(_, d)| !d.is_zero()).map(|(policy, every)| {
        let (h, mut stop, app) = (handle.clone(), stop_rx.clone(), state.clone());
        tokio::spawn(async move {
            tokio::select! {
                bound = h.listening() => if bound.is_none() { return },
                _ = stop.wait_for(|s| *s) => return,
            }
            tracing::info!(every_s = every.as_secs_f64(), ?policy, "retention started");
            periodic(every, stop, || prune_once(&app, policy)).await;
            tracing::info!("retention stopped");
        })
    });
    let h3 = handle.clone();
    tokio::spawn(async move {
        if let Some(addr) = h3.listening().await {
            on_bound(addr, tls);
        }
    });
    let header_timeout = opts.header_timeout;
    // HTTP/1.1 only: hyper's header timer (which also bounds idle keep-alive) exists for
    // HTTP/1 alone, and an HTTP/2 connection could idle forever; the CLI speaks HTTP/1.1.
    // `first_request_timeout` bounds a connection that never completes a first request
    // (including the protocol sniffing hyper does before its own timer starts).
    let configure = |server: axum_server::Server<SocketAddr>, handle: axum_server::Handle<SocketAddr>| {
        let mut server = server.http1_only().first_request_timeout(header_timeout).accept_error_handler(
            |peer: Option<&SocketAddr>, e: &std::io::Error| {
                // Refusals past the cap are logged by the gate; log what else fails here
                // (EMFILE, a TLS handshake that failed or timed out) at debug.
                if peer.is_none() {
                    tracing::warn!(error = %e, "accept failed (the open-file limit?)");
                } else {
                    tracing::debug!(error = %e, "connection dropped before its first request");
                }
            },
        );
        server.http_builder().http1().header_read_timeout(header_timeout).max_buf_size(MAX_HEAD_BYTES);
        server.handle(handle)
    };
    // The probe listener (plain HTTP, its own small cap): a flood of the main port cannot
    // reach its slots. It stops with the main server; either failing to bind stops both.
    let probing = probe_listener.map(|listener| {
        let server =
            configure(listener, probe_handle.clone()).acceptor(CappedAcceptor::new(probe_gate, true)).serve(probe_app);
        let ph = probe_handle.clone();
        tokio::spawn(async move {
            if let Some(addr) = ph.listening().await {
                tracing::info!(url = %format!("http://{addr}"), "probe listener (/livez, /readyz, /metrics)");
            }
        });
        tokio::spawn(server)
    });
    let main_handle = handle.clone();
    let main = async move {
        match opts.tls {
            Some((cert, key)) => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                match axum_server::tls_rustls::RustlsConfig::from_pem_file(&cert, &key).await {
                    Ok(config) => {
                        let mut inner = (*config.get_inner()).clone();
                        inner.alpn_protocols = vec![b"http/1.1".to_vec()];
                        config.reload_from_config(Arc::new(inner));
                        // Issue 39 point 3: a handshake has its own, shorter deadline, takes
                        // its slot (and its source's) before it starts, and is told apart
                        // from idle connections in the eviction order once the client's
                        // hello arrived, until `AfterHandshake` sees it finished.
                        let tls = axum_server::tls_rustls::RustlsAcceptor::new(config)
                            .handshake_timeout(header_timeout.min(TLS_HANDSHAKE_TIMEOUT))
                            .acceptor(CappedAcceptor::new(gate.clone(), false));
                        let acceptor = AfterHandshake::new(tls, gate);
                        configure(main_listener, main_handle)
                            .acceptor(acceptor)
                            .serve(app)
                            .await
                            .map_err(ServeError::from)
                    }
                    Err(e) => Err(ServeError::Tls(format!("{} / {}: {e}", cert.display(), key.display()))),
                }
            }
            None => configure(main_listener, main_handle)
                .acceptor(CappedAcceptor::new(gate, true))
                .serve(app)
                .await
                .map_err(ServeError::from),
        }
    };
    let served: Result<(), ServeError> = match probing {
        None => main.await,
        Some(mut probe) => {
            tokio::pin!(main);
            tokio::select! {
                r = &mut main => {
                    probe_handle.graceful_shutdown(Some(Duration::from_secs(1)));
                    let _ = probe.await;
                    r
                }
                p = &mut probe => {
                    // The probe listener ended first: it could not bind (or failed).
                    handle.graceful_shutdown(Some(Duration::from_secs(10)));
                    let _ = main.await;
                    match p {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(ServeError::Io(e)),
                        Err(e) => Err(ServeError::Io(std::io::Error::other(e))),
                    }
                }
            }
        }
    };
    stop_tx.send_replace(true);
    for task in [sweeping, pruning].into_iter().flatten() {
        let _ = task.await;
    }
    // Refusals counted and not yet summarized are written before the process goes.
    let app = state.clone();
    let _ = tokio::task::spawn_blocking(move || app.coord.flush_refusals(true)).await;
    served
}
