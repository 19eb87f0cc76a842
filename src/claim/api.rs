//! Kept so `crate::claim::api::CoordinatorApi` still names the trait: the verbs, their
//! wire types and both ends now live in [`crate::coordinator`] (one definition per verb,
//! [`crate::coordinator::verb`]).

pub use crate::coordinator::api::CoordinatorApi;
