//! One definition per coordinator verb.
//!
//! A verb is a type implementing [`Verb`]: its metrics and audit name, its route (method
//! and path template), who may call it ([`Auth`]), whether it is a write (kept under a
//! request id, `Idempotency-Key`), what its URL, body or query and answer are, and
//! [`Verb::apply`], the one call into the engine. Everything else is derived from that:
//!
//! * the server registers every verb of [`for_each_verb`](crate::for_each_verb) with one generic
//!   handler (`server::handler`), the special cases being declared here as hooks
//!   ([`Gate`], [`Rate`], [`Verb::admin_scope`]) rather than forks of it;
//! * the client sends any verb with one generic call (`HttpCoordinator::call`);
//! * the CLI calls [`Endpoint::call`](super::api::Endpoint::call), which runs [`Verb::apply`]
//!   in-process for the embedded store and the client for a server, so both run the same
//!   conversions;
//! * the CLI's per-command error lists, the man pages' EXIT STATUS and the OpenAPI
//!   operations' error statuses are built from each verb's [`Verb::ERRORS`] ([`errors`]);
//! * the OpenAPI document (`server::openapi`) is built from the same list and types.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::openapi::path::Parameter;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{RefOr, Required};

use super::wire::Scope;
use crate::claim::secret::Secret;
use crate::claim::{ClaimError, Coordinator};
use crate::error::ErrorCode;

/// The HTTP method of a verb's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// A read: its input is the query string.
    Get,
    /// Its input is a JSON body.
    Post,
}

/// How long one request may take before the coordinator counts as unavailable (a long-poll
/// adds its own wait on top). Longer than a server's own wait for a busy store (30 s), so a
/// verb the server still commits is not reported as failed.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(45);

/// Who may call a verb, and with what in `Authorization: Bearer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// Anyone who reaches the coordinator.
    None,
    /// A controller's session token; a request without one is refused (`unauthorized`).
    Session,
    /// A session token of a controller registered as the seat (or the inbox's identity).
    /// A request without one is still run, and the engine refuses it (audited) exactly as
    /// one with a wrong token.
    Seat,
    /// The server's admin token, checked (and a refusal audited) before the verb runs;
    /// in-process, having the store file is the authority.
    Admin,
    /// An operator id and password in the body, verified by the engine (argon2).
    Operator,
}

/// A server-side special case of a verb, run by the generic handler around
/// [`Verb::apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// None: parse, authorize, apply, answer.
    None,
    /// `master claim`: a slot of the source address and a permit of the argon2 budget
    /// before the verb, and a wrong password's answer held back after it.
    OperatorVerification,
    /// `inbox`: the read is repeated until an event arrives or the requested wait ends.
    LongPoll,
    /// `master.watch`: answered from the server's per-project watch registry
    /// (`server::watchers`: one read per project and change, shared by every watcher)
    /// once the state differs from the caller's, or when [`Verb::hold_open`] ends.
    Pushed,
    /// A read of the audit log (`master history`, `audit`, `audit export`; issue 39 point
    /// 6): a few in flight per source address and a few in all, more refused at once
    /// (`coordinator_unavailable`, 503 with `Retry-After`) before the store is touched.
    BoundedRead,
}

/// Whose per-seat write rate (issue 28 point 4) a request spends, checked before its body
/// is parsed: a seat over its rate is refused whatever it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// Not rate limited.
    None,
    /// The session of the path's `{sid}`.
    Session,
    /// The path's `{seat}`.
    SeatInPath,
    /// The body's `seat` (a body without one shares the bucket of the empty name, and
    /// fails in the verb anyway).
    SeatInBody,
}

/// Who is calling, as far as the verb needs to know.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The bearer token presented (a session token, or the admin token).
    pub bearer: Option<Secret>,
    /// In-process or over HTTP.
    pub origin: Origin,
    /// Over HTTP: the server found `bearer` to be its admin token. In-process: false (the
    /// origin is the authority there, see [`Caller::trusted`]).
    pub admin: bool,
}

/// Where a verb runs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The CLI on the embedded store: administrative verbs are audited as `local`, and a
    /// wrong operator password is held back on this thread.
    Local,
    /// The server: administrative verbs are audited as `admin` (the token was checked),
    /// and a wrong operator password returns at once for the server to hold back.
    Http,
}

