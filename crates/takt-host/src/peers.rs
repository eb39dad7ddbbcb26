//! Where the peers that Debian does not package are built: OpenSIPS,
//! SObjectizer, C++SME and takt's SObjectizer benchmark driver.
//!
//! `scripts/peers.sh` builds each one once per version into a cache, by
//! default `target/peers` of the workspace, and marks a finished build with
//! a `.built` file. The laboratory finds that cache, in this order:
//!
//! 1. `$TAKT_PEERS_DIR`, when set;
//! 2. `peers` in the cargo target directory the running executable was
//!    built in (the nearest ancestor holding a `CACHEDIR.TAG`:
//!    `target/debug/takt` and `target/debug/deps/<test>` both find
//!    `target/peers`);
//! 3. the workspace's `target/peers`, as compiled in.
//!
//! A peer that is not built is a [`NotBuilt`] whose message is one sentence
//! ending with the command that builds it: benchmarks print it as their
//! "not measured: …" note, tests fail with it.
//!
//! ```no_run
//! use takt_host::peers::{self, Peer};
//!
//! match peers::locate(Peer::OpenSips) {
//!     Ok(dir) => println!("opensips at {}", dir.join("sbin/opensips").display()),
//!     Err(not_built) => println!("not measured: {not_built}"),
//! }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};

/// One peer of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// OpenSIPS 3.6.8: `sbin/opensips` and `lib64/opensips/modules/`.
    OpenSips,
    /// SObjectizer 5.8.4, a static library: `include/` and `lib/`.
    SObjectizer,
    /// C++SME at its last commit: the built source tree, with the thesis's
    /// programs at `test/ring_dynamic`, `test/ring_heavy`, `test/ring_uneven`.
    CppSme,
    /// takt's SObjectizer benchmark driver (an executable, `bin/takt-so5-bench`).
    So5Driver,
}

impl Peer {
    /// Every peer, in build order.
    pub const ALL: [Peer; 4] = [
        Peer::OpenSips,
        Peer::SObjectizer,
        Peer::CppSme,
        Peer::So5Driver,
    ];

    /// The peer's name and version as users know it.
    pub fn title(self) -> &'static str {
        match self {
            Peer::OpenSips => "OpenSIPS 3.6.8",
            Peer::SObjectizer => "SObjectizer 5.8.4",
            Peer::CppSme => "C++SME 8e12da6",
            Peer::So5Driver => "takt's SObjectizer 5.8.4 benchmark driver",
        }
    }

    /// The argument of `scripts/peers.sh` that builds it.
    pub fn script_arg(self) -> &'static str {
        match self {
            Peer::OpenSips => "opensips",
            Peer::SObjectizer => "sobjectizer",
            Peer::CppSme => "cppsme",
            Peer::So5Driver => "sobjectizer so5-driver",
        }
    }

    /// The peer's path relative to the cache: a directory, or for the
    /// driver an executable.
    fn relative(self) -> &'static str {
        match self {
            Peer::OpenSips => "opensips-3.6.8",
            Peer::SObjectizer => "sobjectizer-5.8.4",
            Peer::CppSme => "cppsme-8e12da6",
            Peer::So5Driver => "bin/takt-so5-bench",
        }
    }

    /// The file whose presence marks a finished build.
    fn marker(self, path: &Path) -> PathBuf {
        match self {
            Peer::So5Driver => path.with_extension("built"),
            _ => path.join(".built"),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

/// A peer that is not built in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotBuilt {
    /// The peer.
    pub peer: Peer,
    /// Where it was looked for.
    pub path: PathBuf,
}

impl fmt::Display for NotBuilt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not built here (looked for {}): run `bash scripts/peers.sh {}`",
            self.peer,
            self.path.display(),
            self.peer.script_arg()
        )
    }
}

impl std::error::Error for NotBuilt {}

/// The cache directory the peers are looked for in (see the module docs).
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("TAKT_PEERS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Ok(exe) = std::env::current_exe() {
        // A cargo target directory is marked by its CACHEDIR.TAG.
        if let Some(target) = exe
            .ancestors()
            .skip(1)
            .find(|a| a.join("CACHEDIR.TAG").is_file())
        {
            return target.join("peers");
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers")
}

/// The built peer's directory (or, for [`Peer::So5Driver`], executable).
pub fn locate(peer: Peer) -> Result<PathBuf, NotBuilt> {
    locate_in(&cache_dir(), peer)
}

/// [`locate`] in a given cache directory.
pub fn locate_in(cache: &Path, peer: Peer) -> Result<PathBuf, NotBuilt> {
    let path = cache.join(peer.relative());
    if peer.marker(&path).is_file() && path.exists() {
        Ok(path)
    } else {
        Err(NotBuilt { peer, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_only_finished_builds() {
        let dir = std::env::temp_dir().join(format!("takt-peers-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("opensips-3.6.8")).unwrap();
        // A directory without its marker is an unfinished build.
        let err = locate_in(&dir, Peer::OpenSips).unwrap_err();
        assert_eq!(err.peer, Peer::OpenSips);
        let text = err.to_string();
        assert!(
            text.starts_with("OpenSIPS 3.6.8 is not built here"),
            "{text}"
        );
        assert!(
            text.ends_with("run `bash scripts/peers.sh opensips`"),
            "{text}"
        );
        std::fs::write(dir.join("opensips-3.6.8/.built"), "opensips 3.6.8").unwrap();
        assert_eq!(
            locate_in(&dir, Peer::OpenSips).unwrap(),
            dir.join("opensips-3.6.8")
        );

        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/takt-so5-bench"), "").unwrap();
        assert!(locate_in(&dir, Peer::So5Driver).is_err());
        std::fs::write(dir.join("bin/takt-so5-bench.built"), "x").unwrap();
        assert_eq!(
            locate_in(&dir, Peer::So5Driver).unwrap(),
            dir.join("bin/takt-so5-bench")
        );
        assert!(locate_in(&dir, Peer::CppSme).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
