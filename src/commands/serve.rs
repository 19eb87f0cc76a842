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
use writerctl::claim::retention::{self, Retention};
use writerctl::claim::secret::{self, Secret};
use writerctl::claim::stores::Store;
use writerctl::claim::stores::redis_pg::{self, ConnectOptions, QueueBounds, RedisPgStore};
use writerctl::claim::stores::sqlite::SqliteStore;
use writerctl::coordinator::limits::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_CONNECTIONS_PER_SOURCE, connection_cap, raise_nofile_limit,
};
use writerctl::coordinator::memory::{self, MemoryBudget};
use writerctl::coordinator::server::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, ServeError, ServeOptions, serve,
};

use super::coord::{Target, parse_target};
use super::output::Output;

/// The coordinator server.
// Parsed once per process: the size of `serve`'s arguments beside `admin-token`'s costs
// nothing worth a Box.
#[allow(clippy::large_enum_variant)]
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
    ///
    /// Holding up under abuse: at most --max-connections connections are open at once, and
    /// at most --max-connections-per-source from one address; past either, a connection the
    /// server is not working for is evicted (of that source, or of any source; held
    /// unauthenticated requests first, then the unauthenticated connection that has waited
    /// on its client the longest, authenticated ones last: see the threat model), so a flood
    /// from the address a probe shares evicts itself; when
    /// nothing is evictable the newcomer gets an immediate 503 `coordinator_unavailable` on
    /// plain HTTP (closed under TLS), counted on /metrics. A connection must send a complete
    /// request head within --header-timeout-seconds of connecting or of its previous answer
    /// (so an idle or trickling connection gives its slot back), and its body within
    /// --body-timeout-seconds (408). --probe-listen adds a listener for /livez, /readyz and
    /// /metrics only, which no flood of the main port reaches. The open-file soft limit is raised to
    /// the hard limit at start (both logged) and the cap kept below it. `master claim`
    /// verifies passwords at once, holds back only wrong ones (the operator id's back-off,
    /// which decays by one failure a minute), and runs 2 per source address at a time (8
    /// more wait, then are refused), so strangers cannot lock an operator out from another
    /// address. Every error answer, hyper's own 400/431/414 included (plain HTTP), is
    /// the JSON envelope {"error":{"code","message","hint"}}; a source sending more than 16
    /// heads hyper refuses in 10 s has its new connections read only after 1 s.
    ///
    /// Growth is bounded: every --retention-interval-seconds the server deletes audit rows
    /// and claim history steps older than --audit-retention-days, inbox events older than --inbox-retention-days or
    /// beyond the newest --inbox-max-events per inbox, and operator-attempt rows idle for a
    /// day. Routine heartbeats write no audit row (a return from stale does); they are
    /// counted on /metrics, with the audit, inbox and queue sizes.
    Serve(ServeArgs),
    /// Make the admin token `serve --admin-token-file` accepts (64 random hex digits).
    #[command(subcommand)]
    AdminToken(super::admin_token::AdminTokenCmd),
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
    /// Redis URL (authoritative plane); needs --postgres: redis://HOST:PORT[/DB],
    /// rediss://... (TLS), or Sentinel:
    /// redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME[/DB] (rediss+sentinel:// for
    /// TLS), which follows failovers. Prefer the environment variable when the URL carries
    /// a password (argv is visible in `ps`).
    #[arg(long, value_name = "URL", requires = "postgres", env = "WRITERCTL_REDIS_URL", hide_env_values = true)]
    pub redis: Option<String>,
    /// Postgres URL (audit plane, cold restore); needs --redis. TLS with the URL's
    /// sslmode=require|verify-ca|verify-full and sslrootcert=F (never a fallback to clear
    /// text); several hosts (postgres://u@h1,h2/db?target_session_attrs=read-write) find a
    /// promoted standby without a restart.
    #[arg(long, value_name = "URL", requires = "redis", env = "WRITERCTL_POSTGRES_URL", hide_env_values = true)]
    pub postgres: Option<String>,
    /// PEM file of the CA that signs the Redis servers' (and Sentinels') certificates, for
    /// rediss:// and rediss+sentinel:// [default: the system roots].
    #[arg(long, value_name = "F", requires = "redis", env = "WRITERCTL_REDIS_CA_FILE")]
    pub redis_ca_file: Option<PathBuf>,
    /// After each verb's Redis write, wait (Redis WAIT, up to 1 s) until N replicas hold it;
    /// fewer fails the verb with coordinator_unavailable (the write may have applied). 0: do
    /// not wait, and a Sentinel failover may lose the last acknowledged writes (replication
    /// is asynchronous).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "redis",
          value_parser = clap::value_parser!(u32).range(0..=64))]
    pub redis_min_replicas: u32,
    /// Bound on the Redis queue of writes waiting for Postgres, in entries (default 100000;
    /// 0: none). When a Postgres outage fills it, failed verbs' audit rows are dropped and
    /// counted, write verbs are refused with coordinator_unavailable (nothing written), and
    /// routine heartbeats skip their Postgres write; writerctl_audit_queue_* on /metrics.
    #[arg(long, value_name = "N", default_value_t = redis_pg::DEFAULT_QUEUE_MAX_ROWS, requires = "redis")]
    pub audit_queue_max_rows: u64,
    /// Bound on the same queue in bytes of entry data (default 67108864, 64 MiB; 0: none),
    /// exceeded by at most one entry.
    #[arg(long, value_name = "N", default_value_t = redis_pg::DEFAULT_QUEUE_MAX_BYTES, requires = "redis")]
    pub audit_queue_max_bytes: u64,
    /// Redis key prefix and Postgres schema for this deployment.
    #[arg(long, value_name = "NAME", default_value = "writerctl")]
    pub namespace: String,
    /// File holding the admin token that authorizes administrative calls over HTTP
    /// (`operator add`, `identity add|list|rotate|remove`, `channel create`, `audit`;
    /// clients set WRITERCTL_ADMIN_TOKEN); without it those calls are refused. The file
    /// must be 0600 (0640 if root owns it) and hold 64 random hex digits, as `writerctl
    /// coordinator admin-token new --out F` writes them; anything else is refused (exit 2).
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
    /// A lab only: identities nobody enrolled may register without a key (the first
    /// registrant in a new project becomes master). Enrolled identities still prove
    /// themselves. Warned at start and shown on /metrics (writerctl_open_registration 1).
    #[arg(long)]
    pub open_registration: bool,
    /// Keep audit rows this many days (default 90: a quarter, enough for a quarterly access
    /// review and a late incident investigation); older rows, claim history steps (each
    /// task's newest is kept) and queue entries Postgres refused are deleted every
    /// --retention-interval-seconds. 0 keeps the audit log forever.
    /// Days follow the server's clock (--time-scale shrinks them too).
    #[arg(long, value_name = "N", default_value_t = retention::DEFAULT_AUDIT_RETENTION_DAYS,
          value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub audit_retention_days: u32,
    /// Keep inbox events this many days (default 7: a controller off over a long weekend
    /// still finds its events); 0: no age limit. A reader whose cursor falls behind what
    /// was removed gets inbox_cursor_trimmed, never a silent skip.
    #[arg(long, value_name = "N", default_value_t = retention::DEFAULT_INBOX_RETENTION_DAYS,
          value_parser = clap::value_parser!(u32).range(0..=36_500))]
    pub inbox_retention_days: u32,
    /// Keep at most the newest N events per inbox (default 1000), enforced on every append
    /// (and by the periodic prune); 0: no count limit.
    #[arg(long, value_name = "N", default_value_t = retention::DEFAULT_INBOX_MAX_EVENTS)]
    pub inbox_max_events: u64,
    /// How often retention prunes audit rows, inbox events and idle operator-attempt rows,
    /// in real seconds (default 300); 0 never prunes. Each prune is logged and counted on
    /// /metrics (writerctl_retention_runs_total, writerctl_retention_pruned_total).
    #[arg(long, value_name = "N", default_value_t = 300, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub retention_interval_seconds: u64,
    /// Log format on stderr: text, or json (one object per line, for log shippers). The
    /// level comes from WRITERCTL_LOG (default info).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Open connections served at once, from 1 to 1000000; one more is refused at once (503
    /// on plain HTTP, closed under TLS) and counted (writerctl_connections_refused_total).
    /// Lowered below the open-file limit when that is smaller (64 descriptors are kept for
    /// the store and the listener), and to what 40% of --memory-budget holds at 48 KiB a
    /// connection (1747 under a 256 MiB cgroup limit); both logged. 1024 is far above what
    /// the CLI's short connections need.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS as u64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections: u64,
    /// Seconds a connection has to send a complete request head, from 1 to 300, counted from
    /// when it connects and again after each answer: also the idle keep-alive timeout. 10 s
    /// is plenty for any real client and frees a silent or trickling connection's slot.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_HEADER_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=300))]
    pub header_timeout_seconds: u64,
    /// Open connections one source address (an IPv4 address, or an IPv6 /64) may hold, from
    /// 1 to 1000000. A new connection from a source at its cap evicts that source's
    /// connection that has waited on its client the longest (no complete request head yet, a
    /// body still arriving, or idle keep-alive; never one being served), so a flood of idle
    /// or trickling connections evicts itself while a probe or a real client from the same
    /// address is served; only when none is evictable is it refused. At --max-connections
    /// the same order applies to every source's connections, whatever their number. 128 is far above what one host's
    /// CLI calls need and keeps one source to 1/8 of the default cap.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_SOURCE as u64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_connections_per_source: u64,
    /// Seconds a request body has to arrive in full after its head, from 1 to 300; a body
    /// averaging under 64 bytes/s after its first 2 s is cut off sooner. Either way it is
    /// answered 408 `coordinator_unavailable` and its connection closed (counted in
    /// writerctl_body_timeouts_total). A Content-Length over 64 KiB is refused 413 at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BODY_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=300))]
    pub body_timeout_seconds: u64,
    /// Also listen on ADDR (plain HTTP) for GET /livez, /readyz and /metrics only, with its
    /// own cap of 16 connections: point orchestrator probes and scrapers here, so that no
    /// flood of the main port can delay them. Other paths answer 404.
    #[arg(long, value_name = "ADDR")]
    pub probe_listen: Option<SocketAddr>,
    /// Memory the server keeps under: bytes, or with Ki, Mi, Gi or Ti (e.g. 200Mi); at
    /// least 64Mi. Without it: 80% of the memory limit of the server's cgroup (a Kubernetes
    /// memory limit, a systemd MemoryMax=), else 512Mi. Half of it sizes the password
    /// hashing memory (19 MiB per argon2 permit, allocated at start, at most one permit per
    /// core); while the resident set is above 90% of it, requests are refused at once with
    /// 503 `coordinator_unavailable` (/livez and /readyz still answer). The budget and how it
    /// was decided are logged at start and shown on /metrics.
    #[arg(long, value_name = "BYTES", value_parser = memory::parse_size)]
    pub memory_budget: Option<u64>,
}

