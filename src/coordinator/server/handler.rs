//! The one handler every verb is served by ([`handle`]), with the hooks a verb declares
//! ([`Gate`], [`Rate`], [`Verb::admin_scope`]), and what it shares: the error
//! envelope's status, bearer tokens, the source address, request ids, metrics per verb.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Query, RawPathParams, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;

use super::app::{App, MAX_LONG_POLL, Shared, VERIFICATION_QUEUE_LIMIT};
use super::guard::close_after;
use crate::claim::engine::{Actor, RequestCtx};
use crate::claim::error::StoreError;
use crate::claim::requests::RequestId;
use crate::claim::secret::{self, Secret};
use crate::claim::{ClaimError, Coordinator};
use crate::coordinator::limits::{ConnState, HeldPoll, Phase, source_key};
use crate::coordinator::verb::{Auth, Caller, Gate, Input, Method, Origin, Rate, Verb, check_names};
use crate::coordinator::wire::{REQUEST_ID_HEADER, Scope};
use crate::error::ErrorCode;

/// The HTTP status for an error code: 4xx for the caller's mistakes, 409 for conflicts,
/// 503 (retry) for unavailability.
pub(super) fn http_status(code: ErrorCode) -> StatusCode {
    if code == ErrorCode::RateLimited {
        return StatusCode::TOO_MANY_REQUESTS;
    }
    match code.exit_code() {
        2 => StatusCode::BAD_REQUEST,
        3 => StatusCode::CONFLICT,
        4 => StatusCode::UNPROCESSABLE_ENTITY,
        5 => StatusCode::NOT_FOUND,
        6 => StatusCode::UNAUTHORIZED,
        7 => StatusCode::FORBIDDEN,
        75 => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

pub(super) fn error_response(e: &ClaimError) -> Response {
    let mut resp = (http_status(e.code()), axum::Json(e.to_json())).into_response();
    if let ClaimError::RateLimited { retry_after_ms, .. } = e {
        resp.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after_ms.div_ceil(1000).max(1)));
    }
    resp
}

/// The bearer token, if any: a seat's write or an inbox read without one is refused by the
/// engine (`unauthorized`, audited) exactly as one with a wrong token.
pub(super) fn bearer_opt(headers: &HeaderMap) -> Option<Secret> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| Secret::new(t.trim().to_string()))
        .filter(|t| !t.expose().is_empty())
}

/// The header the [`peer`] layer puts the connection's source address in, for the
/// handlers (any value a client sends under that name is removed first).
pub(super) const PEER_HEADER: &str = "x-writerctl-peer";

/// Puts the connection's source address (from axum's `ConnectInfo`) in [`PEER_HEADER`],
/// after removing whatever the client sent under that name: the engine audits refusals
/// per source (issue 28 point 4) and must not take a client's word for its address. A
/// router driven without a socket has no source (its refusals are audited one row each).
pub(super) async fn peer(mut req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    req.headers_mut().remove(PEER_HEADER);
    if let Some(ip) = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip())
        && let Ok(v) = header::HeaderValue::from_str(&ip.to_string())
    {
        req.headers_mut().insert(PEER_HEADER, v);
    }
    next.run(req).await
}

/// The source address the [`peer`] layer recorded, if any.
pub(super) fn source_of(headers: &HeaderMap) -> Option<IpAddr> {
    headers.get(PEER_HEADER)?.to_str().ok()?.parse().ok()
}

impl App {
    /// The coordinator for a request from `headers`' source (see [`peer`]) that carries
    /// nothing else (a refusal before the verb, a long poll's reads).
    fn coord_from(&self, headers: &HeaderMap) -> Coordinator {
        self.coord.for_request(RequestCtx { source: source_of(headers), actor: Actor::Admin, ..RequestCtx::default() })
    }

