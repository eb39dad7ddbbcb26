//! # takt-host: machine-wide changes and their undoing
//!
//! A measurement that changes the machine — a sysctl, a debugfs scheduler
//! value, an idle-latency hold, a network namespace, a scratch file, a
//! child process — must leave the machine as it found it, however the run
//! ends. This crate is the one place that makes and undoes such changes:
//!
//! - [`cleanup`]: the registry, the one record of every machine-wide
//!   change. Register what you create or change ([`cleanup::register`] an
//!   [`cleanup::Item`]); its [`cleanup::Guard`] undoes it on drop,
//!   [`cleanup::run_all`] at the end of a run, a second signal from the
//!   signal watcher before the process ends; one journal file per process
//!   lets the next start [`cleanup::repair`] what a killed run left.
//! - [`settings`]: [`SystemSettings`](settings::SystemSettings), values
//!   written to `/proc/sys` and `/sys` with their originals registered
//!   first, read back, kept as a record for the result document and put
//!   back on drop; the idle-latency hold. Each change is a registry item.
//! - [`cgroup`]: [`CpuLimit`](cgroup::CpuLimit), a CPU quota (cgroup
//!   `cpu.max`, or v1's CFS quota) on a server's processes, a registry
//!   item.
//! - [`netns`]: network namespaces behind veth pairs
//!   ([`Veth`](netns::Veth)), with receive packet steering; the SIP
//!   laboratory's `--net veth` ([`VethNet`](netns::VethNet)).
//! - [`peers`]: where `scripts/peers.sh` built the peers Debian does not
//!   package (OpenSIPS, SObjectizer, C++SME), and the "not built" error.
//! - [`error`]: [`HostError`], the crate's one error type.
//!
//! Signals are [`takt_measure::cancel`]'s: the first cancels the run,
//! whose guards then drop on the way out; the second undoes everything
//! registered and ends the process.
//!
//! ## Example
//!
//! ```
//! use takt_host::cleanup::{self, Item};
//!
//! let (dir, guard) = cleanup::scratch_dir(&std::env::temp_dir(), "takt-doc")?;
//! let file = dir.join("data");
//! std::fs::write(&file, b"scratch")?;
//! let file_guard = cleanup::register(Item::File(file.clone()));
//! drop(file_guard);
//! assert!(!file.exists());
//! drop(guard);
//! assert!(!dir.exists());
//! # Ok::<(), std::io::Error>(())
//! ```
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

pub mod cgroup;
pub mod cleanup;
pub mod error;
pub mod netns;
pub mod peers;
pub mod settings;

pub use error::{HostError, Result};
