//! The report's sections, one module each; each renders from its stage's
//! result document only.

pub(crate) mod agents;
pub(crate) mod beyond;
pub(crate) mod machine;
pub(crate) mod sip;
pub(crate) mod sme;
