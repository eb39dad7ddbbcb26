//! [`Network`]: a built network, its committed state, and the per-chunk
//! commit ("settle") every executor runs.
//!
//! ## Storage
//! Signal values live in two flat byte buffers of identical layout. Cycle
//! `c` reads buffer `(c + 1) % 2` (last cycle's values) and writes buffer
//! `c % 2`, so committing a cycle is nothing but moving on to the next one:
//! one barrier per cycle is all the model needs.
//!
//! Each signal has a *stamp*, the generation (`cycle + 1`) of its last
//! write: a write whose stamp already equals this cycle's generation is a
//! double write, and nothing ever has to be cleared between cycles.
//!
//! ## Settling
//! A signal nobody wrote this cycle must still hold the right value in the
//! write buffer before it becomes the read buffer: its default (policy
//! `Reset`/`Undefined`) or last cycle's value (`Hold`). The thread that
//! stepped a chunk of processes settles the signals those processes own,
//! right after stepping them: when every owned signal was written (the
//! count of accepted writes equals the number of owned signals) there is
//! nothing to do.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::arena::Arena;
use crate::error::RunError;
use crate::exec::{Executor, RunReport};
use crate::process::KindStore;
use crate::signal::{Policy, Signal, SignalInfo, SignalMeta, KIND_SHIFT};
use crate::trace::Trace;

static NEXT_NETWORK: AtomicU32 = AtomicU32::new(1);

/// A fresh network id (handles carry it; every access checks it).
pub(crate) fn next_network_id() -> u32 {
    // Relaxed: only uniqueness matters.
    NEXT_NETWORK.fetch_add(1, Ordering::Relaxed)
}

/// What the builder hands over.
pub(crate) struct Parts {
    pub(crate) id: u32,
    pub(crate) buses: Vec<String>,
    pub(crate) signals: Vec<SignalMeta>,
    pub(crate) defaults: Arena,
    pub(crate) initials: Arena,
    pub(crate) kinds: Vec<Box<dyn KindStore>>,
    pub(crate) kind_base: Vec<u32>,
    pub(crate) names: Vec<String>,
    pub(crate) owned: Vec<u32>,
    pub(crate) owned_start: Vec<u32>,
}

/// A built SME network: fixed structure, process states and the committed
/// values of every signal. Run it with [`Network::run`].
pub struct Network {
    pub(crate) id: u32,
    pub(crate) buses: Vec<String>,
    pub(crate) signals: Vec<SignalMeta>,
    pub(crate) defaults: Arena,
    pub(crate) kinds: Vec<Box<dyn KindStore>>,
    /// Execution index of each kind's first process; one extra entry at the end.
    pub(crate) kind_base: Vec<u32>,
    /// Process names in execution order.
    pub(crate) names: Vec<String>,
    /// Signals owned by each process, concatenated in execution order.
    pub(crate) owned: Vec<u32>,
    /// `owned[owned_start[i]..owned_start[i + 1]]` are process `i`'s signals.
    pub(crate) owned_start: Vec<u32>,
    pub(crate) bufs: [Arena; 2],
    pub(crate) stamps: Vec<u64>,
    /// Per buffer, per signal: 1 when undefined. Kept only while tracking.
    pub(crate) undef: [Vec<u8>; 2],
    /// Cycles completed over the network's life.
    pub(crate) cycle: u64,
    pub(crate) debug: bool,
    pub(crate) poisoned: bool,
    pub(crate) trace: Option<Trace>,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("id", &self.id)
            .field("buses", &self.buses.len())
            .field("signals", &self.signals.len())
            .field("processes", &self.names.len())
            .field("kinds", &self.kinds.len())
            .field("cycle", &self.cycle)
            .field("debug", &self.debug)
            .finish()
    }
}

impl Network {
    pub(crate) fn new(p: Parts) -> Network {
        let n = p.signals.len();
        let mut bufs = [p.initials.clone(), p.initials];
        // Cycle 0 reads buffer 1; buffer 0 starts as a copy too.
        bufs[0].resize(bufs[1].len());
        Network {
            id: p.id,
            buses: p.buses,
            signals: p.signals,
            defaults: p.defaults,
            kinds: p.kinds,
            kind_base: p.kind_base,
            names: p.names,
            owned: p.owned,
            owned_start: p.owned_start,
            bufs,
            stamps: vec![0; n],
            undef: [vec![0; n], vec![0; n]],
            cycle: 0,
            debug: false,
            poisoned: false,
            trace: None,
        }
    }

