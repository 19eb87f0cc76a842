//! `writerctl coordinator serve`: the HTTP coordinator over the embedded store or over
//! Redis (authoritative) + Postgres (audit, cold restore).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use writerctl::claim::ClaimError;
use writerctl::claim::Coordinator;
use writerctl::claim::clock::{Clock, ScaledClock, SystemClock};
use writerctl::claim::secret::{self, Secret};
use writerctl::claim::store::Store;
use writerctl::claim::store::redis_pg::RedisPgStore;
use writerctl::claim::store::sqlite::SqliteStore;
use writerctl::coordinator::server::{ServeError, ServeOptions, serve};

use super::coord::{Target, parse_target};
use super::output::Output;

/// The coordinator server.
#[derive(Debug, Subcommand)]
pub enum CoordinatorCmd {
    /// Serve the coordinator verbs over HTTP (JSON API /v1, /livez, /readyz, /healthz,
    /// /metrics, /openapi.json) until SIGTERM or SIGINT, then finish in-flight requests.
    ///
    /// The store is the embedded SQLite file (one server) or Redis + Postgres (any number
    /// of replicas: Redis is authoritative and written first, Postgres keeps controller rows,
    /// operators and the audit log, and rebuilds Redis on start if Redis lost its state).
    ///
    /// Probes: /livez answers 200 while the process serves (no store is asked: for
    /// liveness); /readyz answers within 1 s, 200 when verbs can be served (Redis, or the
    /// SQLite file, answers), with "degraded", the Postgres queue depth and its oldest
    /// entry's age, 503 otherwise (for readiness: a Postgres outage only degrades it);
    /// /healthz answers 200 only when every plane answers, Postgres included.
    ///
    /// Every write verb's answer is kept 10 minutes under its request id (the
    /// Idempotency-Key header; the CLI's --request-id), so a retry acts once.
    ///
    /// A background sweeper releases work claims whose TTL ran out, in every project, every
    /// --sweep-interval-seconds (default 30; 0 turns it off, e.g. when a cron job runs
    /// `writerctl claim sweep`). Replicas may all sweep: each release is a compare-and-set on
    /// the claim, so it happens once.
    #[command(
        after_help = "Examples:\n  writerctl coordinator serve --listen 127.0.0.1:7700 --store sqlite:/var/lib/writerctl/c.sqlite\n  writerctl coordinator serve --listen 0.0.0.0:7700 --redis redis://127.0.0.1:6379 --postgres postgres://writerctl@db/writerctl --admin-token-file /run/secrets/admin --tls-cert cert.pem --tls-key key.pem\n  writerctl coordinator serve --listen 127.0.0.1:7700 --store sqlite:/var/lib/writerctl/c.sqlite --sweep-interval-seconds 10"
    )]
    Serve(ServeArgs),
}

/// `coordinator serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Embedded store, sqlite:PATH [default: the user's state directory].
    #[arg(long, value_name = "sqlite:PATH", conflicts_with_all = ["redis", "postgres"])]
    pub store: Option<String>,
    /// Redis URL (authoritative plane); needs --postgres. Prefer the environment variable
    /// when the URL carries a password (argv is visible in `ps`).
    #[arg(long, value_name = "URL", requires = "postgres", env = "WRITERCTL_REDIS_URL", hide_env_values = true)]
    pub redis: Option<String>,
    /// Postgres URL (audit plane, cold restore); needs --redis.
    #[arg(long, value_name = "URL", requires = "redis", env = "WRITERCTL_POSTGRES_URL", hide_env_values = true)]
    pub postgres: Option<String>,
    /// Redis key prefix and Postgres schema for this deployment.
    #[arg(long, value_name = "NAME", default_value = "writerctl")]
    pub namespace: String,
    /// File holding the admin token that authorizes `operator add` and `audit` over HTTP
    /// (clients set WRITERCTL_ADMIN_TOKEN); without it those calls are refused.
    #[arg(long, value_name = "F")]
    pub admin_token_file: Option<PathBuf>,
    /// PEM certificate chain for TLS (with --tls-key).
    #[arg(long, value_name = "F", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, value_name = "F", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Heartbeat freshness for target resolution, in seconds.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub freshness_seconds: u64,
    /// How often the background sweeper releases work claims whose TTL ran out (to their
    /// deputy, or open), in seconds, from 1 to 86400; 0 turns the sweeper off. Sweeps never
    /// overlap; each is logged per project and counted on /metrics
    /// (writerctl_sweep_runs_total, writerctl_sweep_released_total).
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub sweep_interval_seconds: u64,
    /// Drills only: the server's clock runs N times faster (60: one real second reads as one
    /// minute), so a TTL exercise of half an hour takes 30 s. Every TTL, freshness threshold
    /// and throttle delay shrinks by the same factor; never use it in production. The sweep
    /// interval stays in real seconds.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub time_scale: u32,
    /// Log format on stderr: text, or json (one object per line, for log shippers). The
    /// level comes from WRITERCTL_LOG (default info).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

