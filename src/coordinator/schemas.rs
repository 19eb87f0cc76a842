//! OpenAPI schemas of the engine's own types that the HTTP API answers with unchanged
//! (`MasterOutcome`, `ClaimRow`, ...). They live in `crate::claim`, which stays free of
//! HTTP concerns, so their schemas are declared here, field by field as they serialize; a
//! test serializes a value of each and checks it against its schema.

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// A field's type.
#[derive(Clone, Copy)]
enum F {
    Str,
    Int,
    Count,
    Bool,
    Any,
    Status,
    Ref(&'static str),
    List(&'static str),
    StrList,
}

/// The schema of one field; `nullable` for an `Option`.
fn field(f: F, nullable: bool) -> RefOr<Schema> {
    let scalar = |t: Type| {
        if nullable {
            ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::from_iter([t, Type::Null]))
        } else {
            ObjectBuilder::new().schema_type(t)
        }
    };
    let schema: RefOr<Schema> = match f {
        F::Str => scalar(Type::String).into(),
        F::Int => scalar(Type::Integer).format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))).into(),
        F::Count => {
            scalar(Type::Integer).format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))).minimum(Some(0)).into()
        }
        F::Bool => scalar(Type::Boolean).into(),
        F::Any => ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::AnyValue).into(),
        F::Status => scalar(Type::String).enum_values(Some(["claimed", "released", "done"])).into(),
        F::Ref(name) => RefOr::Ref(Ref::from_schema_name(name)),
        F::List(name) => ArrayBuilder::new().items(RefOr::Ref(Ref::from_schema_name(name))).into(),
        F::StrList => ArrayBuilder::new().items(ObjectBuilder::new().schema_type(Type::String)).into(),
    };
    match (f, nullable) {
        (F::Ref(_), true) => OneOfBuilder::new().item(ObjectBuilder::new().schema_type(Type::Null)).item(schema).into(),
        _ => schema,
    }
}

/// An object of `fields` (name, type, nullable); every field is always serialized, so
/// every one is required (a nullable one may be null).
fn object(fields: &[(&str, F, bool)]) -> RefOr<Schema> {
    let mut b = ObjectBuilder::new();
    for (name, f, nullable) in fields {
        b = b.property(*name, field(*f, *nullable)).required(*name);
    }
    b.into()
}

/// `ToSchema` for an engine type: its fields, and the named schemas it refers to.
macro_rules! engine_schema {
    ($t:ty = $name:literal [$($field:literal: $f:expr $(, $null:ident)?);* $(;)?] refers [$($dep:ty),*]) => {
        impl PartialSchema for $t {
            fn schema() -> RefOr<Schema> {
                object(&[$(($field, $f, engine_schema!(@null $($null)?))),*])
            }
        }
        impl ToSchema for $t {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
            fn schemas(out: &mut Vec<(String, RefOr<Schema>)>) {
                let _ = &out;
                $(
                    out.push((<$dep as ToSchema>::name().into_owned(), <$dep as PartialSchema>::schema()));
                    <$dep as ToSchema>::schemas(out);
                )*
            }
        }
    };
    (@null) => { false };
    (@null null) => { true };
}

use crate::claim::engine::MasterChange;
use crate::claim::identities::Removed;
use crate::claim::masters::MasterOutcome;
use crate::claim::model::{AuditEntry, Event, MasterRef};
use crate::claim::work_claims::{
    Channel, ClaimOutcome, ClaimRow, ClaimStep, FocusLease, FocusOutcome, StewardItem, StewardReport, SweepAction,
    SweepReport,
};

