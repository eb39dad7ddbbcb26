//! Processes, the [`Io`] they step through, and kinds: all processes of one
//! Rust type kept together and stepped in batches.
//!
//! A network stores the states of every process of type `P` in one
//! contiguous array (a *kind*) and steps a range of them with one
//! monomorphized loop, so the per-process cost is the `step` body itself:
//! no indirect call, no per-process bookkeeping beyond a counter.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ptr;

use crate::error::Fault;
use crate::signal::{In, Out};

/// One SME process: private state plus a `step` run once per cycle.
///
/// `step` reads values committed at the end of the previous cycle through
/// [`Io::read`] and writes this cycle's values through [`Io::write`]; it must
/// have no other side effects (the executors may run processes in any order
/// and on any thread, and results must not depend on it).
///
/// ```
/// use takt_sme::{In, Io, Out, Process};
/// struct Incr { input: In<i32>, output: Out<i32> }
/// impl Process for Incr {
///     fn step(&mut self, io: &mut Io<'_>) {
///         let v = io.read(self.input);
///         io.write(&self.output, v.wrapping_add(1));
///     }
/// }
/// ```
pub trait Process: Send + 'static {
    /// Runs one cycle of the process.
    fn step(&mut self, io: &mut Io<'_>);
}

/// The view of the network a process gets while it steps.
///
/// Reads see last cycle's committed values; writes go to this cycle's
/// buffer. Every write is checked: the signal must belong to the process
/// and must not have been written already this cycle.
pub struct Io<'a> {
    pub(crate) net: u32,
    /// Base of the buffer holding last cycle's committed values.
    pub(crate) read: *const u8,
    /// Base of the buffer receiving this cycle's values.
    pub(crate) write: *mut u8,
    /// Per signal: generation (cycle + 1) of its last write.
    pub(crate) stamps: *mut u64,
    /// This cycle's generation.
    pub(crate) gen: u64,
    /// Accepted writes in the current chunk.
    pub(crate) writes: u32,
    /// The process now stepping, packed like [`Out::writer`]
    /// (`kind << KIND_SHIFT | index`), which orders processes in execution order.
    pub(crate) cur: u32,
    /// Debug mode: report reads of undefined values.
    pub(crate) debug: bool,
    /// Per signal of the read buffer: non-zero when undefined (debug mode).
    pub(crate) undef_read: *const u8,
    /// Where halts and faults go: the worker's [`Sink`]. Kept behind a
    /// pointer so the stepping loop can work on a register copy of `Io`.
    pub(crate) sink: *mut Sink,
    pub(crate) cycle: u64,
    pub(crate) _life: PhantomData<&'a mut ()>,
}

/// What a worker's processes reported during a cycle.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub(crate) halted: bool,
    /// The earliest fault (by cycle, then process) this worker saw.
    pub(crate) fault: Option<Fault>,
    /// The process (packed id) whose `step` unwound.
    pub(crate) panicked: Option<u32>,
}

/// Notes which process was stepping when a panic unwinds through the
/// stepping loop. Its `cur` lives in a register: nothing is stored per step.
struct PanicSite {
    cur: u32,
    sink: *mut Sink,
}

impl Drop for PanicSite {
    fn drop(&mut self) {
        // Only reached while unwinding: the normal path forgets the guard.
        // SAFETY: `sink` points to the stepping worker's own sink.
        unsafe { (*self.sink).panicked = Some(self.cur) };
    }
}

impl Sink {
    pub(crate) fn record(&mut self, fault: Fault) {
        // Keep the earliest by (cycle, process): which one a thread meets
        // first depends on the executor, the earliest does not.
        if self.fault.as_ref().is_none_or(|f| fault.key() < f.key()) {
            self.fault = Some(fault);
        }
    }
}

// SAFETY: an `Io` is created by a worker for its own use; its pointers refer
// to network buffers that outlive the run, and the executor's partitioning
// and barriers keep accesses through different `Io`s disjoint or ordered.
unsafe impl Send for Io<'_> {}

