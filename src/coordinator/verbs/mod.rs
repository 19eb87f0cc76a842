//! Every coordinator verb, one [`Verb`](super::verb::Verb) each, by area; the route table
//! is [`for_each_verb`](crate::for_each_verb).

pub mod admin;
pub mod history;
pub mod master;
pub mod pause;
pub mod work;

/// Calls `$m!(Verb)` for every verb, in the order of the route table: the one list the
/// server's routes, the OpenAPI document and the tests walk.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_verb {
    ($m:ident) => {
        $m!($crate::coordinator::verbs::master::Register);
        $m!($crate::coordinator::verbs::master::Heartbeat);
        $m!($crate::coordinator::verbs::master::Deregister);
        $m!($crate::coordinator::verbs::master::Status);
        $m!($crate::coordinator::verbs::master::Target);
        $m!($crate::coordinator::verbs::master::Handoff);
        $m!($crate::coordinator::verbs::master::MasterClaim);
        $m!($crate::coordinator::verbs::admin::Inbox);
        $m!($crate::coordinator::verbs::admin::AddIdentity);
        $m!($crate::coordinator::verbs::admin::ListIdentities);
        $m!($crate::coordinator::verbs::admin::RotateIdentity);
        $m!($crate::coordinator::verbs::admin::RemoveIdentity);
        $m!($crate::coordinator::verbs::work::CreateChannel);
        $m!($crate::coordinator::verbs::work::ShowChannel);
        $m!($crate::coordinator::verbs::work::ListClaims);
        $m!($crate::coordinator::verbs::work::ShowClaim);
        $m!($crate::coordinator::verbs::work::ClaimHistory);
        $m!($crate::coordinator::verbs::work::TakeClaim);
        $m!($crate::coordinator::verbs::work::TouchClaim);
        $m!($crate::coordinator::verbs::work::ReleaseClaim);
        $m!($crate::coordinator::verbs::work::Steward);
        $m!($crate::coordinator::verbs::work::Sweep);
        $m!($crate::coordinator::verbs::work::ShowFocus);
        $m!($crate::coordinator::verbs::work::StartFocus);
        $m!($crate::coordinator::verbs::work::EndFocus);
        $m!($crate::coordinator::verbs::master::AddOperator);
        $m!($crate::coordinator::verbs::admin::Audit);
        $m!($crate::coordinator::verbs::history::MasterHistory);
        $m!($crate::coordinator::verbs::history::AuditExport);
        $m!($crate::coordinator::verbs::pause::Pause);
        $m!($crate::coordinator::verbs::pause::Resume);
        $m!($crate::coordinator::verbs::pause::ShowPause);
        $m!($crate::coordinator::verbs::master::Watch);
    };
}
