//! The coordinator over HTTP: `writerctl coordinator serve` ([`server`]) and the client the
//! commands use with `--coordinator http(s)://...` ([`client`]). Both speak [`wire`], and
//! both are derived from one definition per verb ([`verb`], the verbs in [`verbs`]);
//! commands run a verb through [`api::Endpoint`], in-process or remote.

pub mod api;
pub mod budget;
pub mod client;
pub mod diagnose;
pub mod limits;
pub mod memory;
pub mod server;
mod transport;
pub mod verb;
pub mod verbs;
pub mod wire;
