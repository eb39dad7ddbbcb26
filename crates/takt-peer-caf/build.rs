//! Compiles the C++ benchmarks against CAF 0.17 when its headers are
//! installed (Debian: `libcaf-dev`), and links `libcaf_core`. Without the
//! headers the crate still builds: `cfg(takt_caf)` stays unset and every
//! function reports that CAF was not found at build time.

use std::path::PathBuf;

fn build() -> cc::Build {
    let mut b = cc::Build::new();
    b.cpp(true)
        .std("c++17")
        // The peer's fast path in every profile: -O2, no assertions, no
        // debug info (CAF itself is Debian's release build, logging off).
        .opt_level(2)
        .debug(false)
        .define("NDEBUG", None);
    b
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(takt_caf)");
    for f in ["cpp/peer.cpp", "cpp/peer.hpp", "cpp/probe.cpp"] {
        println!("cargo::rerun-if-changed={f}");
    }
    // cc reads these; a CAF outside the default paths is found through them.
    for v in [
        "CXX",
        "CXXFLAGS",
        "CPATH",
        "CPLUS_INCLUDE_PATH",
        "LIBRARY_PATH",
    ] {
        println!("cargo::rerun-if-env-changed={v}");
    }

    let probe_dir =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("probe");
    if let Err(e) = std::fs::create_dir_all(&probe_dir) {
        panic!("cannot create {}: {e}", probe_dir.display());
    }
    let found = build()
        .file("cpp/probe.cpp")
        .out_dir(&probe_dir)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .try_compile_intermediates()
        .is_ok();
    if !found {
        println!(
            "cargo::warning=CAF 0.17 headers not found (install libcaf-dev): \
             the CAF peer will report \"not measured\""
        );
        return;
    }
    build()
        .file("cpp/peer.cpp")
        .warnings(true)
        .extra_warnings(true)
        .compile("takt_peer_caf");
    println!("cargo::rustc-link-lib=dylib=caf_core");
    println!("cargo::rustc-cfg=takt_caf");
}
