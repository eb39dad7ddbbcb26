//! The run driver and the worker loop shared by every executor.
//!
//! Per cycle `c` a worker: steps its share of processes (reading buffer
//! `(c + 1) % 2`, writing buffer `c % 2`) and settles the signals they own;
//! publishes a halt or a fault as "stop after cycle `c`"; waits at the one
//! cycle barrier; then stops if anyone asked to stop at or before `c`.
//! Because the stop decision reads a value that only decreases and is
//! written before the barrier of the cycle it names, every worker makes the
//! same decision at the same cycle.

use std::cell::UnsafeCell;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use takt_sched::{clock, CpuSet, SpinBarrier, ThreadSpec};

use super::claim::{Cursor, RangeDeque};
use super::partition::{balanced_ranges, chunks_of, even_ranges, floor_ranges, max_load, Chunk};
use super::{Executor, ExecutorKind, RunReport, MAX_THREADS};
use crate::error::{Fault, RunError};
use crate::network::{Network, RawNet};
use crate::process::{Io, KindStore, Sink};
use crate::trace::Trace;

/// Keeps hot shared words on their own cache lines (128: Zen/Intel pairs).
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Chunks per thread the work-claiming executors aim for.
const CHUNKS_PER_THREAD: u32 = 16;
/// Largest default chunk: beyond this the claim cost is noise.
const MAX_DEFAULT_CHUNK: u32 = 4096;
/// `balanced`: keep measurement and re-cutting under ~1% of the run.
const REBALANCE_OVERHEAD_FACTOR: u64 = 100;

enum Plan {
    /// `sequential`, `static` and `thesis_static`: fixed chunks per thread.
    Fixed {
        parts: Vec<Vec<Chunk>>,
    },
    Worklist {
        chunks: Vec<Chunk>,
        /// Cycle `c` claims from `cursors[c % 2]`; worker 0 resets the other.
        cursors: [Padded<Cursor>; 2],
    },
    Stealing {
        chunks: Vec<Chunk>,
        /// Each worker's own chunk indices.
        homes: Vec<Range<u32>>,
        /// `deques[w][c % 2]`: worker `w`'s remaining chunks in cycle `c`;
        /// `w` refills the other parity during the cycle.
        deques: Vec<[Padded<RangeDeque>; 2]>,
    },
    Balanced(Balanced),
}

struct Balanced {
    /// Written only by worker 0 between the cycle barrier and the
    /// re-balance barrier, while every other worker waits at the latter.
    parts: UnsafeCell<Vec<Vec<Chunk>>>,
    ranges: UnsafeCell<Vec<Range<u32>>>,
    /// Per process (execution index): ticks of its last measured step.
    /// Written by the worker stepping it in a measuring cycle.
    costs: UnsafeCell<Vec<u64>>,
    /// The next measuring cycle (`u64::MAX`: none); set by worker 0 between
    /// the two barriers of a measuring cycle, read by every worker at the
    /// start of each cycle (so all read the same value for a cycle).
    next_check: AtomicU64,
    /// Worker 0 only: clock tick at the end of the last check.
    last_check_end: AtomicU64,
    /// Worker 0 only: cycle of the last check.
    last_check_cycle: AtomicU64,
    every: u64,
    /// Lengthen `every` to keep checks cheap (see `Executor::with_rebalance`).
    adaptive: bool,
    drift: f64,
    rebalances: AtomicU32,
}

// SAFETY: the `UnsafeCell`s are accessed under the protocol documented on
// each field: barrier-separated phases with a single writer.
unsafe impl Sync for Balanced {}

impl Balanced {
    fn measuring(&self, start: u64, cycle: u64, threads: usize) -> bool {
        if threads < 2 {
            return false;
        }
        // Relaxed: written by worker 0 before the re-balance barrier.
        cycle == start || cycle == self.next_check.load(Ordering::Relaxed)
    }