    /// Takes a token of the seat's write bucket (issue 28 point 4: one seat grew Redis by
    /// 54 MB in 5 s). Keyed by project, seat (or session) and a hash of the credential, so
    /// strangers sending in a seat's name drain their own bucket, not the seat's. Past the
    /// rate: `rate_limited` (429, `Retry-After`), nothing written, and the refusal audited
    /// through the per-source limiter (a row and a count per interval at most).
    fn seat_rate(&self, headers: &HeaderMap, project: &str, seat: &str, verb: &str) -> Result<(), ClaimError> {
        let credential = bearer_opt(headers).map(|t| secret::token_hash(&t)).unwrap_or_default();
        // Issue 39 point 1: the bucket map holds up to 65,536 keys, so a key is a fixed 128
        // bits of digest, not the names (up to 2 x 256 bytes each: ~40 MiB at the cap).
        let key = secret::token_hash(&Secret::new(format!("{project}\u{0}{seat}\u{0}{credential}")));
        let key = &key[..32];
        let Err(wait) = self.seat_rates.take(key, Instant::now()) else { return Ok(()) };
        let e = ClaimError::RateLimited {
            what: format!("seat {seat}"),
            retry_after_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1),
        };
        let source = source_of(headers).unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let coord = self.coord.for_request(RequestCtx { source: Some(source), ..RequestCtx::default() });
        coord.audit_refusal(project, verb, &format!("seat:{seat}"), None, &e);
        self.observe(verb, e.code().as_str(), Duration::ZERO);
        Err(e)
    }

    /// Checks the admin token for a verb on `project` ("" for none); a refusal is audited
    /// there like any failed verb.
    fn admin_in(
        &self,
        project: &str,
        headers: &HeaderMap,
        verb: &str,
        target: Option<String>,
    ) -> Result<(), ClaimError> {
        let checked = self.check_admin(headers);
        if let Err(e) = &checked {
            self.coord_from(headers).audit_refusal(project, verb, "admin", target, e);
        }
        checked
    }

    fn check_admin(&self, headers: &HeaderMap) -> Result<(), ClaimError> {
        let expected = self.admin_token_hash.as_ref().ok_or(ClaimError::AdminRequired)?;
        let presented = bearer_opt(headers).ok_or(ClaimError::AdminRequired)?;
        if secret::token_hash_matches(expected, &secret::token_hash(&presented)) {
            Ok(())
        } else {
            Err(ClaimError::AdminRequired)
        }
    }
}

/// The request `V` serves, as the engine sees it (see [`RequestCtx`]): a write's source and
/// the request id the caller sent with it (`Idempotency-Key`), and for an administrative
/// verb the admin token (already checked), which its kept answer is sealed under.
fn request_ctx<V: Verb>(headers: &HeaderMap) -> Result<RequestCtx, ClaimError> {
    let id = match headers.get(REQUEST_ID_HEADER).filter(|_| V::WRITE) {
        None => None,
        Some(v) => Some(RequestId::parse(v.to_str().map_err(|_| {
            ClaimError::invalid(REQUEST_ID_HEADER, format!("the {REQUEST_ID_HEADER} header is not ASCII"))
        })?)?),
    };
    let admin = if V::AUTH == Auth::Admin { bearer_opt(headers) } else { None };
    // A write's refusals are audited through the per-source limiter; a read audits none in
    // the engine, and carries no source, as before.
    let source = if V::WRITE { source_of(headers) } else { None };
    Ok(RequestCtx { id, source, admin, actor: Actor::Admin, ..RequestCtx::default() })
}

/// Failpoint `serve.after_commit`: a write verb has committed and its reply is not sent
/// yet. Tests stop the server here to lose the reply of a write that was applied.
fn after_commit() -> Result<(), ClaimError> {
    #[cfg(any(test, debug_assertions, feature = "failpoints"))]
    crate::lockfile::failpoint::hit("serve.after_commit")
        .map_err(|e| ClaimError::Unavailable(format!("{e}: the reply of an applied write was lost")))?;
    Ok(())
}