impl Caller {
    /// Trusted with everything a read can show: in-process (having the store file is the
    /// authority) or with the server's admin token.
    pub fn trusted(&self) -> bool {
        self.origin == Origin::Local || self.admin
    }

    /// The session token a [`Auth::Session`] verb needs.
    pub fn session_token(&self) -> Result<&Secret, ClaimError> {
        self.bearer.as_ref().ok_or(ClaimError::MissingToken)
    }
}

/// What a verb's request carries besides its path: a JSON body (POST) or a query (GET).
pub trait Input: Serialize + DeserializeOwned + Clone + Send + 'static {
    /// Reads the body a server received (POST verbs).
    fn read(body: &[u8]) -> Result<Self, ClaimError> {
        serde_json::from_slice(body).map_err(|e| ClaimError::invalid("request body", format!("request body: {e}")))
    }
    /// OpenAPI: the body's schema, registering what it refers to (None: no body).
    fn body_schema(_components: &mut Components) -> Option<RefOr<Schema>> {
        None
    }
    /// OpenAPI: the query parameters (GET verbs).
    fn query_parameters() -> Vec<Parameter> {
        Vec::new()
    }
    /// The seat a body names, whose write rate a [`Rate::SeatInBody`] verb spends.
    fn seat(&self) -> Option<&str> {
        None
    }
}

/// What a verb answers, with its OpenAPI schema.
pub trait Answer: Serialize + DeserializeOwned + Send + 'static {
    /// OpenAPI: the answer's schema, registering what it refers to.
    fn schema(components: &mut Components) -> RefOr<Schema>;
}

/// The path parameters of a verb's route, by name, and what the edge reads from them
/// ([`Scope`]).
pub trait PathParams: Scope + Serialize + DeserializeOwned + Clone + Send + 'static {
    /// OpenAPI: the path parameters.
    fn parameters() -> Vec<Parameter>;
}

impl<T: utoipa::IntoParams + Scope + Serialize + DeserializeOwned + Clone + Send + 'static> PathParams for T {
    fn parameters() -> Vec<Parameter> {
        T::into_params(|| Some(utoipa::openapi::path::ParameterIn::Path))
    }
}

/// The OpenAPI component schemas a document collects, by name.
pub type Components = std::collections::BTreeMap<String, RefOr<Schema>>;

/// Registers `T` and every schema it refers to; returns a reference to it.
pub fn named<T: utoipa::ToSchema>(components: &mut Components) -> RefOr<Schema> {
    let mut deps = Vec::new();
    T::schemas(&mut deps);
    components.extend(deps);
    let name = T::name().into_owned();
    components.insert(name.clone(), T::schema());
    RefOr::Ref(utoipa::openapi::Ref::from_schema_name(name))
}