    /// Cycles until the next check, keeping measuring and re-cutting near
    /// 1/`REBALANCE_OVERHEAD_FACTOR` of the run: `check` ticks spent per
    /// check, `cycle` ticks per ordinary cycle.
    fn interval(&self, check: u64, cycle: u64) -> u64 {
        if !self.adaptive {
            return self.every;
        }
        self.every
            .max(REBALANCE_OVERHEAD_FACTOR.saturating_mul(check) / cycle.max(1))
    }
}

/// Start gate: workers wait until every one of them exists.
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    fn open(&self, go: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(go);
        self.cv.notify_all();
    }

    fn wait(&self) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(go) = *s {
                return go;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }
}

struct Shared {
    raw: RawNet,
    plan: Plan,
    threads: usize,
    barrier: SpinBarrier,
    start: u64,
    end: u64,
    /// Lowest cycle after which to stop; `u64::MAX` while nobody asked.
    stop_at: Padded<AtomicU64>,
    halted: AtomicBool,
    fault: Mutex<Option<Fault>>,
    trace: Mutex<Option<Trace>>,
    /// Whether `trace` holds a trace: lets worker 0 skip the lock per cycle.
    tracing: bool,
    trace_error: Mutex<Option<std::io::Error>>,
    kind_base: Vec<u32>,
    gate: Gate,
    /// Tick at which worker 0 passed the start barrier.
    started: AtomicU64,
}

#[derive(Default)]
struct WorkerOut {
    done: u64,
    end_tick: u64,
    sleeps: u64,
    processes: u32,
}

impl Shared {
    fn kind(&self, k: u32) -> &dyn KindStore {
        // SAFETY: `kinds` points to the network's kinds, alive for the run;
        // chunk kinds are valid indices.
        unsafe { &**self.raw.kinds.add(k as usize) }
    }

    /// Steps one chunk and settles its signals.
    ///
    /// # Safety
    /// The calling worker must have exclusive claim on `ch` for this cycle.
    #[inline]
    unsafe fn run_chunk(&self, ch: &Chunk, io: &mut Io<'_>, p: usize, costs: Option<*mut u64>) {
        io.writes = 0;
        let packed = ch.kind << crate::signal::KIND_SHIFT;
        let base = self.kind_base[ch.kind as usize];
        let kind = self.kind(ch.kind);
        // SAFETY: exclusive claim on the chunk (caller), `io` set up for it.
        unsafe {
            match costs {
                None => kind.step_range(ch.start as usize, ch.end as usize, packed, io),
                Some(c) => {
                    kind.step_range_timed(ch.start as usize, ch.end as usize, packed, base, io, c)
                }
            }
            self.raw
                .settle(ch.exec_lo, ch.exec_hi(), io.writes, p, io.gen);
        }
    }

    /// One cycle's stepping for worker `t`; returns processes stepped.
    fn step_cycle(&self, t: usize, cycle: u64, p: usize, timed: bool, io: &mut Io<'_>) -> u32 {
        let mut stepped = 0;
        let par = (cycle & 1) as usize;
        // SAFETY (all `run_chunk` calls): every chunk index is handed to
        // exactly one worker per cycle — by fixed partition, by the cursor's
        // unique `fetch_add`, or by the deques' CAS.
        match &self.plan {
            Plan::Fixed { parts } => {
                for ch in &parts[t] {
                    // SAFETY: fixed partitions are disjoint.
                    unsafe { self.run_chunk(ch, io, p, None) };
                    stepped += ch.end - ch.start;
                }
            }
            Plan::Worklist { chunks, cursors } => {
                while let Some(i) = cursors[par].claim(chunks.len()) {
                    let ch = &chunks[i];
                    // SAFETY: the cursor hands `i` out once this cycle.
                    unsafe { self.run_chunk(ch, io, p, None) };
                    stepped += ch.end - ch.start;
                }
                if t == 0 {
                    // Last used in cycle - 1 (before the previous barrier),
                    // next used in cycle + 1 (after this cycle's barrier).
                    cursors[par ^ 1].reset();
                }
            }
            Plan::Stealing {
                chunks,
                homes,
                deques,
            } => {
                while let Some(i) = deques[t][par].pop_front() {
                    let ch = &chunks[i as usize];
                    // SAFETY: the deque hands `i` out once this cycle.
                    unsafe { self.run_chunk(ch, io, p, None) };
                    stepped += ch.end - ch.start;
                }
                for k in 1..self.threads {
                    let victim = &deques[(t + k) % self.threads][par];
                    while let Some(i) = victim.steal_back() {
                        let ch = &chunks[i as usize];
                        // SAFETY: the deque hands `i` out once this cycle.
                        unsafe { self.run_chunk(ch, io, p, None) };
                        stepped += ch.end - ch.start;
                    }
                }
                // Same reasoning as the work list's cursor.
                deques[t][par ^ 1].reset(homes[t].start, homes[t].end);
            }
            Plan::Balanced(b) => {
                // SAFETY: `parts` changes only between the two barriers of a
                // re-balance, while no worker steps.
                let parts = unsafe { &*b.parts.get() };
                // SAFETY: in a measuring cycle each worker writes only the
                // entries of its own processes; worker 0 reads them after
                // the barrier.
                let costs = timed.then(|| unsafe { (*b.costs.get()).as_mut_ptr() });
                for ch in &parts[t] {
                    // SAFETY: the partitions are disjoint.
                    unsafe { self.run_chunk(ch, io, p, costs) };
                    stepped += ch.end - ch.start;
                }
            }
        }
        stepped
    }

