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
    // Rebuild when HEAD moves, the branch it names gets a commit, or the
    // index changes. The paths come from git itself: in a linked worktree
    // `.git` is a file and HEAD and the index live elsewhere, and a path
    // that does not exist would make cargo rerun this on every build.
    let git_dir = out("git", &["rev-parse", "--absolute-git-dir"]);
    if git_dir != "unknown" {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/index");
        let branch = out("git", &["symbolic-ref", "-q", "HEAD"]);
        let common = out(
            "git",
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        );
        let reference = std::path::Path::new(&common).join(&branch);
        if branch != "unknown" && common != "unknown" && reference.is_file() {
            println!("cargo:rerun-if-changed={}", reference.display());
        }
    }
}