/// Runs a `coordinator` subcommand.
pub fn run(cmd: CoordinatorCmd, out: Output) -> Result<()> {
    let CoordinatorCmd::Serve(a) = cmd;
    // The Postgres driver logs statement parameters (token and password hashes) at debug:
    // keep it at info whatever level the operator asks for.
    let level = std::env::var("WRITERCTL_LOG").unwrap_or_else(|_| "info".into());
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{level},tokio_postgres=info,postgres=info"))
        .map_err(|e| ClaimError::InvalidArgument(format!("WRITERCTL_LOG={level:?}: {e}")))?;
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    let _ = if a.log_format == "json" {
        logs.json().try_init()
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init()
    };
    let admin_token_hash = match &a.admin_token_file {
        Some(f) => {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("cannot read admin token file {}", f.display()))?;
            let token = Secret::new(text.trim().to_string());
            if token.expose().len() < 16 {
                return Err(ClaimError::InvalidArgument("the admin token must be at least 16 characters".into()).into());
            }
            Some(secret::token_hash(&token))
        }
        None => None,
    };
    let store: Arc<dyn Store> = match (&a.redis, &a.postgres) {
        (Some(r), Some(p)) => Arc::new(RedisPgStore::connect(r, p, &a.namespace)?),
        _ => match parse_target(a.store.as_deref())? {
            Target::Sqlite(path) => Arc::new(SqliteStore::open(&path)?),
            Target::Http(_) => {
                return Err(ClaimError::InvalidArgument(
                    "--store takes sqlite:PATH (a server cannot store in a server)".into(),
                )
                .into());
            }
        },
    };
    // The store is dropped after the runtime has stopped: the sync Postgres client inside a
    // redis_pg store runs its own runtime and panics if dropped inside another one.
    let keep_store = store.clone();
    let clock: Arc<dyn Clock> =
        if a.time_scale > 1 { Arc::new(ScaledClock::new(a.time_scale)) } else { Arc::new(SystemClock) };
    if a.time_scale > 1 {
        tracing::warn!(
            time_scale = a.time_scale,
            "the clock runs {}x faster (--time-scale): drills only",
            a.time_scale
        );
    }
    let coordinator = Coordinator::new(store, clock, Duration::from_secs(a.freshness_seconds));
    let tls = a.tls_cert.clone().zip(a.tls_key.clone());
    let sweep_every = (a.sweep_interval_seconds > 0).then(|| Duration::from_secs(a.sweep_interval_seconds));
    let opts = ServeOptions { listen: a.listen, coordinator, admin_token_hash, tls, sweep_every };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime")?;
    let json = out.json;
    let result = runtime.block_on(async move {
        let shutdown = async {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
            let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
            tracing::info!("stop signal: finishing in-flight requests");
        };
        serve(opts, shutdown, move |addr: SocketAddr, tls: bool| {
            let url = format!("{}://{addr}", if tls { "https" } else { "http" });
            // One line on stdout for scripts and tests that started us on port 0.
            let line =
                if json { serde_json::json!({ "listening": url }).to_string() } else { format!("listening on {url}") };
            let _ = Output { json: false }.line(&line);
            tracing::info!(%url, "listening");
        })
        .await
    });
    drop(runtime);
    drop(keep_store);
    result.map_err(|e| match e {
        ServeError::Tls(m) => ClaimError::InvalidArgument(format!("TLS: {m}")).into(),
        ServeError::Io(io) if io.kind() == std::io::ErrorKind::AddrInUse => {
            ClaimError::InvalidArgument(format!("--listen {}: address already in use", a.listen)).into()
        }
        other => anyhow::Error::from(other),
    })
}