    /// `balanced` after a measuring cycle: worker 0 re-cuts while the
    /// others wait at a second barrier.
    fn rebalance(&self, t: usize, cycle: u64) {
        let Plan::Balanced(b) = &self.plan else {
            return;
        };
        if t == 0 {
            let clock = clock();
            let t0 = clock.now();
            // SAFETY: every other worker is waiting at the barrier below and
            // all measuring writes to `costs` happened before the cycle
            // barrier this worker has passed.
            unsafe {
                let costs = &*b.costs.get();
                let ranges = &mut *b.ranges.get();
                let best = balanced_ranges(costs, self.threads);
                let trial = cycle == self.start;
                let current = max_load(costs, ranges) as f64;
                let better = max_load(costs, &best) as f64;
                if trial || current > b.drift * better {
                    if !trial {
                        b.rebalances.fetch_add(1, Ordering::Relaxed);
                    }
                    *b.parts.get() = best
                        .iter()
                        .map(|r| chunks_of(&self.kind_base, r.clone(), u32::MAX))
                        .collect();
                    *ranges = best;
                }
                // Relaxed (all three): worker 0's own bookkeeping, and
                // `next_check` is published by the barrier below.
                let end = clock.now();
                let recut = end.saturating_sub(t0);
                let next = if b.every == 0 {
                    u64::MAX
                } else if trial {
                    // A measured cycle's per-thread time bounds an ordinary
                    // one from above; the check costs the re-cut plus a
                    // timed cycle (at most about one more cycle).
                    let cycle_ticks = costs.iter().sum::<u64>() / self.threads as u64;
                    cycle + b.interval(recut + cycle_ticks, cycle_ticks)
                } else {
                    // Wall ticks per cycle since the last check (that check
                    // and this timed cycle included: an over-estimate).
                    let since = cycle - b.last_check_cycle.load(Ordering::Relaxed);
                    let wall = t0.saturating_sub(b.last_check_end.load(Ordering::Relaxed));
                    cycle + b.interval(recut, wall / since.max(1))
                };
                b.next_check.store(next, Ordering::Relaxed);
                b.last_check_end.store(end, Ordering::Relaxed);
                b.last_check_cycle.store(cycle, Ordering::Relaxed);
            }
        }
        self.barrier.wait();
    }

    /// Whether `cycle` is a `balanced` measuring cycle.
    fn measuring(&self, cycle: u64) -> bool {
        match &self.plan {
            Plan::Balanced(b) => b.measuring(self.start, cycle, self.threads),
            _ => false,
        }
    }