/// Runs `f` on the blocking pool and records metrics and a log line.
pub(super) async fn execute<T, F>(app: Shared, verb: &'static str, f: F) -> Result<T, ClaimError>
where
    T: Send + 'static,
    F: FnOnce(&App) -> Result<T, ClaimError> + Send + 'static,
{
    let started = Instant::now();
    let app2 = app.clone();
    let result = match tokio::task::spawn_blocking(move || f(&app2)).await {
        Ok(r) => r,
        Err(e) => Err(ClaimError::store_because("verb task failed", e)),
    };
    let elapsed = started.elapsed();
    let code = result.as_ref().map_or_else(|e| e.code().as_str(), |_| "ok");
    app.observe(verb, code, elapsed);
    tracing::info!(verb, result = code, elapsed_ms = elapsed.as_secs_f64() * 1e3);
    result
}

/// JSON for a verb's result: `ok` and the value, or the error envelope.
fn respond<T: Serialize>(ok: StatusCode, result: Result<T, ClaimError>) -> Response {
    match result {
        Ok(v) => (ok, axum::Json(v)).into_response(),
        Err(e) => error_response(&e),
    }
}

/// Registers `V` on `router`, served by [`handle`].
pub(super) fn route<V: Verb>(router: Router<Shared>) -> Router<Shared> {
    let handler = match V::METHOD {
        Method::Get => get(handle::<V>),
        Method::Post => post(handle::<V>),
    };
    router.route(V::PATH, handler)
}

/// The status of a verb's success: 201 for a creation, else 200.
fn ok_status<V: Verb>() -> StatusCode {
    if V::CREATED { StatusCode::CREATED } else { StatusCode::OK }
}

/// The path parameters of `V`'s route, by name.
fn path_of<V: Verb>(params: &RawPathParams) -> Result<V::Path, ClaimError> {
    let map: serde_json::Map<String, serde_json::Value> =
        params.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
    serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| ClaimError::invalid("path", format!("path: {e}")))
}

/// `V`'s input: the JSON body of a POST, the query of a GET.
fn input_of<V: Verb>(uri: &Uri, body: &[u8]) -> Result<V::Input, ClaimError> {
    match V::METHOD {
        Method::Post => V::Input::read(body),
        Method::Get => Query::<V::Input>::try_from_uri(uri)
            .map(|Query(q)| q)
            .map_err(|e| ClaimError::invalid("query", format!("query: {}", e.body_text()))),
    }
}

/// The seat whose write rate a request of `V` spends (see [`Rate`]), by its path's and
/// body's own fields.
fn rate_seat<V: Verb>(path: &V::Path, input: &V::Input) -> Option<String> {
    match V::RATE {
        Rate::None => None,
        Rate::Session => Some(format!("session:{}", path.session().unwrap_or_default())),
        Rate::SeatInPath => Some(path.seat().unwrap_or_default().to_string()),
        Rate::SeatInBody => Some(input.seat().unwrap_or_default().to_string()),
    }
}

/// One request of `V` as the handler read it: its path and input parsed once and their
/// names checked, with what the gates need of the connection.
struct Received<V: Verb> {
    path: V::Path,
    input: V::Input,
    headers: HeaderMap,
    conn: Option<Arc<ConnState>>,
}

