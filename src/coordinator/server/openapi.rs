//! The OpenAPI document served at `/openapi.json`, built from the verb list
//! ([`for_each_verb`](crate::for_each_verb)) and the types of each verb's path, input and
//! answer (utoipa's `ToSchema` and `IntoParams`), so it cannot drift from the routes.
//!
//! The engine's own answer types (`MasterOutcome`, `WorkClaim`, ...) derive their schemas
//! where `crate::claim` defines them, under three conventions the document has always kept:
//! every field is always serialized, so an `Option` field is `required` and nullable
//! (`#[schema(required = true)]`); a `Millis` is an `int64` (`value_type = i64`: the derive
//! does not see through the alias); a count of minutes (`u32`) is described as a `u64`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, InfoBuilder, OpenApiBuilder, PathsBuilder, Ref, RefOr, Required,
    ResponseBuilder, ResponsesBuilder,
};

use crate::coordinator::verb::{Answer, Auth, Components, Input, Method, PathParams, Verb, errors};
use crate::error::ErrorCode;

/// What every error answer is, for the document's description.
const ERRORS_DOC: &str = "Master handoff, operator claim (SPEC-082) and work claims (seed 002). Every error answer, \
whatever made it, is the envelope {\"error\":{\"code\",\"message\",\"hint\"}} with a stable code: \
400 invalid_argument (a bad body, query or parameter), 401 unauthorized (a missing or wrong token), \
404 not_found (an unknown route, channel or claim) or target_not_registered/target_stale/target_ambiguous, \
405 invalid_argument (a wrong method; Allow lists the right ones), 409 a conflict (stale_master, not_master, \
claim_taken, version_conflict, ...), 413 invalid_argument (a body over 64 KiB), 429 rate_limited (one seat \
wrote faster than the per-seat rate; nothing was written; Retry-After says when to retry), 503 coordinator_unavailable \
(the store is busy or unreachable, too many verifications from one address, the request time limit, or the \
connection cap: retry later), 500 internal.";

/// The statuses any operation may answer with the error envelope before its verb runs,
/// whatever the verb: a wrong method, a request too slow, a body or head too large.
const EDGE_STATUSES: [u16; 4] = [405, 408, 413, 431];

/// The error statuses of `V`'s operation: the edge's ([`EDGE_STATUSES`]) and those of every
/// code the verb can answer ([`errors`]), in order.
fn error_statuses<V: Verb>() -> Vec<String> {
    let mut statuses: Vec<u16> = errors::<V>().into_iter().map(|c| super::handler::http_status(c).as_u16()).collect();
    statuses.extend(EDGE_STATUSES);
    statuses.sort_unstable();
    statuses.dedup();
    statuses.into_iter().map(|s| s.to_string()).collect()
}

pub(super) async fn openapi_doc() -> Response {
    (StatusCode::OK, axum::Json(openapi())).into_response()
}

/// `application/json` content of `schema`.
fn json_content(schema: RefOr<utoipa::openapi::schema::Schema>) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(schema)).build()
}

/// The error envelope's schema: `{"error": {"code", "message", "hint"}}`, every code listed.
fn error_schema() -> RefOr<utoipa::openapi::schema::Schema> {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    let inner = ObjectBuilder::new()
        .property("code", ObjectBuilder::new().schema_type(Type::String).enum_values(Some(codes)))
        .required("code")
        .property("message", ObjectBuilder::new().schema_type(Type::String))
        .required("message")
        .property(
            "hint",
            ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null])),
        );
    ObjectBuilder::new().property("error", inner).required("error").into()
}

/// `V`'s operation, its schemas registered in `components`.
fn operation<V: Verb>(components: &mut Components) -> PathItem {
    let mut op = OperationBuilder::new()
        .operation_id(Some(V::OPERATION))
        .summary(Some(V::SUMMARY.lines().map(str::trim).collect::<Vec<_>>().join(" ")))
        .parameters(Some(<V::Path as PathParams>::parameters()));
    match V::METHOD {
        Method::Get => op = op.parameters(Some(<V::Input as Input>::query_parameters())),
        Method::Post => {
            if let Some(schema) = <V::Input as Input>::body_schema(components) {
                let body = RequestBodyBuilder::new()
                    .required(Some(Required::True))
                    .content("application/json", json_content(schema))
                    .build();
                op = op.request_body(Some(body));
            }
        }
    }
    if V::WRITE {
        op = op.parameter(
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "the write's request id: a retry with the same id and request returns the first answer and \
                     acts once (kept 10 minutes)",
                ))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[A-Za-z0-9._:-]{1,128}$")))),
        );
    }
    if matches!(V::AUTH, Auth::Session | Auth::Seat | Auth::Admin) {
        op = op.security(SecurityRequirement::new("bearer", Vec::<String>::new()));
    }
    let ok = if V::CREATED { "201" } else { "200" };
    let mut responses = ResponsesBuilder::new().response(
        ok,
        ResponseBuilder::new()
            .description("ok")
            .content("application/json", json_content(V::Answer::schema(components))),
    );
    for status in error_statuses::<V>() {
        responses = responses.response(
            status,
            ResponseBuilder::new()
                .description("a writerctl error")
                .content("application/json", json_content(RefOr::Ref(Ref::from_schema_name("Error")))),
        );
    }
    let method = match V::METHOD {
        Method::Get => HttpMethod::Get,
        Method::Post => HttpMethod::Post,
    };
    PathItem::new(method, op.responses(responses.build()).build())
}

