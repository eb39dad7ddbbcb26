//! The parser's errors: one small enum, one variant per rule broken.

use super::HeaderName;

/// Why a message did not parse. Each variant names the rule that failed;
/// `line` numbers count from 1 for the start line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing but line breaks.
    #[error("empty message")]
    Empty,
    /// The message is larger than the configured limit.
    #[error("message of {size} bytes exceeds the limit of {limit}")]
    TooLarge {
        /// Bytes seen.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The header section is not closed by an empty line.
    #[error("header section not terminated by an empty line")]
    Unterminated,
    /// A line ends in LF without CR, or holds a lone CR.
    #[error("line {line}: line break is not CRLF")]
    LineBreak {
        /// The line.
        line: u16,
    },
    /// A control character (%x00-1F but HTAB, or DEL) in the start line
    /// or a header line, outside a quoted-pair; any header, parsed or not.
    #[error("line {line}: control character 0x{byte:02X} (only HTAB is allowed)")]
    Control {
        /// The line.
        line: u16,
        /// The byte.
        byte: u8,
    },
    /// The request line is not `Method SP Request-URI SP SIP-Version`.
    #[error("request line: {0}")]
    RequestLine(LineError),
    /// The status line is not `SIP-Version SP Status-Code SP Reason-Phrase`.
    #[error("status line: {0}")]
    StatusLine(LineError),
    /// A SIP version other than 2.0 (a server answers 505).
    #[error("unsupported SIP version")]
    Version,
    /// The Request-URI is malformed.
    #[error("Request-URI: {0}")]
    RequestUri(UriError),
    /// The status code is not three digits in 100..=699.
    #[error("status code is not three digits in 100-699")]
    StatusCode,
    /// A header line has no colon or its name is not a token.
    #[error("line {line}: not a header (name must be a token followed by a colon)")]
    HeaderSyntax {
        /// The line.
        line: u16,
    },
    /// More header lines than the parser keeps.
    #[error("more than {limit} header lines")]
    TooManyHeaders {
        /// The limit.
        limit: usize,
    },
    /// A known header's value breaks its grammar.
    #[error("line {line}: {header} header: {error}")]
    Value {
        /// The header.
        header: HeaderName,
        /// The line.
        line: u16,
        /// What is wrong with it.
        error: ValueError,
    },
    /// A mandatory header is missing.
    #[error("missing mandatory header {0}")]
    Missing(HeaderName),
    /// A header that may appear once appears more than once.
    #[error("header {0} appears more than once")]
    Duplicate(HeaderName),
    /// The CSeq method differs from the request method.
    #[error("CSeq method does not match the request method")]
    CSeqMismatch,
    /// Content-Length announces more bytes than the datagram carries.
    #[error("Content-Length {declared} but only {available} body bytes")]
    BodyTruncated {
        /// Content-Length.
        declared: u32,
        /// Bytes present.
        available: u32,
    },
}

impl ParseError {
    /// A stable short name of the variant (for counters).
    pub fn name(&self) -> &'static str {
        match self {
            ParseError::Empty => "empty",
            ParseError::TooLarge { .. } => "too_large",
            ParseError::Unterminated => "unterminated",
            ParseError::LineBreak { .. } => "line_break",
            ParseError::Control { .. } => "control_character",
            ParseError::RequestLine(_) => "request_line",
            ParseError::StatusLine(_) => "status_line",
            ParseError::Version => "version",
            ParseError::RequestUri(_) => "request_uri",
            ParseError::StatusCode => "status_code",
            ParseError::HeaderSyntax { .. } => "header_syntax",
            ParseError::TooManyHeaders { .. } => "too_many_headers",
            ParseError::Value { .. } => "header_value",
            ParseError::Missing(_) => "missing_header",
            ParseError::Duplicate(_) => "duplicate_header",
            ParseError::CSeqMismatch => "cseq_mismatch",
            ParseError::BodyTruncated { .. } => "body_truncated",
        }
    }

    /// The status code a server answers a request failing with this error
    /// (when it can answer at all): 505 for a version, 513 for size, else 400.
    pub fn status(&self) -> u16 {
        match self {
            ParseError::Version => 505,
            ParseError::TooLarge { .. } => 513,
            _ => 400,
        }
    }
}

/// What is wrong with a start line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Fewer than three elements, or not a SIP line at all.
    #[error("malformed")]
    Malformed,
    /// Two spaces (or a tab) where one SP must separate elements.
    #[error("elements must be separated by exactly one SP")]
    ExtraSpace,
    /// White space before the CRLF.
    #[error("trailing white space")]
    TrailingSpace,
    /// The method is not a token.
    #[error("method is not a token")]
    Method,
    /// The Request-URI is enclosed in `<>`.
    #[error("Request-URI enclosed in <>")]
    Bracketed,
}

/// What is wrong with a URI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UriError {
    /// No `scheme:` prefix, or the scheme is not `ALPHA *(ALPHA / DIGIT / + - .)`.
    #[error("bad scheme")]
    Scheme,
    /// The host part is empty or malformed.
    #[error("bad host")]
    Host,
    /// The port is not a number in 0..=65535.
    #[error("bad port")]
    Port,
    /// Headers (`?...`) where they are not allowed.
    #[error("headers not allowed here")]
    Headers,
    /// White space or a control character inside the URI.
    #[error("white space or control character")]
    Whitespace,
    /// A `%` not followed by two hex digits in a part where escapes apply.
    #[error("bad escape")]
    Escape,
    /// A URI parameter is empty or not a valid pname/pvalue.
    #[error("bad parameter")]
    Param,
}

/// What is wrong with a header value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Empty where a value is required.
    #[error("empty value")]
    Empty,
    /// Not a number.
    #[error("not a number")]
    Number,
    /// A negative number.
    #[error("negative number")]
    Negative,
    /// A number out of its range.
    #[error("number out of range")]
    Overflow,
    /// A quoted string is not terminated.
    #[error("unterminated quoted string")]
    Quote,
    /// A name-addr / addr-spec is malformed.
    #[error("malformed name-addr or addr-spec")]
    NameAddr,
    /// A URI is malformed.
    #[error("URI: {0}")]
    Uri(UriError),
    /// A Via is malformed (sent-protocol, sent-by).
    #[error("malformed via-parm")]
    Via,
    /// A parameter is empty or malformed.
    #[error("malformed parameter")]
    Param,
    /// The CSeq method is not a token.
    #[error("method is not a token")]
    Method,
    /// The Call-ID is not `word ["@" word]`.
    #[error("not word [@ word]")]
    Word,
    /// A date is not an RFC 1123 date in GMT.
    #[error("not an RFC 1123 date in GMT")]
    Date,
    /// Unexpected characters after the value.
    #[error("unexpected characters after the value")]
    Trailing,
}
