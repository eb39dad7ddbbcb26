//! Request methods.

use std::fmt;

/// A request method. Methods are case-sensitive (RFC 3261 §7.1): `invite`
/// is an unknown method, not INVITE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// INVITE
    Invite,
    /// ACK
    Ack,
    /// BYE
    Bye,
    /// CANCEL
    Cancel,
    /// OPTIONS
    Options,
    /// REGISTER
    Register,
    /// PRACK
    Prack,
    /// SUBSCRIBE
    Subscribe,
    /// NOTIFY
    Notify,
    /// PUBLISH
    Publish,
    /// INFO
    Info,
    /// REFER
    Refer,
    /// MESSAGE
    Message,
    /// UPDATE
    Update,
    /// Any other token.
    Other,
}

impl Method {
    /// Classifies a method token.
    pub fn from_bytes(m: &[u8]) -> Method {
        match m {
            b"INVITE" => Method::Invite,
            b"ACK" => Method::Ack,
            b"BYE" => Method::Bye,
            b"CANCEL" => Method::Cancel,
            b"OPTIONS" => Method::Options,
            b"REGISTER" => Method::Register,
            b"PRACK" => Method::Prack,
            b"SUBSCRIBE" => Method::Subscribe,
            b"NOTIFY" => Method::Notify,
            b"PUBLISH" => Method::Publish,
            b"INFO" => Method::Info,
            b"REFER" => Method::Refer,
            b"MESSAGE" => Method::Message,
            b"UPDATE" => Method::Update,
            _ => Method::Other,
        }
    }

    /// The method's name (`"OTHER"` for unknown methods).
    pub fn as_str(&self) -> &'static str {
        match self {
            Method::Invite => "INVITE",
            Method::Ack => "ACK",
            Method::Bye => "BYE",
            Method::Cancel => "CANCEL",
            Method::Options => "OPTIONS",
            Method::Register => "REGISTER",
            Method::Prack => "PRACK",
            Method::Subscribe => "SUBSCRIBE",
            Method::Notify => "NOTIFY",
            Method::Publish => "PUBLISH",
            Method::Info => "INFO",
            Method::Refer => "REFER",
            Method::Message => "MESSAGE",
            Method::Update => "UPDATE",
            Method::Other => "OTHER",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
