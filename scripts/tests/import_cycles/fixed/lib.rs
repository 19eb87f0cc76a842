pub mod error;
pub mod work;
