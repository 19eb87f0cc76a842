//! One module per subcommand: flags, output, and calls into the engines. No protocol work
//! happens here.

pub mod acquire;
pub mod output;
pub mod recover;
pub mod release;
pub mod seal;
pub mod session;
pub mod status;
pub mod takeover;
pub mod verify;