/// The routes that are not verbs (probes and metrics), as the document describes them.
fn fixed_paths() -> serde_json::Value {
    let boolean = json!({"type": "boolean"});
    let count = json!({"type": "integer", "minimum": 0});
    let error = json!({"description": "a writerctl error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    json!({
        "/livez": {"get": {"operationId": "livez", "responses": {"200": {"description": "the process serves (no store is asked)",
            "content": {"application/json": {"schema": {"type": "object", "properties": {"ok": boolean}, "required": ["ok"]}}}}}}},
        "/readyz": {"get": {"operationId": "readyz", "responses": {
            "200": {"description": "verbs can be served (the authoritative plane answers within 1 s); degraded: the audit plane is failing or behind",
                "content": {"application/json": {"schema": {"type": "object", "properties": {
                    "ready": boolean, "degraded": boolean, "queue_depth": count,
                    "oldest_queue_age_seconds": {"type": ["number", "null"], "minimum": 0},
                    "open_registration": boolean},
                    "required": ["ready", "degraded", "queue_depth", "oldest_queue_age_seconds", "open_registration"]}}}},
            "503": {"description": "not ready: the authoritative plane did not answer within 1 s",
                "content": {"application/json": {"schema": {"type": "object", "properties": {
                    "ready": boolean, "error": {"type": "object", "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "hint": {"type": ["string", "null"]}}, "required": ["code", "message"]}},
                    "required": ["ready", "error"]}}}}}}},
        "/healthz": {"get": {"operationId": "healthz", "responses": {
            "200": {"description": "both planes answer (Postgres included: fails during a Postgres outage; probes should use /livez and /readyz)"},
            "503": error}}},
        "/metrics": {"get": {"operationId": "metrics", "responses": {"200": {"description": "Prometheus text format",
            "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
    })
}

/// A struct with a `#[serde(flatten)]` field (`SweepAction`'s task address) is one JSON
/// object on the wire, but utoipa derives it as `allOf` of the flattened part and the rest.
/// Both say the same to a validator; the reference page (`http-api.md`) and a reader see
/// fields only on an object, so an `allOf` made only of inline objects becomes the one
/// object it describes: their properties, their required names in field order, the
/// struct's own description.
fn merge_flattened(schema: &mut RefOr<Schema>) {
    let RefOr::T(Schema::AllOf(all)) = schema else { return };
    let mut merged = ObjectBuilder::new().schema_type(Type::Object).description(all.description.clone());
    for item in &all.items {
        let RefOr::T(Schema::Object(part)) = item else { return };
        for (name, property) in &part.properties {
            merged = merged.property(name, property.clone());
        }
        for name in &part.required {
            merged = merged.required(name);
        }
    }
    *schema = merged.into();
}

/// The OpenAPI 3.1 document for `/v1` and the probes: every verb's route, parameters, body,
/// answer and error answers, from [`for_each_verb`](crate::for_each_verb).
pub fn openapi() -> serde_json::Value {
    let mut components = Components::new();
    let mut paths = PathsBuilder::new();
    macro_rules! add {
        ($v:ty) => {
            paths = paths.path(<$v as Verb>::PATH, operation::<$v>(&mut components))
        };
    }
    crate::for_each_verb!(add);
    components.values_mut().for_each(merge_flattened);
    components.insert("Error".into(), error_schema());
    let doc = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("writerctl coordinator")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(ERRORS_DOC)),
        )
        .paths(paths.build())
        .components(Some(
            ComponentsBuilder::new()
                .schemas_from_iter(components)
                .security_scheme(
                    "bearer",
                    SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
                )
                .build(),
        ))
        .build();
    let mut doc = serde_json::to_value(&doc).unwrap_or_default();
    if let (Some(paths), serde_json::Value::Object(fixed)) = (doc["paths"].as_object_mut(), fixed_paths()) {
        paths.extend(fixed);
    }
    doc
}