/// Every verb's handler: its path and input read once and their names checked
/// ([`check_names`]), the seat's rate ([`Rate`]), then the verb on the blocking pool
/// ([`run_verb`]), counted in the metrics, through its [`Gate`].
async fn handle<V: Verb>(
    State(app): State<Shared>,
    conn: Option<axum::Extension<Arc<ConnState>>>,
    params: RawPathParams,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Issue 39 point 3: every name is checked here, before the rate buckets, the audit log,
    // the refusal windows, the watch registry or the store see it.
    let read = path_of::<V>(&params).and_then(|path| {
        let input = input_of::<V>(&uri, &body)?;
        check_names::<V>(&path, &input).map(|()| (path, input))
    });
    let (path, input) = match read {
        Ok(r) => r,
        Err(e) => {
            app.observe(V::NAME, e.code().as_str(), Duration::ZERO);
            return error_response(&e);
        }
    };
    let project = path.project().map(str::to_string);
    if let Some(seat) = rate_seat::<V>(&path, &input)
        && let Err(e) = app.seat_rate(&headers, project.as_deref().unwrap_or_default(), &seat, V::NAME)
    {
        return error_response(&e);
    }
    let conn = conn.map(|axum::Extension(c)| c);
    let proves = proves_connection::<V>(&headers);
    let r = Received::<V> { path, input, headers, conn: conn.clone() };
    let response = match V::GATE {
        Gate::None => {
            let result = execute(app.clone(), V::NAME, move |a| run_verb::<V>(a, &r.headers, r.path, r.input)).await;
            respond(ok_status::<V>(), result)
        }
        Gate::LongPoll => long_poll::<V>(app.clone(), r).await,
        Gate::OperatorVerification => verify_operator::<V>(app.clone(), r).await,
        Gate::Pushed => pushed::<V>(app.clone(), project.clone(), r).await,
        Gate::BoundedRead => bounded_read::<V>(app.clone(), r).await,
    };
    if proves
        && response.status().is_success()
        && let Some(c) = &conn
    {
        c.prove();
    }
    // A write this server answered may have changed what `master status --watch` shows:
    // the project's watch checker (if any) reads it again now (see `watchers`).
    if V::WRITE
        && response.status().is_success()
        && let Some(p) = project
    {
        app.watchers.poke(&p);
    }
    // ... and what `/metrics` last read of the store is out of date (issue 39 point 6: the
    // store's series are read again only after a credentialed change, or when they age).
    if (V::WRITE || V::AUTH == Auth::Admin) && response.status().is_success() {
        app.store_series.touched();
    }
    response
}

/// Whether a request of `V` that succeeded proves its connection (issue 39 point 3: a
/// proven connection is evicted last): the verb takes a credential (a session or seat
/// token or the admin token in `Authorization`, an operator password in the body) and the
/// request was answered with success, so the engine or [`App::check_admin`] accepted it. A
/// verb anyone may call proves nothing, whatever the request carried.
fn proves_connection<V: Verb>(headers: &HeaderMap) -> bool {
    match V::AUTH {
        Auth::None => false,
        Auth::Operator => true,
        Auth::Session | Auth::Seat | Auth::Admin => bearer_opt(headers).is_some(),
    }
}

/// A place in the long-poll pool for the request's connection (issue 39 point 2, see
/// [`ConnGate::hold_long_poll`](crate::coordinator::limits::ConnGate::hold_long_poll)), or
/// None: answer at once. A router driven without a socket has no pool to share.
fn hold_long_poll(app: &App, conn: Option<&Arc<ConnState>>) -> Option<HeldPoll> {
    match (&app.connections, conn) {
        (None, _) => Some(HeldPoll::unbounded()),
        (Some(gate), Some(c)) => gate.hold_long_poll(c),
        // The gate no longer knows the connection (evicted before its request ran).
        (Some(_), None) => None,
    }
}

/// How long a long-poll that found no place in the pool waits before it is answered (at
/// most its own wait).
const NOT_HELD_WAIT: Duration = Duration::from_secs(1);

/// Waits up to [`NOT_HELD_WAIT`] (at most `wait`) for a long-poll that found no place in the
/// pool, evictable first of all ([`Phase::Held`] without a place: it holds no pool share);
/// true if it was evicted meanwhile. Issue 39 point 2: answered at once, a flood of them
/// came straight back, 31,000 requests a second from 8 addresses on 2 cores, and the
/// handoffs beside it slowed 40-fold; a second's pause caps each connection at one poll a
/// second, and costs nobody a slot, since any newcomer evicts it before anything else.
async fn not_held_pause(conn: Option<&ConnState>, wait: Duration) -> bool {
    let pause = wait.min(NOT_HELD_WAIT);
    if pause.is_zero() {
        return false;
    }
    set_phase(conn, Phase::Held);
    let evicted = unless_evicted(conn, tokio::time::sleep(pause)).await.is_none();
    set_phase(conn, Phase::Busy);
    evicted
}

