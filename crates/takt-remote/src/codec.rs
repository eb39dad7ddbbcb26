//! How messages become bytes: the [`Codec`] trait, [`Postcard`] (the
//! default), and [`Remote`], which names a message type on the wire.
//!
//! Every message crosses with two headers beside its payload: its
//! [`Remote::NAME`] and [`Remote::VERSION`]. A receiver decodes a payload
//! only when both match the type it expects there; anything else is
//! rejected and counted (`RemoteStats::type_mismatch`), never misread.
//! Bump `VERSION` whenever the encoding of a type changes (postcard is not
//! self-describing: a renamed field is harmless, a reordered one is not).

use serde::de::DeserializeOwned;
use serde::Serialize;
use takt_agents::Message;

use crate::RemoteError;

/// Turns values into bytes and back. Implementations are stateless.
pub trait Codec: 'static {
    /// Appends the encoding of `m` to `out`.
    fn encode<M: Serialize>(m: &M, out: &mut Vec<u8>) -> Result<(), RemoteError>;
    /// Decodes a whole payload.
    fn decode<M: DeserializeOwned>(bytes: &[u8]) -> Result<M, RemoteError>;
}

/// [postcard](https://docs.rs/postcard): compact, varint-based, not
/// self-describing (hence the version header).
#[derive(Clone, Copy, Debug, Default)]
pub struct Postcard;

impl Codec for Postcard {
    fn encode<M: Serialize>(m: &M, out: &mut Vec<u8>) -> Result<(), RemoteError> {
        let bytes = postcard::to_stdvec(m).map_err(|e| RemoteError::Codec(e.to_string()))?;
        out.extend_from_slice(&bytes);
        Ok(())
    }

    fn decode<M: DeserializeOwned>(bytes: &[u8]) -> Result<M, RemoteError> {
        postcard::from_bytes(bytes).map_err(|e| RemoteError::Codec(e.to_string()))
    }
}

/// A message type that may cross process boundaries.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// #[derive(Clone, Serialize, Deserialize)]
/// struct Quote { symbol: String, cents: u64 }
/// impl takt_remote::Remote for Quote {
///     const NAME: &'static str = "example.Quote";
///     const VERSION: u32 = 1;
///     type Codec = takt_remote::Postcard;
/// }
/// ```
pub trait Remote: Message + Serialize + DeserializeOwned {
    /// The name on the wire: unique per message type across the cluster
    /// (it need not be the Rust path, which changes with refactoring).
    const NAME: &'static str;
    /// The schema version; a receiver with another version rejects it.
    const VERSION: u32;
    /// How values are encoded.
    type Codec: Codec;
}

/// Encodes `m` with its type's codec.
pub(crate) fn encode<M: Remote>(m: &M) -> Result<Vec<u8>, RemoteError> {
    let mut out = Vec::new();
    M::Codec::encode(m, &mut out)?;
    Ok(out)
}

/// Decodes a payload after checking its name and version headers.
pub(crate) fn decode<M: Remote>(meta: &crate::Meta, bytes: &[u8]) -> Result<M, RemoteError> {
    if meta.type_name != M::NAME || meta.version != M::VERSION {
        return Err(RemoteError::TypeMismatch {
            expected: format!("{} v{}", M::NAME, M::VERSION),
            got: format!("{} v{}", meta.type_name, meta.version),
        });
    }
    M::Codec::decode(bytes)
}

macro_rules! remote_builtin {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl Remote for $t {
            const NAME: &'static str = $name;
            const VERSION: u32 = 1;
            type Codec = Postcard;
        }
    )*};
}

remote_builtin! {
    () => "unit", bool => "bool", u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64",
    i32 => "i32", i64 => "i64", f64 => "f64", String => "string", Vec<u8> => "bytes",
}
