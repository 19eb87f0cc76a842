//! The coordinator over HTTP: `writerctl coordinator serve` ([`server`]) and the client the
//! commands use with `--coordinator http(s)://...` ([`client`]). Both speak [`wire`].

pub mod budget;
pub mod client;
pub mod limits;
pub mod server;
mod transport;
pub mod wire;
