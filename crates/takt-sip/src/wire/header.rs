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
        // the spellings of RFC 3261's examples (what nearly every UA
        // sends): an exact comparison, before the case-insensitive lookup
        match n {
            b"Via" => return Via,
            b"From" => return From,
            b"To" => return To,
            b"Call-ID" => return CallId,
            b"CSeq" => return CSeq,
            b"Contact" => return Contact,
            b"Max-Forwards" => return MaxForwards,
            b"Content-Length" => return ContentLength,
            b"Content-Type" => return ContentType,
            b"Route" => return Route,
            b"Record-Route" => return RecordRoute,
            b"Subject" => return Subject,
            _ => {}
        }
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
        let eq = |name: &[u8]| name.eq_ignore_ascii_case(n);
        match (n.len(), n.first().map(u8::to_ascii_lowercase)) {
            (3, Some(b'v')) if eq(b"via") => Via,
            (4, Some(b'f')) if eq(b"from") => From,
            (2, Some(b't')) if eq(b"to") => To,
            (7, Some(b'c')) if eq(b"call-id") => CallId,
            (7, Some(b'c')) if eq(b"contact") => Contact,
            (4, Some(b'c')) if eq(b"cseq") => CSeq,
            (12, Some(b'm')) if eq(b"max-forwards") => MaxForwards,
            (14, Some(b'c')) if eq(b"content-length") => ContentLength,
            (12, Some(b'c')) if eq(b"content-type") => ContentType,
            (5, Some(b'r')) if eq(b"route") => Route,
            (12, Some(b'r')) if eq(b"record-route") => RecordRoute,
            (7, Some(b's')) if eq(b"subject") => Subject,
            (9, Some(b's')) if eq(b"supported") => Supported,
            (16, Some(b'c')) if eq(b"content-encoding") => ContentEncoding,
            (7, Some(b'e')) if eq(b"expires") => Expires,
            (4, Some(b'd')) if eq(b"date") => Date,
            (7, Some(b'r')) if eq(b"require") => Require,
            (13, Some(b'p')) if eq(b"proxy-require") => ProxyRequire,
            (11, Some(b'r')) if eq(b"retry-after") => RetryAfter,
            (5, Some(b'e')) if eq(b"event") => Event,
            (8, Some(b'r')) if eq(b"refer-to") => ReferTo,
            (12, Some(b'a')) if eq(b"allow-events") => AllowEvents,
            _ => Other,
        }
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
