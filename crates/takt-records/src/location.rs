//! Where the records are: a SQLite file or a PostgreSQL database.

use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that names the store when `--db` does not.
pub const ENV_VAR: &str = "TAKT_DB";

/// A records store: a SQLite file (any path) or a PostgreSQL database (a
/// `postgres://` or `postgresql://` URL).
///
/// Converting a path or a string looks at its start only: `postgres://`
/// and `postgresql://` are URLs, anything else is a file path (a path
/// that reads like a URL of another scheme is refused when opened).
/// [`Display`](fmt::Display) never shows a password the URL holds.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (credentials in it or in the
    /// environment; see the crate README).
    Postgres(String),
}

impl Location {
    /// The store `value` names (see the type's conversion rule).
    pub fn parse(value: impl AsRef<OsStr>) -> Location {
        let value = value.as_ref();
        match value.to_str() {
            Some(s) if is_postgres_url(s) => Location::Postgres(s.to_string()),
            _ => Location::Sqlite(PathBuf::from(value)),
        }
    }

    /// Whether this is the shared (PostgreSQL) kind.
    pub fn is_shared(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

fn is_postgres_url(s: &str) -> bool {
    let lower = s.get(..13).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` with the password of its user-information part and of a
/// `password=` parameter replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(rest_start + colon + 1..rest_start + at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => f.debug_tuple("Sqlite").field(p).finish(),
            Location::Postgres(_) => f.debug_tuple("Postgres").field(&self.to_string()).finish(),
        }
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::parse(p)
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::parse(p)
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Location {
        Location::parse(p)
    }
}

impl From<&OsStr> for Location {
    fn from(s: &OsStr) -> Location {
        Location::parse(s)
    }
}

impl From<&std::ffi::OsString> for Location {
    fn from(s: &std::ffi::OsString) -> Location {
        Location::parse(s)
    }
}

impl From<&str> for Location {
    fn from(s: &str) -> Location {
        Location::parse(s)
    }
}

impl From<&String> for Location {
    fn from(s: &String) -> Location {
        Location::parse(s)
    }
}

impl From<String> for Location {
    fn from(s: String) -> Location {
        Location::parse(s)
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Location {
        l.clone()
    }
}

impl std::str::FromStr for Location {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Location, Self::Err> {
        Ok(Location::parse(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        assert!(matches!(
            Location::parse("postgres://u@h/db"),
            Location::Postgres(_)
        ));
        assert!(matches!(
            Location::parse("PostgreSQL://u@h/db"),
            Location::Postgres(_)
        ));
        assert!(matches!(
            Location::parse("takt-results.db"),
            Location::Sqlite(_)
        ));
        assert!(matches!(
            Location::from(Path::new("/tmp/postgres://x")),
            Location::Sqlite(_)
        ));
    }

    #[test]
    fn passwords_are_never_displayed() {
        let l = Location::parse("postgres://takt:s3cret@db.lab:5432/takt?sslmode=require");
        assert_eq!(
            l.to_string(),
            "postgres://takt:***@db.lab:5432/takt?sslmode=require"
        );
        assert!(!format!("{l:?}").contains("s3cret"));
        let l = Location::parse("postgres://db.lab/takt?user=t&password=s3cret&sslmode=require");
        assert_eq!(
            l.to_string(),
            "postgres://db.lab/takt?user=t&password=***&sslmode=require"
        );
        let l = Location::parse("postgres://takt@db.lab/takt");
        assert_eq!(l.to_string(), "postgres://takt@db.lab/takt");
    }
}
