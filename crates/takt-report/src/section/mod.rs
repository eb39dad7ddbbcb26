//! The report's sections, one module each; each renders from its stage's
//! result document only.

pub(crate) mod agents;
pub(crate) mod beyond;
pub(crate) mod capacity;
pub(crate) mod machine;
pub(crate) mod remote;
pub(crate) mod robustness;
pub(crate) mod sip;
pub(crate) mod sme;
pub(crate) mod sweep;
