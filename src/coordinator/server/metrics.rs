//! `/metrics` (Prometheus text): verbs by result and latency, the queue before a verb, the
//! argon2 budget, the memory budget, connections, the background sweeper and pruner, and the store's sizes.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use std::sync::atomic::Ordering;

use super::app::{App, Shared};
use super::counters::{BUCKETS, Histogram, Metrics, SweepAll};
use super::probes::probe_readiness;
use crate::claim::ClaimError;
use crate::claim::retention::Pruned;
use crate::error::ErrorCode;

impl App {
    /// Logs one background sweep (info per project that released something, warn per
    /// failure) and counts it for `/metrics`.
    pub(super) fn record_sweep(&self, result: &SweepAll, elapsed: Duration) {
        let elapsed_ms = elapsed.as_secs_f64() * 1e3;
        let (mut released, mut conflicts, mut failure) = (0u64, 0u64, None);
        match result {
            Err(e) => {
                tracing::warn!(sweeper = true, result = e.code().as_str(), error = %e, elapsed_ms, "sweep failed");
                failure = Some(e.code());
            }
            Ok(projects) => {
                for (project, r) in projects {
                    match r {
                        Ok(rep) => {
                            if !rep.held_back.is_empty() {
                                tracing::debug!(
                                    sweeper = true,
                                    project,
                                    held_back = rep.held_back.len(),
                                    "sweep held back due claims: the project is paused"
                                );
                            }
                            released += rep.released.len() as u64;
                            conflicts += rep.conflicts;
                            if rep.released.is_empty() {
                                tracing::debug!(
                                    sweeper = true,
                                    project,
                                    deferred_by_focus = rep.deferred_by_focus,
                                    conflicts = rep.conflicts,
                                    "sweep released nothing"
                                );
                                continue;
                            }
                            tracing::info!(
                                sweeper = true,
                                project,
                                released = rep.released.len(),
                                deferred_by_focus = rep.deferred_by_focus,
                                conflicts = rep.conflicts,
                                as_of = rep.as_of,
                                "sweep released claims whose TTL ran out"
                            );
                            for act in &rep.released {
                                tracing::debug!(
                                    sweeper = true,
                                    project,
                                    channel = %act.address.channel,
                                    task = %act.address.task,
                                    from = %act.from,
                                    to = act.to.as_deref().unwrap_or(""),
                                    version = act.version,
                                    due_at = act.due_at,
                                    "claim released"
                                );
                            }
                        }
                        Err(e) => {
                            tracing::warn!(sweeper = true, project, result = e.code().as_str(), error = %e, "sweep failed");
                            failure.get_or_insert(e.code());
                        }
                    }
                }
            }
        }
        if released > 0 {
            self.store_series.touched();
        }
        let mut m = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        *m.sweep_runs.entry(failure.map_or("ok", ErrorCode::as_str).to_string()).or_default() += 1;
        m.sweep_released += released;
        m.sweep_conflicts += conflicts;
    }
}

impl App {
    /// Logs one background prune and counts it for `/metrics`.
    pub(super) fn record_prune(&self, result: &Result<Pruned, ClaimError>, elapsed: Duration) {
        let elapsed_ms = elapsed.as_secs_f64() * 1e3;
        let mut m = self.metrics.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(p) => {
                if !p.is_empty() {
                    self.store_series.touched();
                }
                if p.is_empty() {
                    tracing::debug!(retention = true, elapsed_ms, "prune removed nothing");
                } else {
                    tracing::info!(
                        retention = true,
                        audit_rows = p.audit_rows,
                        history_steps = p.history_steps,
                        inbox_entries = p.inbox_entries,
                        attempt_rows = p.attempt_rows,
                        elapsed_ms,
                        "pruned what retention no longer keeps"
                    );
                }
                m.retention_pruned.audit_rows += p.audit_rows;
                m.retention_pruned.history_steps += p.history_steps;
                m.retention_pruned.inbox_entries += p.inbox_entries;
                m.retention_pruned.attempt_rows += p.attempt_rows;
                *m.retention_runs.entry("ok".into()).or_default() += 1;
            }
            Err(e) => {
                tracing::warn!(retention = true, result = e.code().as_str(), error = %e, elapsed_ms, "prune failed");
                *m.retention_runs.entry(e.code().as_str().into()).or_default() += 1;
            }
        }
    }
}

