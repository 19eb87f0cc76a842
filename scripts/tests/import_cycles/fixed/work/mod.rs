use super::error::Error;

pub(crate) mod shapes;

pub use shapes::Status;

pub fn take(status: Status) -> Result<(), Error> {
    Err(Error::Busy(status))
}