/// One coordinator verb. See the module documentation.
pub trait Verb: 'static {
    /// The verb's name in metrics, logs and the audit log (`master.claim`).
    const NAME: &'static str;
    /// The OpenAPI operation id (`claim`).
    const OPERATION: &'static str;
    /// One line for the OpenAPI document.
    const SUMMARY: &'static str;
    /// The route's method.
    const METHOD: Method;
    /// The route's path template (`/v1/projects/{project}/master/claim`).
    const PATH: &'static str;
    /// Who may call it.
    const AUTH: Auth;
    /// A write: the request id (`Idempotency-Key`) keeps its answer, so a retry acts once.
    const WRITE: bool;
    /// A server-side special case ([`Gate`]).
    const GATE: Gate = Gate::None;
    /// Answers 201 instead of 200 (a creation).
    const CREATED: bool = false;
    /// Whose write rate a request spends ([`Rate`]).
    const RATE: Rate = Rate::None;
    /// Every error code the verb itself can answer, beyond what any request can meet on its
    /// way (`coordinator_unavailable`, `internal`, `invalid_argument`: [`COMMON_ERRORS`]) and
    /// what its [`Auth`] and [`Rate`] imply ([`errors`]). The CLI's per-command error list,
    /// the man page's EXIT STATUS and the OpenAPI operation's error statuses derive from it;
    /// a debug build aborts when a command fails with a code its verbs do not declare.
    const ERRORS: &'static [ErrorCode];

    /// The path parameters.
    type Path: PathParams;
    /// The body (POST) or query (GET).
    type Input: Input;
    /// The answer.
    type Answer: Answer;

    /// Runs the verb on the engine.
    fn apply(
        c: &Coordinator,
        path: Self::Path,
        input: Self::Input,
        caller: &Caller,
    ) -> Result<Self::Answer, ClaimError>;

    /// The names a request carries outside its path, with what each is (for messages);
    /// [`check_names`] checks them with the path parameters.
    fn names(_input: &Self::Input) -> Vec<(&'static str, &str)> {
        Vec::new()
    }

    /// [`Auth::Admin`] verbs: the project and target a refused admin token is audited
    /// under (by default the path's project and [`Scope::audit_target`]).
    fn admin_scope(path: &Self::Path, _input: &Self::Input) -> (String, Option<String>) {
        (path.project().unwrap_or_default().to_string(), path.audit_target())
    }

    /// [`Gate::LongPoll`]: how long the server may hold the request open for an answer
    /// worth sending ([`Verb::worth_answering`]).
    fn hold_open(_input: &Self::Input) -> Duration {
        Duration::ZERO
    }

    /// [`Gate::LongPoll`]: whether `answer` to `input` is sent before the wait ends (has
    /// something new); the client also pauses after an early answer that has not.
    fn worth_answering(_input: &Self::Input, _answer: &Self::Answer) -> bool {
        true
    }

    /// [`Gate::Pushed`]: the version of the state the caller last saw (the answer waits for
    /// another one).
    fn seen_version(_input: &Self::Input) -> Option<&str> {
        None
    }

    /// [`Gate::OperatorVerification`]: the operator id the request names (its tier in the
    /// argon2 budget).
    fn operator(_input: &Self::Input) -> Option<String> {
        None
    }

    /// How long the client waits for the answer.
    fn client_timeout(_input: &Self::Input) -> Duration {
        REQUEST_TIMEOUT
    }
}

/// What any request can meet on its way, whatever the verb: the server or its store
/// unreachable or busy, a store failure, a request the edge refuses (a bad name, body or
/// query).
pub const COMMON_ERRORS: &[ErrorCode] =
    &[ErrorCode::CoordinatorUnavailable, ErrorCode::Internal, ErrorCode::InvalidArgument];

/// Every code a request of `V` can be answered with: [`COMMON_ERRORS`], `unauthorized`
/// for a verb that takes a token, `rate_limited` for one a seat's rate bounds, and
/// [`Verb::ERRORS`], in the registry's order.
pub fn errors<V: Verb>() -> Vec<ErrorCode> {
    let auth: &[ErrorCode] = match V::AUTH {
        Auth::Session | Auth::Seat | Auth::Admin => &[ErrorCode::Unauthorized],
        Auth::None | Auth::Operator => &[],
    };
    let rate: &[ErrorCode] = if V::RATE == Rate::None { &[] } else { &[ErrorCode::RateLimited] };
    let sets = [COMMON_ERRORS, auth, rate, V::ERRORS];
    ErrorCode::ALL.iter().copied().filter(|c| sets.iter().any(|s| s.contains(c))).collect()
}

/// Checks every name a request of `V` carries, its path parameters (each one a name:
/// project, seat, session id, channel, task, identity) and [`Verb::names`], by the engine's
/// rules ([`validate_name`](crate::claim::names::validate_name): length, control and format
/// characters, NFC).
///
/// The client runs it before sending, so a bad name fails as it would in-process; the
/// server runs it at its edge before anything else sees the request (issue 39 point 3): a
/// 30 KB project name used to reach the audit log, the refusal windows and the watch
/// registry of a server that trusted its clients to check.
pub fn check_names<V: Verb>(path: &V::Path, input: &V::Input) -> Result<(), ClaimError> {
    use crate::claim::names::validate_name;
    path.names().into_iter().chain(V::names(input)).try_for_each(|(what, v)| validate_name(what, v))
}

