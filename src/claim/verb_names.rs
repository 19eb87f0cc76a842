//! The name of every coordinator verb as the audit log, the metrics and the logs show it
//! (`master.claim`): one constant each, written by the engine on its audit rows and taken by
//! the verb's definition in `src/coordinator/verbs/` as its `Verb::NAME`, so the two cannot
//! drift apart.

/// `audit.export`.
pub const AUDIT_EXPORT: &str = "audit.export";
/// `audit.read`.
pub const AUDIT_READ: &str = "audit.read";
/// `channel.create`.
pub const CHANNEL_CREATE: &str = "channel.create";
/// `channel.show`.
pub const CHANNEL_SHOW: &str = "channel.show";
/// `claim.history`.
pub const CLAIM_HISTORY: &str = "claim.history";
/// `claim.list`.
pub const CLAIM_LIST: &str = "claim.list";
/// `claim.release`.
pub const CLAIM_RELEASE: &str = "claim.release";
/// `claim.show`.
pub const CLAIM_SHOW: &str = "claim.show";
/// `claim.sweep`.
pub const CLAIM_SWEEP: &str = "claim.sweep";
/// `claim.take`.
pub const CLAIM_TAKE: &str = "claim.take";
/// `claim.touch`.
pub const CLAIM_TOUCH: &str = "claim.touch";
/// `focus.end`.
pub const FOCUS_END: &str = "focus.end";
/// `focus.show`.
pub const FOCUS_SHOW: &str = "focus.show";
/// `focus.start`.
pub const FOCUS_START: &str = "focus.start";
/// `identity.add`.
pub const IDENTITY_ADD: &str = "identity.add";
/// `identity.list`.
pub const IDENTITY_LIST: &str = "identity.list";
/// `identity.remove`.
pub const IDENTITY_REMOVE: &str = "identity.remove";
/// `identity.rotate`.
pub const IDENTITY_ROTATE: &str = "identity.rotate";
/// `inbox.read`.
pub const INBOX_READ: &str = "inbox.read";
/// `master.claim`.
pub const MASTER_CLAIM: &str = "master.claim";
/// `master.handoff`.
pub const MASTER_HANDOFF: &str = "master.handoff";
/// `master.history`.
pub const MASTER_HISTORY: &str = "master.history";
/// `master.status`.
pub const MASTER_STATUS: &str = "master.status";
/// `master.target`.
pub const MASTER_TARGET: &str = "master.target";
/// `master.watch`.
pub const MASTER_WATCH: &str = "master.watch";
/// `operator.add`.
pub const OPERATOR_ADD: &str = "operator.add";
/// `project.pause`.
pub const PROJECT_PAUSE: &str = "project.pause";
/// `project.pause_state`.
pub const PROJECT_PAUSE_STATE: &str = "project.pause_state";
/// `project.resume`.
pub const PROJECT_RESUME: &str = "project.resume";
/// `session.deregister`.
pub const SESSION_DEREGISTER: &str = "session.deregister";
/// `session.heartbeat`.
pub const SESSION_HEARTBEAT: &str = "session.heartbeat";
/// `session.register`.
pub const SESSION_REGISTER: &str = "session.register";
/// `steward.report`.
pub const STEWARD_REPORT: &str = "steward.report";