    fn add_fault(&self, f: Fault) {
        let mut slot = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|g| f.key() < g.key()) {
            *slot = Some(f);
        }
    }

    fn record_trace(&self, cycle: u64, p: usize) {
        let mut guard = self.trace.lock().unwrap_or_else(|e| e.into_inner());
        let Some(trace) = guard.as_mut() else {
            return;
        };
        if trace.failed() {
            return;
        }
        // SAFETY: buffer `p` and its undefined flags hold cycle `cycle`'s
        // committed values and are not written again before cycle + 2, which
        // no worker starts before this worker reaches the next barrier.
        let r = unsafe { trace.row(cycle, self.raw.bufs[p], self.raw.undef[p]) };
        if let Err(e) = r {
            *self.trace_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
            // The others may already be in cycle + 1: stop after it.
            self.stop_at.fetch_min(cycle + 1, Ordering::Relaxed);
        }
    }

    fn worker(&self, t: usize) -> WorkerOut {
        let mut out = WorkerOut {
            done: self.start,
            ..WorkerOut::default()
        };
        if !self.gate.wait() {
            return out;
        }
        if self.threads > 1 {
            self.barrier.wait();
        }
        let clock = clock();
        if t == 0 {
            self.started.store(clock.now(), Ordering::Relaxed);
        }
        let mut sink = Sink::default();
        let mut io = Io {
            net: self.raw.id,
            read: std::ptr::null(),
            write: std::ptr::null_mut(),
            stamps: self.raw.stamps,
            gen: 0,
            writes: 0,
            cur: 0,
            debug: self.raw.debug,
            undef_read: std::ptr::null(),
            sink: &mut sink,
            cycle: 0,
            _life: std::marker::PhantomData,
        };
        let mut cycle = self.start;
        while cycle < self.end {
            let p = (cycle & 1) as usize;
            io.read = self.raw.bufs[p ^ 1];
            io.write = self.raw.bufs[p];
            io.undef_read = self.raw.undef[p ^ 1];
            io.gen = cycle + 1;
            io.cycle = cycle;
            // Decided before stepping: `next_check` only changes after the
            // barrier of a measuring cycle, so every worker sees the same.
            let measuring = self.measuring(cycle);
            match catch_unwind(AssertUnwindSafe(|| {
                self.step_cycle(t, cycle, p, measuring, &mut io)
            })) {
                Ok(n) => out.processes = n,
                Err(payload) => {
                    let message = panic_message(payload.as_ref());
                    // SAFETY: `sink` is this worker's; no process is stepping.
                    let site = unsafe { (*io.sink).panicked.take() };
                    io.record(Fault::Panicked {
                        cycle,
                        process: site.unwrap_or(io.cur),
                        message,
                    });
                }
            }
            // SAFETY: `sink` is this worker's; no process is stepping.
            let sink = unsafe { &mut *io.sink };
            if sink.halted {
                sink.halted = false;
                self.halted.store(true, Ordering::Relaxed);
                // Relaxed: read by the others after the cycle barrier, which
                // orders it (the barrier's release/acquire).
                self.stop_at.fetch_min(cycle, Ordering::Relaxed);
            }
            if let Some(f) = sink.fault.take() {
                self.add_fault(f);
                self.stop_at.fetch_min(cycle, Ordering::Relaxed);
            }
            if self.threads > 1 && self.barrier.wait().slept {
                out.sleeps += 1;
            }
            if t == 0 && self.tracing {
                self.record_trace(cycle, p);
            }
            out.done = cycle + 1;
            if self.stop_at.load(Ordering::Relaxed) <= cycle {
                break;
            }
            if measuring {
                self.rebalance(t, cycle);
            }
            cycle += 1;
        }
        out.end_tick = clock.now();
        out
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}

fn default_chunk(n: u32, threads: usize) -> u32 {
    (n / (threads as u32 * CHUNKS_PER_THREAD)).clamp(1, MAX_DEFAULT_CHUNK)
}

