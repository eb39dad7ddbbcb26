//! The error of parsing a setting's name as the command line and the
//! configuration file write it (`stateless`, `udp`, `shared`, `lifo`):
//! [`Mode`](crate::proxy::Mode), [`Transport`](crate::proxy::Transport),
//! [`WorkerModel`](crate::transport::WorkerModel) and
//! [`WakeOrder`](crate::transport::WakeOrder) implement `FromStr` with it.

/// A name that is none of a setting's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {name:?} ({choices})")]
pub struct UnknownName {
    /// What was being named (`mode`, `transport`, `worker model`).
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// The names accepted, comma-separated.
    pub choices: &'static str,
}

impl UnknownName {
    pub(crate) fn new(what: &'static str, name: &str, choices: &'static str) -> UnknownName {
        UnknownName {
            what,
            name: name.to_string(),
            choices,
        }
    }
}
