use super::work::shapes::Status;

pub enum Error {
    Busy(Status),
}
