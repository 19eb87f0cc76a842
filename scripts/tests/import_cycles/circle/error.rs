use super::work::Status;

pub enum Error {
    Busy(Status),
}
