//! Records the git commit and compiler version for result documents.
use std::process::Command;

fn main() {
    let out = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    let commit = out("git", &["rev-parse", "--short=12", "HEAD"]);
    let dirty = out("git", &["status", "--porcelain", "--untracked-files=no"]);
    let commit = if dirty.is_empty() || dirty == "unknown" {
        commit
    } else {
        format!("{commit}-dirty")
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    println!("cargo:rustc-env=TAKT_GIT_COMMIT={commit}");
    println!(
        "cargo:rustc-env=TAKT_RUSTC_VERSION={}",
        out(&rustc, &["--version"])
    );
    println!(
        "cargo:rustc-env=TAKT_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
}
