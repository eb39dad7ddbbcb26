//! Header names: the ones the proxy reads, with their compact forms,
//! matched case-insensitively.

use std::fmt;

/// A header field name. Names the proxy does not interpret are `Other`;
/// their values are carried through untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HeaderName {
    /// `Via` / `v`
    Via,
    /// `From` / `f`
    From,
    /// `To` / `t`
    To,
    /// `Call-ID` / `i`
    CallId,
    /// `CSeq`
    CSeq,
    /// `Max-Forwards`
    MaxForwards,
    /// `Content-Length` / `l`
    ContentLength,
    /// `Content-Type` / `c`
    ContentType,
    /// `Contact` / `m`
    Contact,
    /// `Route`
    Route,
    /// `Record-Route`
    RecordRoute,
    /// `Subject` / `s`
    Subject,
    /// `Supported` / `k`
    Supported,
    /// `Content-Encoding` / `e`
    ContentEncoding,
    /// `Expires`
    Expires,
    /// `Date`
    Date,
    /// `Require`
    Require,
    /// `Proxy-Require`
    ProxyRequire,
    /// `Retry-After`
    RetryAfter,
    /// `Event` / `o` (RFC 6665)
    Event,
    /// `Refer-To` / `r` (RFC 3515)
    ReferTo,
    /// `Allow-Events` / `u` (RFC 6665)
    AllowEvents,
    /// Any other name.
    Other,
}

impl HeaderName {
    /// Looks a name up, ignoring ASCII case; compact forms included.
    pub fn from_bytes(n: &[u8]) -> HeaderName {
        use HeaderName::*;
        if n.len() == 1 {
            return match n[0].to_ascii_lowercase() {
                b'v' => Via,
                b'f' => From,
                b't' => To,
                b'i' => CallId,
                b'l' => ContentLength,
                b'c' => ContentType,
                b'm' => Contact,
                b's' => Subject,
                b'k' => Supported,
                b'e' => ContentEncoding,
                b'o' => Event,
                b'r' => ReferTo,
                b'u' => AllowEvents,
                _ => Other,
            };
        }
        const LONG: &[(&[u8], HeaderName)] = &[
            (b"via", Via),
            (b"from", From),
            (b"to", To),
            (b"call-id", CallId),
            (b"cseq", CSeq),
            (b"max-forwards", MaxForwards),
            (b"content-length", ContentLength),
            (b"content-type", ContentType),
            (b"contact", Contact),
            (b"route", Route),
            (b"record-route", RecordRoute),
            (b"subject", Subject),
            (b"supported", Supported),
            (b"content-encoding", ContentEncoding),
            (b"expires", Expires),
            (b"date", Date),
            (b"require", Require),
            (b"proxy-require", ProxyRequire),
            (b"retry-after", RetryAfter),
            (b"event", Event),
            (b"refer-to", ReferTo),
            (b"allow-events", AllowEvents),
        ];
        for (name, h) in LONG {
            if name.len() == n.len() && name.eq_ignore_ascii_case(n) {
                return *h;
            }
        }
        Other
    }

    /// The canonical long name (`"Other"` for unknown names).
    pub fn as_str(&self) -> &'static str {
        use HeaderName::*;
        match self {
            Via => "Via",
            From => "From",
            To => "To",
            CallId => "Call-ID",
            CSeq => "CSeq",
            MaxForwards => "Max-Forwards",
            ContentLength => "Content-Length",
            ContentType => "Content-Type",
            Contact => "Contact",
            Route => "Route",
            RecordRoute => "Record-Route",
            Subject => "Subject",
            Supported => "Supported",
            ContentEncoding => "Content-Encoding",
            Expires => "Expires",
            Date => "Date",
            Require => "Require",
            ProxyRequire => "Proxy-Require",
            RetryAfter => "Retry-After",
            Event => "Event",
            ReferTo => "Refer-To",
            AllowEvents => "Allow-Events",
            Other => "Other",
        }
    }

    /// Headers that may appear at most once in a message.
    pub fn is_single(&self) -> bool {
        use HeaderName::*;
        matches!(
            self,
            From | To | CallId | CSeq | MaxForwards | ContentLength | ContentType | Expires | Date
        )
    }
}

impl fmt::Display for HeaderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_case_insensitive_and_compact() {
        assert_eq!(
            HeaderName::from_bytes(b"MaX-fOrWaRdS"),
            HeaderName::MaxForwards
        );
        assert_eq!(HeaderName::from_bytes(b"v"), HeaderName::Via);
        assert_eq!(HeaderName::from_bytes(b"V"), HeaderName::Via);
        assert_eq!(HeaderName::from_bytes(b"l"), HeaderName::ContentLength);
        assert_eq!(HeaderName::from_bytes(b"C%6Fntact"), HeaderName::Other);
        assert_eq!(HeaderName::from_bytes(b"X-Foo"), HeaderName::Other);
    }
}
