//! How messages become bytes: the [`Codec`] trait, [`Postcard`] (the
//! default), and [`Remote`], which names a message type on the wire.
//!
//! Every message crosses with its [`Remote::NAME`] and [`Remote::VERSION`]
//! in the envelope before its payload. A receiver decodes a payload only
//! when both match the type it expects there; anything else is rejected
//! and counted (`RemoteStats::type_mismatch`), never misread.
//! Bump `VERSION` whenever the encoding of a type changes (postcard is not
//! self-describing: a renamed field is harmless, a reordered one is not).

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};
use serde::de::DeserializeOwned;
use serde::Serialize;
use takt_agents::Message;

use crate::envelope::{Envelope, Head};
use crate::RemoteError;

/// Turns values into bytes and back. Implementations are stateless.
pub trait Codec: 'static {
    /// Appends the encoding of `m` to `out` (on error, `out` may hold a
    /// partial encoding: the caller discards it).
    fn encode<M: Serialize>(m: &M, out: &mut BytesMut) -> Result<(), RemoteError>;
    /// Decodes a whole payload.
    fn decode<M: DeserializeOwned>(bytes: &[u8]) -> Result<M, RemoteError>;
}

/// [postcard](https://docs.rs/postcard): compact, varint-based, not
/// self-describing (hence the version in the envelope).
#[derive(Clone, Copy, Debug, Default)]
pub struct Postcard;

/// A postcard output that appends to a `BytesMut` in slices.
struct Append<'a>(&'a mut BytesMut);

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(data);
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.extend_from_slice(&[data]);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

impl Codec for Postcard {
    fn encode<M: Serialize>(m: &M, out: &mut BytesMut) -> Result<(), RemoteError> {
        postcard::serialize_with_flavor(m, Append(out))
            .map_err(|e| RemoteError::Codec(e.to_string()))
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

/// Bytes the per-thread encoding arena grows by: small messages share one
/// allocation, which is freed when the last of them has been written out.
const ARENA: usize = 64 * 1024;
/// Below this much spare room the arena takes a fresh block first.
const HEADROOM: usize = 512;

thread_local! {
    /// The calling thread's encoding arena (always empty between calls:
    /// each encoding is split off and frozen).
    static ARENA_BUF: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// Encodes `m` with its type's codec behind the envelope `head`, into the
/// calling thread's arena: no allocation per message while the arena has
/// room.
pub(crate) fn encode<M: Remote>(head: &Head, m: &M) -> Result<Bytes, RemoteError> {
    in_arena(|buf| {
        buf.extend_from_slice(head.as_bytes());
        M::Codec::encode(m, buf)
    })
}

/// Writes with `f` into the calling thread's arena and splits off what it
/// wrote (on error, the partial write is dropped).
pub(crate) fn in_arena(
    f: impl FnOnce(&mut BytesMut) -> Result<(), RemoteError>,
) -> Result<Bytes, RemoteError> {
    ARENA_BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.capacity() < HEADROOM {
                buf.reserve(ARENA);
            }
            let r = f(&mut buf);
            let bytes = buf.split().freeze();
            r.map(|()| bytes)
        }
        // A codec that sends while encoding: give it its own buffer.
        Err(_) => {
            let mut buf = BytesMut::new();
            f(&mut buf)?;
            Ok(buf.freeze())
        }
    })
}

/// Decodes the payload of `env` after checking its type name and version.
pub(crate) fn decode<M: Remote>(env: &Envelope<'_>) -> Result<M, RemoteError> {
    if !env.is(M::NAME, M::VERSION) {
        return Err(RemoteError::TypeMismatch {
            expected: format!("{} v{}", M::NAME, M::VERSION),
            got: env.describe(),
        });
    }
    M::Codec::decode(env.body)
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
    // The same encoding as `Vec<u8>` (a length, then the bytes), so either
    // side may use either; `Bytes` is copied as one slice where serde
    // visits a `Vec<u8>` byte by byte.
    bytes::Bytes => "bytes",
}