/// One histogram family by verb, in the Prometheus text format: the cumulative buckets of
/// [`BUCKETS`], `+Inf`, `_sum` and `_count` for each verb (both verb histograms, the time a
/// verb ran and the time it waited, are written by this one function).
fn push_histograms(out: &mut String, name: &str, help: &str, by_verb: &BTreeMap<String, Histogram>) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} histogram\n"));
    for (verb, h) in by_verb {
        for (le, n) in BUCKETS.iter().zip(&h.counts) {
            out.push_str(&format!("{name}_bucket{{verb=\"{verb}\",le=\"{le}\"}} {n}\n"));
        }
        out.push_str(&format!("{name}_bucket{{verb=\"{verb}\",le=\"+Inf\"}} {}\n", h.count));
        out.push_str(&format!("{name}_sum{{verb=\"{verb}\"}} {}\n", h.sum));
        out.push_str(&format!("{name}_count{{verb=\"{verb}\"}} {}\n", h.count));
    }
}

/// The budget's part of `/metrics` (issue 28 points 4 and 5): queue wait, argon2 permits,
/// per-seat rate refusals and refusal audit rows summarized. The queue wait is its own
/// histogram, not part of `writerctl_verb_duration_seconds` (which stays the time the verb
/// ran, as before): a verb's latency as the client sees it is the sum of the two.
fn push_budget_metrics(out: &mut String, app: &App, m: &Metrics) {
    push_histograms(
        out,
        "writerctl_verb_queue_seconds",
        "Time a verb waited before it ran (master.claim: its source slot and its argon2 permit); not included in writerctl_verb_duration_seconds.",
        &m.queue,
    );
    let b = &app.verifications;
    for (name, kind, help, n) in [
        (
            "writerctl_argon2_permits",
            "gauge",
            "Operator password verifications that may run at once (one per core, as many as half the memory budget holds).",
            b.permits() as u64,
        ),
        (
            "writerctl_argon2_memory_bytes",
            "gauge",
            "argon2 memory the permits own, allocated at start (19 MiB per permit).",
            b.memory_bytes(),
        ),
        (
            "writerctl_memory_budget_bytes",
            "gauge",
            "The memory budget (--memory-budget, or 80% of the cgroup memory limit, or 512 MiB).",
            app.memory.budget().bytes,
        ),
        (
            "writerctl_memory_refuse_above_bytes",
            "gauge",
            "Resident size above which requests are refused (90% of the budget).",
            app.memory.budget().high_water(),
        ),
        ("writerctl_resident_memory_bytes", "gauge", "Resident set size of the server process.", app.memory.resident()),
        (
            "writerctl_memory_refused_total",
            "counter",
            "Requests refused with coordinator_unavailable because the resident set was above the high-water mark.",
            app.memory.refused(),
        ),
        ("writerctl_argon2_permits_in_use", "gauge", "Operator password verifications running now.", b.in_use() as u64),
        (
            "writerctl_argon2_waiting",
            "gauge",
            "Operator password verifications waiting for a permit now.",
            b.waiting() as u64,
        ),
        (
            "writerctl_argon2_refused_total",
            "counter",
            "master claim requests refused because too many verifications were waiting.",
            b.refused_full(),
        ),
        (
            "writerctl_argon2_suspects",
            "gauge",
            "Source addresses remembered as recently refused (bounded).",
            b.remembered() as u64,
        ),
        (
            "writerctl_argon2_proven",
            "gauge",
            "(source address, operator id) pairs whose last master claim succeeded: their next claim is in tier 0 (bounded).",
            b.proven() as u64,
        ),
        (
            "writerctl_rate_limited_total",
            "counter",
            "Seat writes refused with rate_limited (per-seat rate, this replica).",
            app.seat_rates.limited(),
        ),
        (
            "writerctl_refusals_summarized_total",
            "counter",
            "Refusals counted into a summary audit row instead of a row each.",
            app.coord.refusals().counted_total(),
        ),
        (
            "writerctl_refusal_summary_rows_total",
            "counter",
            "Summary audit rows written for counted refusals.",
            app.coord.refusals().summaries_total(),
        ),
        (
            "writerctl_refusal_windows",
            "gauge",
            "Open refusal-audit windows (per source, project, verb and code; bounded).",
            app.coord.refusals().windows() as u64,
        ),
        (
            "writerctl_master_watchers",
            "gauge",
            "master status --watch requests held open now (each an idle connection).",
            app.watchers.watching(),
        ),
        (
            "writerctl_master_watched_projects",
            "gauge",
            "Projects with a master status --watch checker now (one shared store read per change or recheck each).",
            app.watchers.projects() as u64,
        ),
        (
            "writerctl_master_watch_reads_total",
            "counter",
            "Store reads made for master status --watch: one per watched project and change or recheck, whatever the number of watchers.",
            app.watchers.reads(),
        ),
    ] {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {n}\n"));
    }
    out.push_str("# HELP writerctl_argon2_admitted_total Verifications admitted, by tier (0: an operator id whose last claim from this source succeeded, 1: a source not refused recently, 2: a source refused recently).\n");
    out.push_str("# TYPE writerctl_argon2_admitted_total counter\n");
    for tier in 0..3 {
        out.push_str(&format!("writerctl_argon2_admitted_total{{tier=\"{tier}\"}} {}\n", b.admitted(tier)));
    }
}