engine_schema!(MasterRef = "MasterRef" ["identity": F::Str; "session_id": F::Str] refers []);
engine_schema!(MasterOutcome = "MasterOutcome" [
    "previous_master": F::Ref("MasterRef"), null; "new_master": F::Ref("MasterRef"); "preempted": F::List("MasterRef");
    "epoch": F::Count; "changed": F::Bool; "dry_run": F::Bool
] refers [MasterRef]);
engine_schema!(Removed = "Removed" [
    "identity": F::Str; "sessions": F::StrList; "was_master": F::Bool; "epoch": F::Count
] refers []);
engine_schema!(Event = "Event" [
    "cursor": F::Count; "at": F::Int; "recipient_session": F::Str, null; "kind": F::Str; "payload": F::Any
] refers []);
engine_schema!(AuditEntry = "AuditEntry" [
    "at": F::Int; "project": F::Str; "verb": F::Str; "actor": F::Str; "target": F::Str, null; "result": F::Str;
    "epoch": F::Count, null; "detail": F::Any; "reason": F::Str, null
] refers []);
engine_schema!(MasterChange = "MasterChange" [
    "at": F::Int; "epoch": F::Count; "from": F::Ref("MasterRef"), null; "to": F::Ref("MasterRef"), null;
    "verb": F::Str; "actor": F::Str, null; "reason": F::Str, null
] refers [MasterRef]);
engine_schema!(Channel = "Channel" [
    "project": F::Str; "channel": F::Str; "steward": F::Str; "sla_minutes": F::Count; "ttl_floor_minutes": F::Count;
    "created_at": F::Int
] refers []);
engine_schema!(ClaimRow = "ClaimRow" [
    "project": F::Str; "channel": F::Str; "task": F::Str; "owner": F::Str, null; "status": F::Status;
    "version": F::Count; "deputy": F::Str, null; "ttl_minutes": F::Count, null; "next_step": F::Str, null;
    "handoff_from": F::Str, null; "last_owner_touch": F::Int, null; "owner_since": F::Int, null;
    "claimed_at": F::Int, null; "updated_at": F::Int
] refers []);
engine_schema!(ClaimStep = "ClaimStep" [
    "at": F::Int; "actor": F::Str; "action": F::Str; "claim": F::Ref("ClaimRow")
] refers [ClaimRow]);
engine_schema!(ClaimOutcome = "ClaimOutcome" [
    "claim": F::Ref("ClaimRow"); "ttl_raised_from": F::Count, null
] refers [ClaimRow]);
engine_schema!(SweepAction = "SweepAction" [
    "project": F::Str; "channel": F::Str; "task": F::Str; "from": F::Str; "to": F::Str, null; "version": F::Count;
    "due_at": F::Int
] refers []);
engine_schema!(SweepReport = "SweepReport" [
    "as_of": F::Int; "dry_run": F::Bool; "released": F::List("SweepAction"); "deferred_by_focus": F::Count;
    "conflicts": F::Count; "paused": F::Ref("Paused"), null; "held_back": F::List("HeldBack")
] refers [SweepAction, Paused, HeldBack]);
engine_schema!(FocusLease = "FocusLease" [
    "project": F::Str; "seat": F::Str; "started_at": F::Int; "until": F::Int; "ended_at": F::Int, null
] refers []);
engine_schema!(FocusOutcome = "FocusOutcome" [
    "lease": F::Ref("FocusLease"); "capped_from": F::Count, null
] refers [FocusLease]);
engine_schema!(StewardItem = "StewardItem" ["claim": F::Ref("ClaimRow"); "age_minutes": F::Int] refers [ClaimRow]);
engine_schema!(StewardReport = "StewardReport" [
    "channel": F::Ref("Channel"); "as_of": F::Int; "overdue": F::List("StewardItem"); "paused": F::Ref("Paused"), null
] refers [Channel, StewardItem, Paused]);

// Issue 30: a project's maintenance pause.
use crate::claim::work_claims::{HeldBack, PauseOutcome, PauseState, Paused, ResumeOutcome};

engine_schema!(Paused = "Paused" ["reason": F::Str; "since": F::Int; "until": F::Int, null] refers []);
engine_schema!(HeldBack = "HeldBack" [
    "channel": F::Str; "task": F::Str; "owner": F::Str; "to": F::Str, null; "due_at": F::Int; "why": F::Str
] refers []);
engine_schema!(PauseOutcome = "PauseOutcome" [
    "project": F::Str; "paused": F::Ref("Paused"); "replaced": F::Ref("Paused"), null
] refers [Paused]);
engine_schema!(ResumeOutcome = "ResumeOutcome" [
    "project": F::Str; "was_paused": F::Bool; "previous": F::Ref("Paused"), null; "resumed_at": F::Int
] refers [Paused]);
engine_schema!(PauseState = "PauseState" ["project": F::Str; "paused": F::Ref("Paused"), null] refers [Paused]);