/// Runs a `coordinator` subcommand.
pub fn run(cmd: CoordinatorCmd, out: Output) -> Result<()> {
    let a = match cmd {
        CoordinatorCmd::Serve(a) => a,
        CoordinatorCmd::AdminToken(c) => return super::admin_token::run(c, out),
    };
    // The Postgres driver logs statement parameters (token and password hashes) at debug:
    // keep it at info whatever level the operator asks for.
    let level = std::env::var("WRITERCTL_LOG").unwrap_or_else(|_| "info".into());
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{level},tokio_postgres=info,postgres=info"))
        .map_err(|e| ClaimError::invalid("WRITERCTL_LOG", format!("WRITERCTL_LOG={level:?}: {e}")))?;
    let logs = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter);
    let _ = if a.log_format == "json" {
        logs.json().try_init()
    } else {
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).try_init()
    };
    let admin_token_hash = match &a.admin_token_file {
        Some(f) => Some(secret::token_hash(&read_admin_token(f)?)),
        None => None,
    };
    let store: Arc<dyn Store> = match (&a.redis, &a.postgres) {
        (Some(r), Some(p)) => {
            let opts =
                ConnectOptions { redis_ca_file: a.redis_ca_file.clone(), redis_min_replicas: a.redis_min_replicas };
            let store = RedisPgStore::connect_with(r, p, &a.namespace, &opts)?;
            store
                .set_queue_bounds(QueueBounds { max_rows: a.audit_queue_max_rows, max_bytes: a.audit_queue_max_bytes });
            store.set_inbox_max_events(a.inbox_max_events);
            Arc::new(store)
        }
        _ => match parse_target(a.store.as_deref())? {
            Target::Sqlite(path) => {
                let store = SqliteStore::open(&path)?;
                store.set_inbox_max_events(a.inbox_max_events);
                Arc::new(store)
            }
            Target::Http(_) => {
                return Err(ClaimError::invalid(
                    "--store",
                    "--store takes sqlite:PATH (a server cannot store in a server)",
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
    if a.open_registration {
        tracing::warn!(
            "--open-registration: anyone who reaches this server can register as any identity nobody enrolled \
             (and become master of a project with none); a lab only"
        );
    }
    let coordinator = Coordinator::new(store, clock, Duration::from_secs(a.freshness_seconds))
        .with_open_registration(a.open_registration);
    let nofile = raise_nofile_limit();
    let requested = usize::try_from(a.max_connections).unwrap_or(usize::MAX);
    let max_connections = connection_cap(requested, nofile.soft);
    let shown = |l: Option<u64>| l.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    tracing::info!(
        soft_before = %shown(nofile.soft_before),
        soft = %shown(nofile.soft),
        hard = %shown(nofile.hard),
        "open-file limit (soft raised to hard)"
    );
    if max_connections < requested {
        tracing::warn!(
            requested = a.max_connections,
            max_connections,
            soft = %shown(nofile.soft),
            "--max-connections lowered below the open-file limit; raise the hard limit (LimitNOFILE=, ulimit -Hn) to serve more"
        );
    }
    let tls = a.tls_cert.clone().zip(a.tls_key.clone());
    let sweep_every = (a.sweep_interval_seconds > 0).then(|| Duration::from_secs(a.sweep_interval_seconds));
    let policy = Retention::from_flags(a.audit_retention_days, a.inbox_retention_days, a.inbox_max_events);
    let retention = Some((policy, Duration::from_secs(a.retention_interval_seconds)));
    let opts = ServeOptions {
        listen: a.listen,
        coordinator,
        admin_token_hash,
        tls,
        sweep_every,
        max_connections,
        header_timeout: Duration::from_secs(a.header_timeout_seconds),
        retention,
        max_connections_per_source: usize::try_from(a.max_connections_per_source).unwrap_or(usize::MAX),
        body_timeout: Duration::from_secs(a.body_timeout_seconds),
        probe_listen: a.probe_listen,
        memory_budget: MemoryBudget::detect(a.memory_budget),
    };
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
        ServeError::Tls(m) => ClaimError::invalid("--tls-cert", format!("TLS: {m}")).into(),
        ServeError::Io(io) if io.kind() == std::io::ErrorKind::AddrInUse => {
            ClaimError::invalid("--listen", format!("--listen {}: address already in use", a.listen)).into()
        }
        other => anyhow::Error::from(other),
    })
}

/// Reads `--admin-token-file`, refusing a file other users can read or change and a token
/// a generator did not make (issue 28 point 6, issue 39 point 8): the admin token enrolls
/// identities and creates operators, and kept answers holding identity keys are sealed
/// under it, so a world-readable copy on a shared host, or a guessable token, hands over
/// the whole coordinator — the token even from a copy of the store alone
/// ([`secret::check_admin_token`] says which tokens pass, and why). The mode rule is
/// PostgreSQL's for its TLS key (and ssh's for private keys): a file owned by the server's
/// user must be 0600 or stricter; a file owned by root may also be group-readable (0640),
/// which is how Kubernetes (`defaultMode: 0440` with `fsGroup`) and systemd's credentials
/// hand a secret to an unprivileged user. Both refusals are `invalid_argument` (exit 2)
/// and say how to fix the file.
fn read_admin_token(f: &std::path::Path) -> Result<Secret> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(f).with_context(|| format!("cannot read admin token file {}", f.display()))?;
    let mode = meta.mode() & 0o777;
    let allowed = if meta.uid() == 0 && rustix::process::geteuid().as_raw() != 0 { 0o740 } else { 0o700 };
    if mode & !allowed != 0 {
        return Err(ClaimError::invalid(
            "--admin-token-file",
            format!(
                "admin token file {} has mode {mode:04o}: other users can read or change it; run `chmod 600 {}` \
             (a root-owned file may be 0640)",
                f.display(),
                f.display()
            ),
        )
        .into());
    }
    let text = std::fs::read_to_string(f).with_context(|| format!("cannot read admin token file {}", f.display()))?;
    let token = Secret::new(text.trim().to_string());
    if let Err(e) = secret::check_admin_token(token.expose()) {
        return Err(super::Coded {
            code: writerctl::error::ErrorCode::InvalidArgument,
            message: format!("admin token file {}: {e}", f.display()),
            hint: Some(
                "make a random one with `writerctl coordinator admin-token new --out NEW-FILE` (64 hex digits, mode \
                 0600), start the server with --admin-token-file NEW-FILE, and give clients the new token \
                 (WRITERCTL_ADMIN_TOKEN)"
                    .into(),
            ),
        }
        .into());
    }
    Ok(token)
}
