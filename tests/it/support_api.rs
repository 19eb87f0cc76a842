//! The master requests the tests that drive the engine directly build again and again: a
//! registration with no proof, a handoff by a registered controller, an operator's claim.
//! Each is the verb's own request type (`claim::masters`), filled the one way these tests
//! need; a test that needs another field sets it with `..` on top.

use writerctl::claim::engine::Registered;
use writerctl::claim::masters::{ControllerKey, HandoffRequest, MasterClaimRequest, RegisterRequest};

/// `key` registered without proof (a coordinator with open registration).
pub(crate) fn unproven(key: &ControllerKey) -> RegisterRequest {
    RegisterRequest::of(key, None, None)
}

/// `from` (by its session id) hands the master slot to `to`, decided at `epoch`.
pub(crate) fn handoff_by(from: &Registered, to: &str, epoch: u64) -> HandoffRequest {
    HandoffRequest {
        session_id: from.controller.session_id.clone(),
        to: to.into(),
        expect_epoch: epoch,
        ..HandoffRequest::default()
    }
}

/// Operator `operator`, with `password`, claims the master slot for `to`, decided at `epoch`.
pub(crate) fn claim_by(operator: &str, password: &str, to: &str, epoch: u64) -> MasterClaimRequest {
    MasterClaimRequest {
        to: to.into(),
        expect_epoch: epoch,
        operator: operator.into(),
        password: password.into(),
        ..MasterClaimRequest::default()
    }
}