/// Implements [`Input`] for JSON bodies with a schema (`seat`: bodies whose `seat` field
/// names the seat writing, see [`Input::seat`]).
macro_rules! json_input {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::coordinator::verb::Input for $t {
            fn body_schema(c: &mut $crate::coordinator::verb::Components) -> Option<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>> {
                Some($crate::coordinator::verb::named::<$t>(c))
            }
        }
    )*};
    (seat $($t:ty),* $(,)?) => {$(
        impl $crate::coordinator::verb::Input for $t {
            fn body_schema(c: &mut $crate::coordinator::verb::Components) -> Option<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>> {
                Some($crate::coordinator::verb::named::<$t>(c))
            }
            fn seat(&self) -> Option<&str> {
                Some(&self.seat)
            }
        }
    )*};
}

/// Implements [`Input`] for query strings.
macro_rules! query_input {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::coordinator::verb::Input for $t {
            fn query_parameters() -> Vec<utoipa::openapi::path::Parameter> {
                <$t as utoipa::IntoParams>::into_params(|| Some(utoipa::openapi::path::ParameterIn::Query))
            }
        }
    )*};
}

/// Implements [`Answer`] for named schemas, lists of them, and optional ones.
macro_rules! answers {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::coordinator::verb::Answer for $t {
            fn schema(c: &mut $crate::coordinator::verb::Components) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                $crate::coordinator::verb::named::<$t>(c)
            }
        }
    )*};
    (list $($t:ty),* $(,)?) => {$(
        impl $crate::coordinator::verb::Answer for Vec<$t> {
            fn schema(c: &mut $crate::coordinator::verb::Components) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ArrayBuilder::new().items($crate::coordinator::verb::named::<$t>(c)).into()
            }
        }
    )*};
    (optional $($t:ty),* $(,)?) => {$(
        impl $crate::coordinator::verb::Answer for Option<$t> {
            fn schema(c: &mut $crate::coordinator::verb::Components) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::OneOfBuilder::new()
                    .item(utoipa::openapi::schema::Object::with_type(utoipa::openapi::schema::Type::Null))
                    .item($crate::coordinator::verb::named::<$t>(c))
                    .into()
            }
        }
    )*};
}

/// Declares a verb: its type, route, authorization, write flag, types, its own error codes
/// ([`Verb::ERRORS`], by `ErrorCode` variant) and [`Verb::apply`], with the hooks it
/// overrides (`const GATE`, `fn names`, ...).
macro_rules! verb {
    (
        $(#[doc = $doc:literal])*
        $name:ident = $verb:expr, as $op:literal: $method:ident $path:literal, auth $auth:ident, write $write:literal;
        ($p:ty, $i:ty) -> $a:ty;
        errors [$($err:ident),* $(,)?];
        apply |$c:pat_param, $pp:pat_param, $ip:pat_param, $caller:pat_param| $body:block
        $(const $k:ident: $kt:ty = $kv:expr;)*
        $(fn $f:ident $args:tt -> $ret:ty $fb:block)*
    ) => {
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $crate::coordinator::verb::Verb for $name {
            const NAME: &'static str = $verb;
            const OPERATION: &'static str = $op;
            const SUMMARY: &'static str = concat!($($doc, "\n"),*);
            const METHOD: $crate::coordinator::verb::Method = $crate::coordinator::verb::Method::$method;
            const PATH: &'static str = $path;
            const AUTH: $crate::coordinator::verb::Auth = $crate::coordinator::verb::Auth::$auth;
            const WRITE: bool = $write;
            const ERRORS: &'static [$crate::error::ErrorCode] = &[$($crate::error::ErrorCode::$err),*];
            $(const $k: $kt = $kv;)*
            type Path = $p;
            type Input = $i;
            type Answer = $a;

            fn apply(
                $c: &$crate::claim::Coordinator,
                $pp: $p,
                $ip: $i,
                $caller: &$crate::coordinator::verb::Caller,
            ) -> Result<$a, $crate::claim::ClaimError> $body

            $(fn $f $args -> $ret $fb)*
        }
    };
}

pub(crate) use {answers, json_input, query_input, verb};

/// Whether a parameter or property is required, for schema builders.
pub fn required(yes: bool) -> Required {
    if yes { Required::True } else { Required::False }
}

impl Input for super::wire::NoBody {
    fn read(_body: &[u8]) -> Result<Self, ClaimError> {
        Ok(super::wire::NoBody {})
    }
}