fn plan(net: &Network, exec: &Executor) -> Plan {
    let n = net.names.len() as u32;
    let t = exec.threads;
    let kb = &net.kind_base;
    match exec.kind {
        ExecutorKind::Sequential | ExecutorKind::Static => Plan::Fixed {
            parts: even_ranges(n, t)
                .into_iter()
                .map(|r| chunks_of(kb, r, u32::MAX))
                .collect(),
        },
        ExecutorKind::ThesisStatic => Plan::Fixed {
            parts: floor_ranges(n, t)
                .into_iter()
                .map(|r| chunks_of(kb, r, u32::MAX))
                .collect(),
        },
        ExecutorKind::Worklist | ExecutorKind::ThesisWorklist => {
            let size = match exec.kind {
                ExecutorKind::ThesisWorklist => 1,
                _ => exec.chunk.unwrap_or_else(|| default_chunk(n, t)),
            };
            Plan::Worklist {
                chunks: chunks_of(kb, 0..n, size),
                cursors: [Padded(Cursor::new()), Padded(Cursor::new())],
            }
        }
        ExecutorKind::Stealing => {
            let size = exec.chunk.unwrap_or_else(|| default_chunk(n, t));
            let mut chunks = Vec::new();
            let mut homes = Vec::with_capacity(t);
            for r in even_ranges(n, t) {
                let lo = chunks.len() as u32;
                chunks.extend(chunks_of(kb, r, size));
                homes.push(lo..chunks.len() as u32);
            }
            let deques = homes
                .iter()
                .map(|h| {
                    [
                        Padded(RangeDeque::new(h.start, h.end)),
                        Padded(RangeDeque::new(h.start, h.end)),
                    ]
                })
                .collect();
            Plan::Stealing {
                chunks,
                homes,
                deques,
            }
        }
        ExecutorKind::Balanced => {
            let ranges = even_ranges(n, t);
            Plan::Balanced(Balanced {
                parts: UnsafeCell::new(
                    ranges
                        .iter()
                        .map(|r| chunks_of(kb, r.clone(), u32::MAX))
                        .collect(),
                ),
                ranges: UnsafeCell::new(ranges),
                costs: UnsafeCell::new(vec![0; n as usize]),
                next_check: AtomicU64::new(u64::MAX),
                last_check_end: AtomicU64::new(0),
                last_check_cycle: AtomicU64::new(0),
                every: exec.rebalance_every,
                adaptive: exec.adaptive,
                drift: exec.drift,
                rebalances: AtomicU32::new(0),
            })
        }
    }
}

/// The spec the workers are made from. With no CPU set given and more
/// than one worker, the workers are spread over distinct CPUs of the
/// process's own affinity when it has at least one per worker: unpinned,
/// the OS may stack two spinning workers on one CPU for a while, and every
/// cycle then waits for a time slice. With fewer CPUs than workers the
/// spec is left as given (pinning would force sharing).
fn default_placement(exec: &Executor) -> ThreadSpec {
    if exec.threads < 2 || exec.spec.cpus().is_some() {
        return exec.spec.clone();
    }
    match CpuSet::current_affinity() {
        Ok(set) if set.len() >= exec.threads => exec.spec.clone().with_cpus(set),
        _ => exec.spec.clone(),
    }
}

