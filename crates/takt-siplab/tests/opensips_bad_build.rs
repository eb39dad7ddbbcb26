//! The `opensips` target without a usable build: none at all is
//! `NotBuilt`'s sentence (with the command that builds it); a build that
//! lacks a module the lab's configuration loads is OpenSIPS refusing to
//! start, quoted from its stderr, with nothing left running.
//!
//! One test in its own binary: it points `TAKT_PEERS_DIR` elsewhere,
//! which would mislead any test running beside it.

use std::path::Path;

use takt_host::peers::{self, Peer};
use takt_siplab::target::{TargetKind, TargetSetup};

/// Processes whose command line names this test process's OpenSIPS
/// directories.
fn own_processes() -> Vec<i32> {
    let mark = format!("takt-siplab-opensips-{}-", std::process::id());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mark))
        })
        .collect()
}

#[test]
fn a_missing_or_incomplete_build_is_a_precise_error() {
    // the real build, or this test fails with the sentence that builds it
    let real = peers::locate(Peer::OpenSips).unwrap_or_else(|e| panic!("{e}"));
    let scratch =
        std::env::temp_dir().join(format!("takt-opensips-bad-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let setup = TargetSetup::new("127.0.0.1:9".parse().unwrap());

    // 1. nothing built
    std::fs::create_dir_all(scratch.join("empty")).unwrap();
    std::env::set_var("TAKT_PEERS_DIR", scratch.join("empty"));
    let e = TargetKind::OpenSips.start(&setup).unwrap_err().to_string();
    assert!(
        e.contains("OpenSIPS 3.6.8 is not built here")
            && e.ends_with("run `bash scripts/peers.sh opensips`"),
        "{e}"
    );

    // 2. a build without mi_datagram: OpenSIPS rejects the configuration
    let fake = scratch.join("partial").join("opensips-3.6.8");
    let modules = Path::new("lib64/opensips/modules");
    std::fs::create_dir_all(fake.join("sbin")).unwrap();
    std::fs::create_dir_all(fake.join(modules)).unwrap();
    std::fs::write(fake.join(".built"), "partial\n").unwrap();
    std::os::unix::fs::symlink(real.join("sbin/opensips"), fake.join("sbin/opensips")).unwrap();
    for m in std::fs::read_dir(real.join(modules)).unwrap().flatten() {
        if m.file_name() != "mi_datagram.so" {
            std::os::unix::fs::symlink(m.path(), fake.join(modules).join(m.file_name())).unwrap();
        }
    }
    std::env::set_var("TAKT_PEERS_DIR", scratch.join("partial"));
    let e = TargetKind::OpenSips.start(&setup).unwrap_err().to_string();
    assert!(e.starts_with("opensips did not start: exit status"), "{e}");
    assert!(e.contains("stderr:") && e.contains("mi_datagram"), "{e}");
    assert!(own_processes().is_empty(), "left {:?}", own_processes());

    // 3. no modules at all
    std::fs::remove_dir_all(fake.join("lib64")).unwrap();
    let e = TargetKind::OpenSips.start(&setup).unwrap_err().to_string();
    assert!(
        e.contains("has no modules") && e.contains("scripts/peers.sh opensips"),
        "{e}"
    );
    std::env::remove_var("TAKT_PEERS_DIR");
    std::fs::remove_dir_all(&scratch).unwrap();
}