impl std::fmt::Debug for Io<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("cycle", &self.cycle)
            .field("process", &self.cur)
            .finish_non_exhaustive()
    }
}

impl<'a> Io<'a> {
    /// Last cycle's committed value of `sig`.
    ///
    /// In debug mode a read of an undefined value is reported as an error
    /// naming the process and the signal; the run stops at the end of the
    /// cycle. Outside debug mode the value read is the signal's default.
    ///
    /// # Panics
    /// If `sig` belongs to another network (a programming error; the
    /// executor reports it as a [`RunError::Panicked`](crate::RunError)).
    #[inline(always)]
    pub fn read<T: Copy>(&mut self, sig: In<T>) -> T {
        if sig.net != self.net {
            foreign_handle(sig.net, self.net);
        }
        // SAFETY: in debug mode `undef_read` covers every signal of this
        // network and is not written during the cycle.
        if self.debug && unsafe { *self.undef_read.add(sig.id as usize) } != 0 {
            report(
                self.sink,
                Fault::UndefinedRead {
                    cycle: self.cycle,
                    process: self.cur,
                    signal: sig.id,
                },
            );
        }
        // SAFETY: the handle belongs to this network (checked above), so
        // `off` is the offset of a properly aligned `T` inside the read
        // buffer; nobody writes the read buffer during the cycle.
        unsafe { ptr::read(self.read.add(sig.off as usize) as *const T) }
    }

    /// Writes this cycle's value of `sig`.
    ///
    /// A second write of the same signal in one cycle, or a write through a
    /// port claimed by another process (a port moved between processes), is
    /// an error (the value is dropped, the run stops at the end of the cycle).
    ///
    /// # Panics
    /// If `sig` belongs to another network.
    #[inline(always)]
    pub fn write<T: Copy>(&mut self, sig: &Out<T>, value: T) {
        if sig.net != self.net {
            foreign_handle(sig.net, self.net);
        }
        if sig.writer != self.cur {
            report(
                self.sink,
                Fault::NotOwner {
                    cycle: self.cycle,
                    process: self.cur,
                    signal: sig.id,
                    owner: sig.writer,
                },
            );
            return;
        }
        // SAFETY: the writer of this signal is the process this thread is
        // stepping, so no other thread touches this stamp or this slot of the
        // write buffer during the cycle; `off`/`id` are in bounds (handle of
        // this network).
        unsafe {
            let stamp = self.stamps.add(sig.id as usize);
            if *stamp == self.gen {
                report(
                    self.sink,
                    Fault::DoubleWrite {
                        cycle: self.cycle,
                        process: self.cur,
                        signal: sig.id,
                    },
                );
                return;
            }
            *stamp = self.gen;
            ptr::write(self.write.add(sig.off as usize) as *mut T, value);
        }
        self.writes += 1;
    }

    /// Asks the network to stop at the end of this cycle.
    #[inline]
    pub fn halt(&mut self) {
        // SAFETY: `sink` points to the stepping worker's own sink.
        unsafe { (*self.sink).halted = true };
    }

    /// The cycle being executed (0-based, counted over the network's life).
    #[inline]
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    pub(crate) fn record(&self, fault: Fault) {
        // SAFETY: `sink` points to the stepping worker's own sink.
        unsafe { (*self.sink).record(fault) }
    }

    /// A copy for a stepping loop: the compiler can keep its fields in
    /// registers while processes step (nothing takes its address but the
    /// inlined `step`s). Copy `cur`/`writes` back with [`Io::join`].
    #[inline(always)]
    pub(crate) fn fork(&self) -> Io<'a> {
        Io {
            net: self.net,
            read: self.read,
            write: self.write,
            stamps: self.stamps,
            gen: self.gen,
            writes: self.writes,
            cur: self.cur,
            debug: self.debug,
            undef_read: self.undef_read,
            sink: self.sink,
            cycle: self.cycle,
            _life: PhantomData,
        }
    }

    #[inline(always)]
    pub(crate) fn join(&mut self, fork: &Io<'_>) {
        self.writes = fork.writes;
        self.cur = fork.cur;
    }
}

