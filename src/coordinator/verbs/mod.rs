//! Every coordinator verb, one [`Verb`](super::verb::Verb) each, by area; the route table
//! is [`for_each_verb`](crate::for_each_verb).

pub mod admin;
pub mod master;
pub mod work;
