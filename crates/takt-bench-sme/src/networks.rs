//! The thesis's benchmark network: a ring of processes (its Figure 4.1),
//! built with takt-sme, and the hand-written floor the framework is
//! measured against.

use std::hint::black_box;

use takt_sme::{In, Io, Network, NetworkBuilder, Out, Process, Signal, SignalDef};

/// The thesis's divisor workload starts from this value (Listing 2).
const SEED: f64 = 533.635_564_34;

/// Listing 1: read an integer, add one, write it.
struct Incr {
    input: In<i64>,
    output: Out<i64>,
}

impl Process for Incr {
    #[inline(always)]
    fn step(&mut self, io: &mut Io<'_>) {
        let v = io.read(self.input);
        io.write(&self.output, v.wrapping_add(1));
    }
}

/// Listing 2: `divisions` divisions of a double by 3, then Listing 1. The
/// quotient is written to the bus (`work`), so the loop cannot be removed.
struct Divide {
    input: In<i64>,
    output: Out<i64>,
    work: Out<f64>,
    divisions: u32,
}

/// The division chain of Listing 2.
#[inline]
pub fn divide(divisions: u32) -> f64 {
    let mut n = SEED;
    for _ in 0..divisions {
        n /= 3.0;
    }
    n
}

impl Process for Divide {
    #[inline(always)]
    fn step(&mut self, io: &mut Io<'_>) {
        let n = divide(self.divisions);
        let v = io.read(self.input);
        io.write(&self.output, v.wrapping_add(1));
        io.write(&self.work, n);
    }
}

/// A ring network and the signal of its first bus.
pub struct Ring {
    /// The network.
    pub net: Network,
    /// Bus 0's value (to check the ring really ran).
    pub first: Signal<i64>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("net", &self.net).finish()
    }
}

/// The synchronization-dominated ring of `n` processes (Listing 1).
pub fn sync_ring(n: usize) -> Ring {
    let mut b = NetworkBuilder::new();
    let sigs: Vec<_> = (0..n)
        .map(|i| {
            let bus = b.bus(format!("ring{i}")).expect("fresh bus name");
            b.signal(bus, "value", SignalDef::new(0i64))
                .expect("fresh signal")
        })
        .collect();
    for i in 0..n {
        let (input, output) = (sigs[(i + n - 1) % n], sigs[i]);
        b.process(format!("p{i}"), |p| Incr {
            input: p.input(input),
            output: p.output(output),
        })
        .expect("fresh process");
    }
    Ring {
        net: b.build().expect("a ring has one writer per signal"),
        first: sigs[0],
    }
}

/// The compute ring: process `i` does `divisions(i)` divisions per step.
pub fn compute_ring(n: usize, divisions: impl Fn(usize) -> u32) -> Ring {
    let mut b = NetworkBuilder::new();
    let mut values = Vec::with_capacity(n);
    let mut works = Vec::with_capacity(n);
    for i in 0..n {
        let bus = b.bus(format!("ring{i}")).expect("fresh bus name");
        values.push(
            b.signal(bus, "value", SignalDef::new(0i64))
                .expect("fresh signal"),
        );
        works.push(
            b.signal(bus, "work", SignalDef::new(0.0f64))
                .expect("fresh signal"),
        );
    }
    for i in 0..n {
        let (input, output, work) = (values[(i + n - 1) % n], values[i], works[i]);
        b.process(format!("p{i}"), |p| Divide {
            input: p.input(input),
            output: p.output(output),
            work: p.output(work),
            divisions: divisions(i),
        })
        .expect("fresh process");
    }
    Ring {
        net: b.build().expect("a ring has one writer per signal"),
        first: values[0],
    }
}

/// The floor: the same ring as a plain loop over two arrays, no framework.
/// Returns nanoseconds per process-step.
pub fn floor_ring(n: usize, cycles: u64, divisions: impl Fn(usize) -> u32) -> f64 {
    let div: Vec<u32> = (0..n).map(divisions).collect();
    let mut cur = vec![0i64; n];
    let mut next = vec![0i64; n];
    let mut work = vec![0f64; n];
    let compute = div.iter().any(|&d| d > 0);
    let clock = takt_sched::clock();
    let t0 = clock.now();
    for _ in 0..cycles {
        if compute {
            for (w, &d) in work.iter_mut().zip(&div) {
                *w = divide(d);
            }
        }
        next[0] = cur[n - 1].wrapping_add(1);
        for i in 1..n {
            next[i] = cur[i - 1].wrapping_add(1);
        }
        std::mem::swap(&mut cur, &mut next);
        // Keep each cycle's results observable, as a network's bus would.
        black_box(&mut cur);
        black_box(&mut work);
    }
    let ns = clock.ticks_to_ns(clock.now() - t0);
    assert_eq!(cur[0], cycles as i64, "the floor ring ran");
    ns as f64 / (n as f64 * cycles as f64)
}