/// Records a fault in a worker's sink. A free function taking no `Io`, so
/// the stepping loop's copy of `Io` never has its address taken.
#[cold]
#[inline(never)]
fn report(sink: *mut Sink, fault: Fault) {
    // SAFETY: `sink` points to the stepping worker's own sink.
    unsafe { (*sink).record(fault) }
}

#[cold]
#[inline(never)]
fn foreign_handle(handle_net: u32, net: u32) -> ! {
    panic!("a signal handle of network {handle_net} was used in network {net}")
}

/// The type-erased face of a kind: all processes of one Rust type.
pub(crate) trait KindStore: Send + Sync {
    /// Steps processes `start..end` of the kind; `packed_base` is the packed
    /// id of process 0 of the kind (`kind << KIND_SHIFT`).
    ///
    /// # Safety
    /// No other thread may step or touch an overlapping range concurrently,
    /// and `io` must be set up for a chunk covering exactly this range.
    unsafe fn step_range(&self, start: usize, end: usize, packed_base: u32, io: &mut Io<'_>);

    /// Like `step_range`, also storing each process's cost in clock ticks
    /// into `costs[exec_base + index]`.
    ///
    /// # Safety
    /// As `step_range`; `costs` must have room for every execution index of
    /// the range and no other thread may write those entries.
    unsafe fn step_range_timed(
        &self,
        start: usize,
        end: usize,
        packed_base: u32,
        exec_base: u32,
        io: &mut Io<'_>,
        costs: *mut u64,
    );
}

/// The states of every process of type `P`, in insertion order.
pub(crate) struct Kind<P> {
    states: Box<[UnsafeCell<P>]>,
}

// SAFETY: states are only reached through `step_range*`, whose contract keeps
// concurrent accesses to disjoint ranges; `P: Send` lets a state move between
// the threads that step it in different cycles (ordered by the barrier).
unsafe impl<P: Send> Sync for Kind<P> {}

impl<P: Process> Kind<P> {
    pub(crate) fn new(states: Vec<P>) -> Self {
        Kind {
            states: states.into_iter().map(UnsafeCell::new).collect(),
        }
    }
}

impl<P: Process> KindStore for Kind<P> {
    #[inline(never)]
    unsafe fn step_range(&self, start: usize, end: usize, packed_base: u32, io: &mut Io<'_>) {
        let mut local = io.fork();
        let mut site = PanicSite {
            cur: packed_base + start as u32,
            sink: io.sink,
        };
        for (cur, cell) in (packed_base + start as u32..).zip(&self.states[start..end]) {
            local.cur = cur;
            site.cur = cur;
            // SAFETY: the caller guarantees exclusive access to this range.
            unsafe { (*cell.get()).step(&mut local) };
        }
        std::mem::forget(site);
        io.join(&local);
    }

    unsafe fn step_range_timed(
        &self,
        start: usize,
        end: usize,
        packed_base: u32,
        exec_base: u32,
        io: &mut Io<'_>,
        costs: *mut u64,
    ) {
        let clock = takt_sched::clock();
        let ids = (packed_base + start as u32..).zip(exec_base as usize + start..);
        for ((cur, exec), cell) in ids.zip(&self.states[start..end]) {
            io.cur = cur;
            let t0 = clock.now();
            // SAFETY: the caller guarantees exclusive access to this range.
            unsafe { (*cell.get()).step(io) };
            let t1 = clock.now();
            // SAFETY: the caller guarantees `costs` covers `cur` exclusively.
            unsafe { *costs.add(exec) = t1.saturating_sub(t0) };
        }
    }
}
