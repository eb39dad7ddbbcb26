//! Message templates: the bytes of a request written once, with holes
//! for the per-call fields.
//!
//! A template is built from text with `{token}`, `{totag}`, `{target}`
//! and `{routes}` markers (formatting happens here, once per socket and
//! message type); [`Template::render`] then copies the fixed runs and
//! fills the holes with `memcpy`s — no parsing or formatting per message.

/// A per-call field of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hole {
    /// The call's [`token`](super::token) (26 bytes).
    Token,
    /// The remote tag of the dialog.
    ToTag,
    /// The Request-URI of an in-dialog request (the remote Contact).
    Target,
    /// The route set: zero or more complete `Route:` lines.
    Routes,
}

/// The values of a call's holes.
#[derive(Debug, Clone, Copy)]
pub struct Fill<'a> {
    /// For [`Hole::Token`].
    pub token: &'a [u8],
    /// For [`Hole::ToTag`].
    pub to_tag: &'a [u8],
    /// For [`Hole::Target`].
    pub target: &'a [u8],
    /// For [`Hole::Routes`].
    pub routes: &'a [u8],
}

/// Fixed bytes with holes.
#[derive(Debug, Clone)]
pub struct Template {
    bytes: Vec<u8>,
    /// `(offset into bytes, hole)`, offsets non-decreasing.
    holes: Vec<(usize, Hole)>,
}

const MARKERS: [(&str, Hole); 4] = [
    ("{token}", Hole::Token),
    ("{totag}", Hole::ToTag),
    ("{target}", Hole::Target),
    ("{routes}", Hole::Routes),
];

impl Template {
    /// Parses `text`'s markers. Any other text, braces included, is kept.
    pub fn new(text: &str) -> Template {
        let mut bytes = Vec::with_capacity(text.len());
        let mut holes = Vec::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            if let Some(i) = rest.find('{') {
                for (m, h) in MARKERS {
                    if rest[i..].starts_with(m) {
                        bytes.extend_from_slice(&rest.as_bytes()[..i]);
                        holes.push((bytes.len(), h));
                        rest = &rest[i + m.len()..];
                        continue 'outer;
                    }
                }
                bytes.extend_from_slice(&rest.as_bytes()[..=i]);
                rest = &rest[i + 1..];
            } else {
                bytes.extend_from_slice(rest.as_bytes());
                break;
            }
        }
        Template { bytes, holes }
    }

    /// Appends the message to `out`; returns its length.
    #[inline]
    pub fn render(&self, f: &Fill<'_>, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        let mut at = 0;
        for &(off, h) in &self.holes {
            out.extend_from_slice(&self.bytes[at..off]);
            out.extend_from_slice(match h {
                Hole::Token => f.token,
                Hole::ToTag => f.to_tag,
                Hole::Target => f.target,
                Hole::Routes => f.routes,
            });
            at = off;
        }
        out.extend_from_slice(&self.bytes[at..]);
        out.len() - start
    }

    /// The fixed bytes' length (the message's length with empty holes).
    pub fn fixed_len(&self) -> usize {
        self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_hole_and_keeps_other_braces() {
        let t = Template::new("A {token} B {totag}{target}{routes}{x} C");
        let mut out = b"pre".to_vec();
        let n = t.render(
            &Fill {
                token: b"T",
                to_tag: b"tt",
                target: b"sip:x",
                routes: b"R\r\n",
            },
            &mut out,
        );
        assert_eq!(&out, b"preA T B ttsip:xR\r\n{x} C");
        assert_eq!(n, out.len() - 3);
        assert_eq!(t.fixed_len(), "A  B {x} C".len());
    }
}