/// [`Gate::BoundedRead`]: a place in the read bounds (`super::reads`) before anything else,
/// or `coordinator_unavailable` at once with `Retry-After`; the place is moved into the
/// blocking task, so it is held until the store read ends even if the client hangs up.
async fn bounded_read<V: Verb>(app: Shared, r: Received<V>) -> Response {
    let Received { path, input, headers, .. } = r;
    let source = source_of(&headers).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let slot = match app.reads.try_enter(source).await {
        Ok(slot) => slot,
        Err(e) => {
            app.observe(V::NAME, e.code().as_str(), Duration::ZERO);
            let mut resp = error_response(&e);
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(super::reads::READ_RETRY_AFTER_SECONDS));
            return resp;
        }
    };
    let result = execute(app.clone(), V::NAME, move |a| {
        let _slot = slot;
        run_verb::<V>(a, &headers, path, input)
    })
    .await;
    respond(ok_status::<V>(), result)
}

/// [`Gate::Pushed`]: waits on the project's watch registry (no thread, no store read of
/// its own) until the state's version differs from the query's `after`, or its `wait_ms`
/// (capped at [`MAX_LONG_POLL`]) ends; answers the state then. Not counted in the verb
/// metrics: its time is the caller's wait (`writerctl_master_watchers` counts them).
///
/// Issue 39 point 2: a watch needs no credential, so it is held only with a place in the
/// long-poll pool and a checker to spare ([`MAX_WATCHED_PROJECTS`](super::watchers::MAX_WATCHED_PROJECTS)); otherwise, and for a
/// request that does not wait, it is answered at once with the state now, and the client
/// polls again (`master status --watch` pauses before it does when an answer came back
/// unchanged early). Evicted while held, it answers at once with the state as it is and
/// closes its connection.
async fn pushed<V: Verb>(app: Shared, project: Option<String>, r: Received<V>) -> Response {
    let Received { input, conn, .. } = r;
    let Some(project) = project else {
        return error_response(&ClaimError::invalid("project", "a watch needs a project"));
    };
    let wait = V::hold_open(&input).min(MAX_LONG_POLL);
    let held = if wait.is_zero() { None } else { hold_long_poll(&app, conn.as_ref()) };
    let Some((held, mut rx)) = held.and_then(|h| Some((h, app.watchers.subscribe(&project)?))) else {
        let evicted = not_held_pause(conn.as_deref(), wait).await;
        let resp = match app.watchers.read_now(&project).await {
            Ok(state) => (StatusCode::OK, axum::Json(state)).into_response(),
            Err(e) => error_response(&e),
        };
        return if evicted { close_after(resp) } else { resp };
    };
    let got = tokio::select! {
        r = app.watchers.next_reading(&mut rx, V::seen_version(&input), wait) => Some(r),
        () = held.evicted() => None,
    };
    drop(held);
    let evicted = got.is_none();
    let resp = match got.unwrap_or_else(|| rx.borrow().clone()) {
        Some(Ok(state)) => (StatusCode::OK, axum::Json(state)).into_response(),
        Some(Err(e)) => error_response(&e),
        None => error_response(&ClaimError::Unavailable(format!(
            "the status of project {project} was not read within {} s",
            super::watchers::FIRST_READ.as_secs()
        ))),
    };
    if evicted { close_after(resp) } else { resp }
}

/// The verb itself, on the blocking pool: the coordinator bound to the request
/// ([`request_ctx`]), an admin token checked (a refusal audited), the engine called, and a
/// write's reply passes the `serve.after_commit` failpoint.
fn run_verb<V: Verb>(app: &App, headers: &HeaderMap, path: V::Path, input: V::Input) -> Result<V::Answer, ClaimError> {
    let coord = app.coord.for_request(request_ctx::<V>(headers)?);
    if V::AUTH == Auth::Admin {
        let (project, target) = V::admin_scope(&path, &input);
        app.admin_in(&project, headers, V::NAME, target)?;
    }
    // Whether the bearer is the admin token: some reads show more to it (`master history`).
    let admin = V::AUTH == Auth::Admin || app.check_admin(headers).is_ok();
    let caller = Caller { bearer: bearer_opt(headers), origin: Origin::Http, admin };
    let answer = V::apply(&coord, path, input, &caller)?;
    if V::WRITE {
        after_commit()?;
    }
    Ok(answer)
}