    /// Runs up to `cycles` cycles with `exec`, stopping early at the end of
    /// a cycle in which a process halted or an error happened.
    ///
    /// Results (every committed value, every trace) are bit-identical for
    /// every executor and thread count. Calling `run` again continues from
    /// the committed state.
    pub fn run(&mut self, exec: &Executor, cycles: u64) -> Result<RunReport, RunError> {
        crate::exec::run::run(self, exec, cycles)
    }

    /// Number of processes.
    pub fn processes(&self) -> usize {
        self.names.len()
    }

    /// Process names in execution order (by type, then insertion).
    pub fn process_names(&self) -> &[String] {
        &self.names
    }

    /// Every signal, in declaration order (the order traces use).
    pub fn signals(&self) -> Vec<SignalInfo> {
        self.signals
            .iter()
            .map(|s| SignalInfo {
                bus: self.buses[s.bus as usize].clone(),
                name: s.name.clone(),
                type_name: s.type_name,
                policy: s.policy,
                writer: self.names[self.exec_of(s.writer) as usize].clone(),
                vcd: s.format.vcd,
            })
            .collect()
    }

    /// Cycles completed so far.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Debug mode: track undefined values and report reads of them as
    /// [`RunError::UndefinedRead`](crate::RunError::UndefinedRead).
    pub fn set_debug(&mut self, on: bool) {
        self.debug = on;
    }

    /// Whether debug mode is on.
    pub fn debug(&self) -> bool {
        self.debug
    }

    /// Records every following cycle into `trace` (replacing any trace set
    /// before). Tracing is off the hot path: it costs nothing when unset.
    pub fn set_trace(&mut self, trace: Trace) {
        self.trace = Some(trace);
    }

    /// Stops tracing and hands the trace back (flushed).
    pub fn take_trace(&mut self) -> Option<Trace> {
        let mut t = self.trace.take()?;
        let _ = t.flush();
        Some(t)
    }

    /// The committed value of `sig` (as of the end of the last cycle run).
    ///
    /// # Panics
    /// If `sig` belongs to another network.
    pub fn value<T: Copy>(&self, sig: Signal<T>) -> T {
        assert_eq!(sig.net, self.id, "signal handle of another network");
        // SAFETY: the handle belongs to this network, so `off` holds a `T`.
        unsafe { self.read_buf().get(sig.off as usize) }
    }

    /// Whether the committed value of `sig` is defined.
    ///
    /// # Panics
    /// If `sig` belongs to another network.
    pub fn is_defined<T>(&self, sig: Signal<T>) -> bool {
        assert_eq!(sig.net, self.id, "signal handle of another network");
        !self.undefined_before(sig.id as usize, self.cycle)
    }

    /// The buffer cycle `self.cycle` reads.
    pub(crate) fn read_buf(&self) -> &Arena {
        &self.bufs[((self.cycle + 1) & 1) as usize]
    }

    pub(crate) fn exec_of(&self, writer: u32) -> u32 {
        self.kind_base[(writer >> KIND_SHIFT) as usize] + (writer & ((1 << KIND_SHIFT) - 1))
    }

    /// Whether signal `s` is undefined in the values cycle `c` reads,
    /// computed from the stamps alone (valid between runs).
    pub(crate) fn undefined_before(&self, s: usize, c: u64) -> bool {
        let meta = &self.signals[s];
        let stamp = self.stamps[s];
        if c > 0 && stamp == c {
            return false; // written in cycle c - 1
        }
        if c == 0 {
            return meta.initially_undefined;
        }
        match meta.policy {
            Policy::Reset => false,
            Policy::Undefined => true,
            Policy::Hold => stamp == 0 && meta.initially_undefined,
        }
    }

