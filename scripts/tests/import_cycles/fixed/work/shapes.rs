pub enum Status {
    Open,
}