/// [`Gate::LongPoll`]: answers as soon as the verb has something to say
/// ([`Verb::worth_answering`]), or after [`Verb::hold_open`] (capped at
/// [`MAX_LONG_POLL`]) with what it has. Not counted in the verb metrics: its time is
/// mostly the caller's wait.
///
/// Issue 39 point 2: the first read runs before anything is held, so a request whose
/// credential the engine refuses is answered at once and never holds a connection; one it
/// accepts proves its connection, then waits only with a place in the long-poll pool (else
/// it is answered at once with the empty answer, and the client polls again). Evicted
/// while held, it answers at once with what it has and closes its connection.
async fn long_poll<V: Verb>(app: Shared, r: Received<V>) -> Response {
    let Received { path, input, headers, conn } = r;
    let deadline = Instant::now() + V::hold_open(&input).min(MAX_LONG_POLL);
    let caller = Caller { bearer: bearer_opt(&headers), origin: Origin::Http, admin: false };
    let coord = Arc::new(app.coord_from(&headers));
    let mut held: Option<HeldPoll> = None;
    loop {
        let (c, p, i, who) = (coord.clone(), path.clone(), input.clone(), caller.clone());
        let answer = match tokio::task::spawn_blocking(move || V::apply(&c, p, i, &who)).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return error_response(&e),
            Err(e) => return error_response(&StoreError::new(e.to_string()).with_source(e).into()),
        };
        if V::worth_answering(&input, &answer) || Instant::now() >= deadline {
            return (StatusCode::OK, axum::Json(answer)).into_response();
        }
        let place = match &held {
            Some(h) => h,
            None => {
                if proves_connection::<V>(&headers)
                    && let Some(c) = &conn
                {
                    c.prove();
                }
                match hold_long_poll(&app, conn.as_ref()) {
                    Some(h) => held.insert(h),
                    None => {
                        let evicted =
                            not_held_pause(conn.as_deref(), deadline.saturating_duration_since(Instant::now())).await;
                        let resp = (StatusCode::OK, axum::Json(answer)).into_response();
                        return if evicted { close_after(resp) } else { resp };
                    }
                }
            }
        };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            () = place.evicted() => return close_after((StatusCode::OK, axum::Json(answer)).into_response()),
        }
    }
}