pub(super) async fn metrics(State(app): State<Shared>) -> Response {
    // A scrape is also the periodic flush of refusal windows that closed (their counts).
    let app2 = app.clone();
    let _ = tokio::task::spawn_blocking(move || app2.coord.flush_refusals(false)).await;
    // A store that is down fails every scrape (every 15 s or so per Prometheus): one WARN
    // when the first scrape fails, a reminder at most once a minute, an INFO when a scrape
    // succeeds again (issue 28's drill found a WARN per scrape). Process-wide: one server
    // per process; a second router in one process (tests) shares the episode.
    static STORE_DOWN: crate::claim::stores::Episode =
        crate::claim::stores::Episode::new("metrics: the store does not answer; store series are left out of /metrics");
    let mut failure: Option<String> = None;
    let mut out = String::new();
    let m = app.metrics.lock().unwrap_or_else(|p| p.into_inner()).clone();
    out.push_str("# HELP writerctl_verbs_total Coordinator verbs by result (ok or error code).\n");
    out.push_str("# TYPE writerctl_verbs_total counter\n");
    for ((verb, result), n) in &m.verbs {
        out.push_str(&format!("writerctl_verbs_total{{verb=\"{verb}\",result=\"{result}\"}} {n}\n"));
    }
    push_histograms(&mut out, "writerctl_verb_duration_seconds", "Time to answer a verb.", &m.latency);
    push_budget_metrics(&mut out, &app, &m);
    out.push_str("# HELP writerctl_sweep_runs_total Background TTL sweeps by result (ok or the first error code).\n");
    out.push_str("# TYPE writerctl_sweep_runs_total counter\n");
    for (result, n) in &m.sweep_runs {
        out.push_str(&format!("writerctl_sweep_runs_total{{result=\"{result}\"}} {n}\n"));
    }
    out.push_str(
        "# HELP writerctl_sweep_released_total Claims the background sweeper released (to a deputy or open).\n",
    );
    out.push_str("# TYPE writerctl_sweep_released_total counter\n");
    out.push_str(&format!("writerctl_sweep_released_total {}\n", m.sweep_released));
    out.push_str(
        "# HELP writerctl_sweep_conflicts_total Due claims the background sweeper did not write: they changed first (an owner write, or another replica's sweep).\n",
    );
    out.push_str("# TYPE writerctl_sweep_conflicts_total counter\n");
    out.push_str(&format!("writerctl_sweep_conflicts_total {}\n", m.sweep_conflicts));
    out.push_str(
        "# HELP writerctl_open_registration 1 when the server runs --open-registration (identities nobody enrolled register without a key): a lab, never production.\n",
    );
    out.push_str("# TYPE writerctl_open_registration gauge\n");
    out.push_str(&format!("writerctl_open_registration {}\n", u8::from(app.coord.open_registration())));
    if let Some(gate) = &app.connections {
        out.push_str("# HELP writerctl_connections_open Client connections open now.\n");
        out.push_str("# TYPE writerctl_connections_open gauge\n");
        out.push_str(&format!("writerctl_connections_open {}\n", gate.open()));
        out.push_str("# HELP writerctl_connections_max Open connections served at once (--max-connections).\n");
        out.push_str("# TYPE writerctl_connections_max gauge\n");
        out.push_str(&format!("writerctl_connections_max {}\n", gate.max()));
        out.push_str("# HELP writerctl_connections_refused_total Connections refused at the cap.\n");
        out.push_str("# TYPE writerctl_connections_refused_total counter\n");
        out.push_str(&format!("writerctl_connections_refused_total {}\n", gate.refused()));
        for (name, kind, help, n) in [
            (
                "writerctl_connections_max_per_source",
                "gauge",
                "Open connections one source address (IPv4, IPv6 /64) may hold (--max-connections-per-source).",
                gate.max_per_source() as u64,
            ),
            (
                "writerctl_connections_evicted_total",
                "counter",
                "Connections closed for a newer one: unauthenticated requests held without work first, then unauthenticated connections waiting on their client, oldest first (see the threat model).",
                gate.evicted(),
            ),
            (
                "writerctl_long_polls_held",
                "gauge",
                "Long-polls (master status --watch, inbox) held open now.",
                gate.long_polls() as u64,
            ),
            (
                "writerctl_long_polls_max",
                "gauge",
                "Long-polls that may be held open at once: a quarter of --max-connections (at most 8 per source).",
                gate.max_long_polls() as u64,
            ),
            (
                "writerctl_long_polls_not_held_total",
                "counter",
                "Long-polls not held: the long-poll pool (or their source's share) was full; answered with the state as it is after at most 1 s.",
                gate.long_polls_not_held(),
            ),
            (
                "writerctl_bad_heads_total",
                "counter",
                "Request heads hyper refused before routing (400, 414, 431), plain HTTP.",
                gate.bad_heads(),
            ),
            (
                "writerctl_connections_deferred_total",
                "counter",
                "Connections read only after a wait: their source sent more heads hyper refused than its allowance (see the threat model).",
                gate.deferred(),
            ),
            (
                "writerctl_body_timeouts_total",
                "counter",
                "Request bodies answered 408: not complete within --body-timeout-seconds, or too slow.",
                gate.body_timeouts(),
            ),
        ] {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {n}\n"));
        }
    }
    out.push_str(
        "# HELP writerctl_claims_refused_per_source_total master claim requests refused: their source address had too many running and waiting.\n",
    );
    out.push_str("# TYPE writerctl_claims_refused_per_source_total counter\n");
    out.push_str(&format!(
        "writerctl_claims_refused_per_source_total {}\n",
        app.claims_refused_per_source.load(std::sync::atomic::Ordering::Relaxed)
    ));
    // Heartbeats are counted, not audited one row each (the audit log records a controller
    // coming back from stale); this is the same count as the verb series, under its own name.
    let beats: u64 = m.verbs.iter().filter(|((v, r), _)| v == "session.heartbeat" && r == "ok").map(|(_, n)| n).sum();
    out.push_str("# HELP writerctl_heartbeats_total Heartbeats this replica accepted.\n");
    out.push_str("# TYPE writerctl_heartbeats_total counter\n");
    out.push_str(&format!("writerctl_heartbeats_total {beats}\n"));
    out.push_str(
        "# HELP writerctl_retention_runs_total Background retention prunes by result (ok or the error code).\n",
    );
    out.push_str("# TYPE writerctl_retention_runs_total counter\n");
    for (result, n) in &m.retention_runs {
        out.push_str(&format!("writerctl_retention_runs_total{{result=\"{result}\"}} {n}\n"));
    }
    out.push_str("# HELP writerctl_retention_pruned_total What background prunes removed, by kind.\n");
    out.push_str("# TYPE writerctl_retention_pruned_total counter\n");
    let p = m.retention_pruned;
    for (kind, n) in [
        ("audit_rows", p.audit_rows),
        ("history_steps", p.history_steps),
        ("inbox_entries", p.inbox_entries),
        ("attempt_rows", p.attempt_rows),
    ] {
        out.push_str(&format!("writerctl_retention_pruned_total{{kind=\"{kind}\"}} {n}\n"));
    }
    // The store's series, read at most once per STORE_SERIES_MAX_AGE unless this replica
    // changed the store since (see there).
    let app2 = app.clone();
    let store = app
        .store_series
        .get(move || {
            let c = &app2.coord;
            (
                c.sizes().map_err(|e| format!("store sizes: {e}")),
                c.store().projects_without_master().map_err(|e| format!("projects without a master: {e}")),
                c.paused_projects().map_err(|e| format!("paused projects: {e}")),
            )
        })
        .await;
    // The sizes that grow with use, from the shared store (every replica reports the same).
    match &store.sizes {
        Ok(z) => {
            for (name, help, n) in [
                ("writerctl_audit_rows", "Rows in the audit log (Postgres, or the SQLite file).", z.audit_rows),
                (
                    "writerctl_claim_history_steps",
                    "Work-claim history steps (Postgres, or the SQLite file).",
                    z.history_steps,
                ),
                ("writerctl_inbox_entries", "Inbox events held, over every inbox.", z.inbox_entries),
                ("writerctl_operator_attempt_rows", "Operator-attempt (throttle) rows.", z.attempt_rows),
            ] {
                out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n{name} {n}\n"));
            }
        }
        Err(e) => failure = failure.or(Some(e.clone())),
    }
    // A count, never a per-project series: projects are not bounded, labels must be. Left
    // out (like the queue depth) when the store cannot answer, so a scrape still succeeds.
    match &store.without_master {
        Ok(n) => {
            out.push_str(
                "# HELP writerctl_projects_without_master Projects with registered controllers and no master.\n",
            );
            out.push_str("# TYPE writerctl_projects_without_master gauge\n");
            out.push_str(&format!("writerctl_projects_without_master {n}\n"));
        }
        Err(e) => failure = failure.or(Some(e.clone())),
    }
    // Issue 30: paused projects, counted the same way (a project is never a label).
    match &store.paused {
        Ok(n) => {
            out.push_str("# HELP writerctl_project_paused Projects paused now (writerctl pause): no TTL release and no deputy handoff in them until resume or their --until. A count; project names are never labels (writerctl master status --project P says which).\n");
            out.push_str("# TYPE writerctl_project_paused gauge\n");
            out.push_str(&format!("writerctl_project_paused {n}\n"));
        }
        Err(e) => failure = failure.or(Some(e.clone())),
    }
    for (name, kind, help, n) in [
        (
            "writerctl_store_series_reads_total",
            "counter",
            "Store reads /metrics made for the store's series (at most one per 10 s unless this replica changed the store).",
            app.store_series.reads.load(Ordering::Relaxed),
        ),
        (
            "writerctl_audit_reads_refused_total",
            "counter",
            "master history, audit and audit export requests refused at the per-source or global bound on audit-log reads in flight.",
            app.reads.refused(),
        ),
    ] {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {n}\n"));
    }
    let app2 = app.clone();
    if let Ok(Some(depth)) = tokio::task::spawn_blocking(move || app2.coord.store().pending_audit_writes()).await {
        out.push_str("# HELP writerctl_audit_retry_queue_depth Writes accepted by Redis, not yet by Postgres.\n");
        out.push_str("# TYPE writerctl_audit_retry_queue_depth gauge\n");
        out.push_str(&format!("writerctl_audit_retry_queue_depth {depth}\n"));
    }
    // The queue's bounds and what they turned away (issue 28 point 4); Redis + Postgres only.
    let app2 = app.clone();
    if let Ok(Some(q)) = tokio::task::spawn_blocking(move || app2.coord.store().audit_queue()).await {
        for (name, help, n) in [
            ("writerctl_audit_queue_rows", "Entries in the Redis queue of writes waiting for Postgres.", q.rows),
            ("writerctl_audit_queue_bytes", "Bytes of entry data in that queue.", q.bytes),
            ("writerctl_audit_queue_max_rows", "--audit-queue-max-rows (0: no bound).", q.max_rows),
            ("writerctl_audit_queue_max_bytes", "--audit-queue-max-bytes (0: no bound).", q.max_bytes),
        ] {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n{name} {n}\n"));
        }
        out.push_str("# HELP writerctl_audit_queue_dropped_total What this replica turned away at the queue's bound: refusal (a failed verb's audit row, dropped), heartbeat (a routine heartbeat's Postgres write, skipped), write (a write verb, refused with coordinator_unavailable, nothing written).\n");
        out.push_str("# TYPE writerctl_audit_queue_dropped_total counter\n");
        for (kind, n) in
            [("refusal", q.dropped_refusals), ("heartbeat", q.dropped_heartbeats), ("write", q.refused_writes)]
        {
            out.push_str(&format!("writerctl_audit_queue_dropped_total{{kind=\"{kind}\"}} {n}\n"));
        }
    }
    // What /readyz says, bounded the same way; left out when the store does not answer.
    let ready = probe_readiness(&app).await;
    if let Err(e) = &ready {
        failure = failure.or(Some(format!("readiness: {e}")));
    }
    match &failure {
        Some(why) => {
            STORE_DOWN.fail(why);
        }
        None => {
            STORE_DOWN.recover();
        }
    }
    if let Ok(b) = ready {
        out.push_str("# HELP writerctl_store_degraded 1 while the audit plane (Postgres) is failing or behind; verbs are still served.\n");
        out.push_str("# TYPE writerctl_store_degraded gauge\n");
        out.push_str(&format!("writerctl_store_degraded {}\n", u8::from(b.degraded)));
        out.push_str("# HELP writerctl_audit_retry_queue_oldest_age_seconds How long the oldest write not yet in Postgres has waited (0 when none).\n");
        out.push_str("# TYPE writerctl_audit_retry_queue_oldest_age_seconds gauge\n");
        out.push_str(&format!(
            "writerctl_audit_retry_queue_oldest_age_seconds {}\n",
            b.oldest_age_seconds.unwrap_or(0.0)
        ));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}