/// Runs `net` for up to `cycles` cycles with `exec`.
pub(crate) fn run(net: &mut Network, exec: &Executor, cycles: u64) -> Result<RunReport, RunError> {
    if net.poisoned {
        return Err(RunError::Poisoned);
    }
    if exec.threads == 0 || exec.threads > MAX_THREADS {
        return Err(RunError::Threads {
            requested: exec.threads,
            max: MAX_THREADS,
        });
    }
    if cycles == 0 {
        return Ok(RunReport::default());
    }
    let tracking = net.debug || net.trace.is_some();
    if tracking {
        net.refresh_undef();
    }
    let mut trace = net.trace.take();
    if let Some(t) = trace.as_mut() {
        let c = net.cycle;
        let q = ((c + 1) & 1) as usize;
        let r = t.begin(net, c, net.bufs[q].as_ptr(), net.undef[q].as_ptr());
        if let Err(e) = r {
            net.trace = trace;
            return Err(RunError::Trace(e));
        }
    }
    let threads = exec.threads;
    let start = net.cycle;
    let shared = Arc::new(Shared {
        raw: RawNet::new(net, tracking),
        plan: plan(net, exec),
        threads,
        barrier: SpinBarrier::new(threads, exec.spin),
        start,
        end: start.saturating_add(cycles),
        stop_at: Padded(AtomicU64::new(u64::MAX)),
        halted: AtomicBool::new(false),
        fault: Mutex::new(None),
        tracing: trace.is_some(),
        trace: Mutex::new(trace),
        trace_error: Mutex::new(None),
        kind_base: net.kind_base.clone(),
        gate: Gate::default(),
        started: AtomicU64::new(0),
    });
    let mut handles = Vec::with_capacity(threads);
    let mut spawn_error = None;
    let base = default_placement(exec);
    for i in 0..threads {
        let spec = base
            .renamed(format!("{}-{i}", exec.spec.name()))
            .pinned_nth(i);
        let sh = shared.clone();
        match spec.spawn(move || sh.worker(i)) {
            Ok(h) => handles.push(h),
            Err(e) => {
                spawn_error = Some(e);
                break;
            }
        }
    }
    shared.gate.open(spawn_error.is_none());
    let mut outs = Vec::with_capacity(threads);
    let mut lost_worker = false;
    for h in handles {
        match h.join() {
            Ok(o) => outs.push(o),
            Err(_) => lost_worker = true,
        }
    }
    // Every worker has been joined: nothing touches the network any more.
    let trace = shared
        .trace
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    net.trace = trace;
    if let Some(e) = spawn_error {
        return Err(RunError::Spawn(e));
    }
    let done = outs.first().map_or(start, |o| o.done);
    net.cycle = done;
    let clock = clock();
    let started = shared.started.load(Ordering::Relaxed);
    let end = outs.iter().map(|o| o.end_tick).max().unwrap_or(started);
    let fault = shared
        .fault
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(f) = fault {
        if matches!(f, Fault::Panicked { .. }) {
            net.poisoned = true;
        }
        return Err(resolve(net, f));
    }
    if lost_worker {
        net.poisoned = true;
        return Err(RunError::Panicked {
            cycle: done,
            process: "(none)".into(),
            message: "a worker thread died outside a process step".into(),
        });
    }
    if let Some(e) = shared
        .trace_error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        return Err(RunError::Trace(e));
    }
    if let Some(t) = net.trace.as_mut() {
        t.flush()?;
    }
    Ok(RunReport {
        cycles: done - start,
        halted: shared.halted.load(Ordering::Relaxed),
        elapsed: Duration::from_nanos(clock.ticks_to_ns(end.saturating_sub(started))),
        rebalances: match &shared.plan {
            Plan::Balanced(b) => b.rebalances.load(Ordering::Relaxed),
            _ => 0,
        },
        last_cycle_processes: outs.iter().map(|o| o.processes).collect(),
        barrier_sleeps: outs.iter().map(|o| o.sleeps).collect(),
    })
}

/// Turns a recorded fault into an error with names.
fn resolve(net: &Network, f: Fault) -> RunError {
    let sig = |s: u32| {
        let m = &net.signals[s as usize];
        (net.buses[m.bus as usize].clone(), m.name.clone())
    };
    let name = |p: u32| {
        net.names
            .get(net.exec_of(p) as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{p}"))
    };
    match f {
        Fault::DoubleWrite {
            cycle,
            process,
            signal,
        } => {
            let (bus, signal) = sig(signal);
            RunError::DoubleWrite {
                cycle,
                process: name(process),
                bus,
                signal,
            }
        }
        Fault::NotOwner {
            cycle,
            process,
            signal,
            owner,
        } => {
            let (bus, signal) = sig(signal);
            RunError::NotOwner {
                cycle,
                process: name(process),
                bus,
                signal,
                owner: name(owner),
            }
        }
        Fault::UndefinedRead {
            cycle,
            process,
            signal,
        } => {
            let (bus, signal) = sig(signal);
            RunError::UndefinedRead {
                cycle,
                process: name(process),
                bus,
                signal,
            }
        }
        Fault::Panicked {
            cycle,
            process,
            message,
        } => RunError::Panicked {
            cycle,
            process: name(process),
            message,
        },
    }
}
