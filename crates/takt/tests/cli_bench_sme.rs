//! `takt bench sme --peers`: the flag exists, and without a C++SME build
//! the run still succeeds and says "not measured" with the command that
//! builds it, in the document and in the table.

use std::process::Command;

fn takt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_takt"))
}

/// A peers directory with nothing built in it.
fn empty_peers() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("takt-no-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SHORT: [&str; 10] = [
    "bench",
    "sme",
    "--peers",
    "--quick",
    "--only",
    "sync_cost",
    "--threads",
    "1",
    "--runs",
    "5",
];

#[test]
fn help_lists_peers() {
    let out = takt().args(["bench", "sme", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--peers"), "{help}");
    assert!(help.contains("C++SME"), "{help}");
}

#[test]
fn peers_takes_no_value() {
    let out = takt()
        .args(["bench", "sme", "--peers=yes", "--quick"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--peers"), "{err}");
}

#[test]
fn a_missing_build_is_not_measured_in_the_document_and_the_table() {
    let dir = empty_peers();
    let out = takt()
        .args(SHORT)
        .arg("--json")
        .env("TAKT_PEERS_DIR", &dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let missing = notes
        .iter()
        .find(|n| n.starts_with("cppsme: not measured: "))
        .unwrap_or_else(|| panic!("no not-measured note in {notes:?}"));
    assert!(
        missing.ends_with("run `bash scripts/peers.sh cppsme`"),
        "{missing}"
    );
    assert!(
        doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["impl"] != "cppsme"),
        "no cppsme rows without a build"
    );

    let out = takt()
        .args(SHORT)
        .env("TAKT_PEERS_DIR", &dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("note: cppsme: not measured: "),
        "the table says it too: {table}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