/// [`Gate::OperatorVerification`], `master claim`'s (issue 19: strangers must not lock an
/// operator out). In order:
///
/// 1. A slot of the caller's source address ([`CLAIMS_PER_SOURCE`](super::app::CLAIMS_PER_SOURCE), waiting in arrival
///    order behind at most [`CLAIMS_WAITING_PER_SOURCE`](super::app::CLAIMS_WAITING_PER_SOURCE); a full queue answers
///    `coordinator_unavailable` at once): one address's guesses never queue in front of
///    another's.
/// 2. An argon2 permit from the budget ([`Argon2Budget`](crate::coordinator::budget::Argon2Budget): one per core within the
///    memory budget; issue 28 point 4), held only for the verb, whose password hash it
///    computes into the permit's own memory (issue 39 point 1). Waiters are served by tier,
///    then round robin per source: an operator id whose last attempt from this source
///    succeeded first, clean sources next, sources that were refused last, so a flood from
///    any number of addresses does not queue ahead of the operator (issue 39 point 7).
///    The time spent in steps 1 and 2 is `writerctl_verb_queue_seconds{verb="master.claim"}`.
/// 3. The password is verified at once; a correct one is answered at once, whatever
///    failures came before it, and proves the (source, operator id) pair.
/// 4. A refused one marks its source and operator id as recently refused, and is held back
///    by the operator id's back-off, outside every shared slot and on no thread. The
///    source's slot stays taken until the hold-back ends, even if the client hangs up or
///    the connection is evicted: otherwise a guesser could drop each slow (wrong) answer
///    and guess again at the speed of argon2.
///
/// While it waits in steps 1, 2 and 4 its connection is evictable ([`unless_evicted`]).
async fn verify_operator<V: Verb>(app: Shared, r: Received<V>) -> Response {
    let Received { path, input, headers, conn } = r;
    let arrived = Instant::now();
    let source = source_of(&headers).unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let unavailable = |app: &App, why: String| {
        let e = ClaimError::Unavailable(why);
        app.observe(V::NAME, e.code().as_str(), Duration::ZERO);
        error_response(&e)
    };
    let Some(ticket) = app.claim_sources.try_join(source) else {
        app.claims_refused_per_source.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return unavailable(&app, format!("too many operator verifications from {source} are already in flight"));
    };
    let evicted = || {
        let e = ClaimError::Unavailable("too many open connections: this one was queued for a verification".into());
        app.observe(V::NAME, e.code().as_str(), Duration::ZERO);
        close_after(error_response(&e))
    };
    let conn = conn.as_deref();
    set_phase(conn, Phase::Held);
    let Some(entered) = unless_evicted(conn, tokio::time::timeout(VERIFICATION_QUEUE_LIMIT, ticket.enter())).await
    else {
        return evicted();
    };
    let Ok(source_slot) = entered else {
        return unavailable(&app, format!("operator verifications from {source} stayed busy"));
    };
    // The operator id picks the tier.
    let operator = V::operator(&input);
    let key = source_key(source);
    let budget = app.verifications.clone();
    let queued = tokio::time::timeout(VERIFICATION_QUEUE_LIMIT, budget.acquire(key, operator.as_deref()));
    let mut verifying = match unless_evicted(conn, queued).await {
        None => return evicted(),
        Some(Ok(Ok(permit))) => permit,
        Some(_) => return unavailable(&app, "too many operator verifications in flight".into()),
    };
    set_phase(conn, Phase::Busy);
    app.observe_queue(V::NAME, arrived.elapsed());
    // The permit goes with the verb onto its thread and lends it its argon2 memory (issue
    // 39 point 1); it is given back when the verb ends there, also when the client hung
    // up meanwhile, so no more computations run at once than there are buffers.
    let result =
        execute(app.clone(), V::NAME, move |a| verifying.lend(|| run_verb::<V>(a, &headers, path, input))).await;
    // Issue 39 point 7: a correct password proves this (source, operator id) pair, which
    // puts its next claim ahead of every address that has proven nothing.
    if result.is_ok()
        && let Some(o) = operator.as_deref()
    {
        app.verifications.note_success(key, o, Instant::now());
    }
    if let Err(ClaimError::InvalidOperatorCredentials { next_delay_ms }) = &result {
        app.verifications.note_refused(key, operator.as_deref(), Instant::now());
        let hold = app.coord.real_duration(Duration::from_millis(*next_delay_ms));
        // The hold-back keeps the source's slot on its own task, so neither a hang-up nor
        // an eviction can end it.
        let held = tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            drop(source_slot);
        });
        set_phase(conn, Phase::Held);
        if unless_evicted(conn, held).await.is_none() {
            return close_after(respond(ok_status::<V>(), result));
        }
    }
    respond(ok_status::<V>(), result)
}

/// Puts the request's connection (if the server has one) in `phase`.
fn set_phase(conn: Option<&ConnState>, phase: Phase) {
    if let Some(c) = conn {
        c.set_phase(phase);
    }
}

/// `f`, or None as soon as `conn` is evicted. Issue 39 point 2: a `master claim` queued for
/// its source's slot or an argon2 permit, or whose wrong password is held back, costs the
/// server nothing but its connection, so it waits in [`Phase::Held`] (evictable like an
/// unauthenticated long-poll) instead of as busy: 1,000 addresses x 2 queued guesses would
/// otherwise fill `--max-connections` with connections nothing could evict.
async fn unless_evicted<T>(conn: Option<&ConnState>, f: impl std::future::Future<Output = T>) -> Option<T> {
    match conn {
        None => Some(f.await),
        Some(c) => tokio::select! {
            r = f => Some(r),
            () = c.evicted() => None,
        },
    }
}