    /// Brings the undefined flags of the next read buffer up to date, for a
    /// run that tracks them.
    pub(crate) fn refresh_undef(&mut self) {
        let c = self.cycle;
        let q = ((c + 1) & 1) as usize;
        for s in 0..self.signals.len() {
            self.undef[q][s] = self.undefined_before(s, c) as u8;
        }
    }
}

/// Raw views of a network's storage for the worker threads of one run.
///
/// Workers only touch it through [`RawNet::settle`] and the `Io` pointers;
/// the executor keeps their accesses disjoint within a cycle and ordered by
/// the barrier across cycles.
pub(crate) struct RawNet {
    pub(crate) id: u32,
    pub(crate) bufs: [*mut u8; 2],
    pub(crate) defaults: *const u8,
    pub(crate) stamps: *mut u64,
    pub(crate) undef: [*mut u8; 2],
    pub(crate) signals: *const SignalMeta,
    pub(crate) owned: *const u32,
    pub(crate) owned_start: *const u32,
    pub(crate) kinds: *const Box<dyn KindStore>,
    pub(crate) tracking: bool,
    pub(crate) debug: bool,
}

// SAFETY: the pointers refer to a `Network` that the run borrows mutably and
// outlives every worker (they are joined before `run` returns); concurrent
// access is partitioned as described on the type.
unsafe impl Send for RawNet {}
// SAFETY: as above.
unsafe impl Sync for RawNet {}

impl RawNet {
    pub(crate) fn new(net: &mut Network, tracking: bool) -> RawNet {
        RawNet {
            id: net.id,
            bufs: [net.bufs[0].as_mut_ptr(), net.bufs[1].as_mut_ptr()],
            defaults: net.defaults.as_ptr(),
            stamps: net.stamps.as_mut_ptr(),
            undef: [net.undef[0].as_mut_ptr(), net.undef[1].as_mut_ptr()],
            signals: net.signals.as_ptr(),
            owned: net.owned.as_ptr(),
            owned_start: net.owned_start.as_ptr(),
            kinds: net.kinds.as_ptr(),
            tracking,
            debug: net.debug,
        }
    }

    /// Settles the signals owned by processes `exec_lo..exec_hi` after they
    /// stepped in the cycle with generation `gen`, writing buffer `p`.
    /// `writes` counts the writes they made: every write goes to a signal of
    /// its own process (checked), distinct ones (stamps), so when it equals
    /// the number of owned signals every one was written.
    ///
    /// # Safety
    /// The calling thread must have just stepped exactly those processes in
    /// this cycle; `p` is this cycle's write buffer.
    #[inline]
    pub(crate) unsafe fn settle(
        &self,
        exec_lo: u32,
        exec_hi: u32,
        writes: u32,
        p: usize,
        gen: u64,
    ) {
        // SAFETY: owned_start has one entry per process plus one.
        let (a, b) = unsafe {
            (
                *self.owned_start.add(exec_lo as usize) as usize,
                *self.owned_start.add(exec_hi as usize) as usize,
            )
        };
        if !self.tracking && writes as usize == b - a {
            return;
        }
        let q = p ^ 1;
        for i in a..b {
            // SAFETY: `i` indexes `owned`; the signal belongs to a process of
            // this chunk, which only its own process writes, so this thread alone touches its stamp, its slot in
            // buffer `p` and its undefined flag in buffer `p` this cycle.
            unsafe {
                let s = *self.owned.add(i) as usize;
                let written = *self.stamps.add(s) == gen;
                let meta = &*self.signals.add(s);
                if !written {
                    let src = match meta.policy {
                        Policy::Hold => self.bufs[q] as *const u8,
                        Policy::Reset | Policy::Undefined => self.defaults,
                    };
                    std::ptr::copy_nonoverlapping(
                        src.add(meta.off as usize),
                        self.bufs[p].add(meta.off as usize),
                        meta.size as usize,
                    );
                }
                if self.tracking {
                    let undefined = if written {
                        0
                    } else {
                        match meta.policy {
                            Policy::Reset => 0,
                            Policy::Hold => *self.undef[q].add(s),
                            Policy::Undefined => 1,
                        }
                    };
                    *self.undef[p].add(s) = undefined;
                }
            }
        }
    }
}
