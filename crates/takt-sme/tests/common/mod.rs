//! Networks shared by the integration tests.
#![allow(dead_code)]

use takt_sme::*;

/// SplitMix64: a tiny seeded generator, so tests need no dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Listing 1 of the thesis: read, add one, write.
pub struct Incr {
    pub input: In<i64>,
    pub output: Out<i64>,
}

impl Process for Incr {
    fn step(&mut self, io: &mut Io<'_>) {
        let v = io.read(self.input);
        io.write(&self.output, v.wrapping_add(1));
    }
}

/// A ring of `n` incrementers; returns the network and its signals.
pub fn ring(n: usize) -> (Network, Vec<Signal<i64>>) {
    let mut b = NetworkBuilder::new();
    let sigs: Vec<_> = (0..n)
        .map(|i| {
            let bus = b.bus(format!("ring{i}")).unwrap();
            b.signal(bus, "value", SignalDef::new(0i64).initial(i as i64 * 1000))
                .unwrap()
        })
        .collect();
    for i in 0..n {
        let (input, output) = (sigs[(i + n - 1) % n], sigs[i]);
        b.process(format!("p{i}"), |p| Incr {
            input: p.input(input),
            output: p.output(output),
        })
        .unwrap();
    }
    (b.build().unwrap(), sigs)
}

/// Emits a pseudo-random value on some cycles only (so policies matter).
struct Source {
    out: Out<u32>,
    valid: Out<bool>,
    state: u64,
}

impl Process for Source {
    fn step(&mut self, io: &mut Io<'_>) {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v = (self.state >> 33) as u32;
        if !v.is_multiple_of(3) {
            io.write(&self.out, v);
            io.write(&self.valid, true);
        }
    }
}

/// One stage of a delay line: a register.
struct Delay {
    input: In<u32>,
    valid_in: In<bool>,
    out: Out<u32>,
    valid_out: Out<bool>,
}

impl Process for Delay {
    fn step(&mut self, io: &mut Io<'_>) {
        if io.read(self.valid_in) {
            let v = io.read(self.input);
            io.write(&self.out, v);
            io.write(&self.valid_out, true);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub count: u32,
    pub mean: f64,
}

/// Accumulates what leaves the delay line.
struct Sink {
    input: In<u32>,
    valid: In<bool>,
    stats_in: In<Stats>,
    stats: Out<Stats>,
}

impl Process for Sink {
    fn step(&mut self, io: &mut Io<'_>) {
        if io.read(self.valid) {
            let v = io.read(self.input) as f64;
            let s = io.read(self.stats_in);
            let count = s.count + 1;
            io.write(
                &self.stats,
                Stats {
                    count,
                    mean: s.mean + (v - s.mean) / count as f64,
                },
            );
        }
    }
}

/// Source → `stages` registers (held values, reset valid flags) → sink.
pub fn pipeline(stages: usize) -> (Network, Signal<Stats>) {
    let mut b = NetworkBuilder::new();
    let mut data = Vec::new();
    let mut valid = Vec::new();
    for i in 0..=stages {
        let bus = b.bus(format!("stage{i}")).unwrap();
        data.push(b.signal(bus, "data", SignalDef::new(0u32).hold()).unwrap());
        valid.push(b.signal(bus, "valid", SignalDef::new(false)).unwrap());
    }
    let out_bus = b.bus("result").unwrap();
    let stats = b
        .signal(
            out_bus,
            "stats",
            SignalDef::new(Stats {
                count: 0,
                mean: 0.0,
            })
            .hold(),
        )
        .unwrap();
    b.process("source", |p| Source {
        out: p.output(data[0]),
        valid: p.output(valid[0]),
        state: 42,
    })
    .unwrap();
    for i in 0..stages {
        b.process(format!("delay{i}"), |p| Delay {
            input: p.input(data[i]),
            valid_in: p.input(valid[i]),
            out: p.output(data[i + 1]),
            valid_out: p.output(valid[i + 1]),
        })
        .unwrap();
    }
    b.process("sink", |p| Sink {
        input: p.input(data[stages]),
        valid: p.input(valid[stages]),
        stats_in: p.input(stats),
        stats: p.output(stats),
    })
    .unwrap();
    (b.build().unwrap(), stats)
}

struct Counter {
    out: Out<i64>,
    n: i64,
}
impl Process for Counter {
    fn step(&mut self, io: &mut Io<'_>) {
        self.n += 1;
        io.write(&self.out, self.n);
    }
}
struct Double {
    input: In<i64>,
    out: Out<i64>,
}
impl Process for Double {
    fn step(&mut self, io: &mut Io<'_>) {
        let v = io.read(self.input);
        io.write(&self.out, v * 2);
    }
}
struct Root {
    input: In<i64>,
    out: Out<f64>,
}
impl Process for Root {
    fn step(&mut self, io: &mut Io<'_>) {
        let v = io.read(self.input) as f64;
        io.write(&self.out, v.sqrt());
    }
}
struct Join {
    a: In<i64>,
    b: In<f64>,
    out: Out<f64>,
    halt_above: f64,
}
impl Process for Join {
    fn step(&mut self, io: &mut Io<'_>) {
        let v = io.read(self.a) as f64 + io.read(self.b);
        io.write(&self.out, v);
        if v > self.halt_above {
            io.halt();
        }
    }
}

/// `width` diamonds side by side: counter → (double, root) → join. A join
/// halts the network once its sum exceeds `halt_above`.
pub fn diamond(width: usize, halt_above: f64) -> (Network, Vec<Signal<f64>>) {
    let mut b = NetworkBuilder::new();
    let mut outs = Vec::new();
    for w in 0..width {
        let bus = b.bus(format!("d{w}")).unwrap();
        let top = b.signal(bus, "top", SignalDef::new(0i64)).unwrap();
        let left = b.signal(bus, "left", SignalDef::new(0i64)).unwrap();
        let right = b.signal(bus, "right", SignalDef::new(0.0f64)).unwrap();
        let bottom = b
            .signal(
                bus,
                "bottom",
                SignalDef::new(0.0f64).initially_undefined().hold(),
            )
            .unwrap();
        b.process(format!("counter{w}"), |p| Counter {
            out: p.output(top),
            n: w as i64,
        })
        .unwrap();
        b.process(format!("double{w}"), |p| Double {
            input: p.input(top),
            out: p.output(left),
        })
        .unwrap();
        b.process(format!("root{w}"), |p| Root {
            input: p.input(top),
            out: p.output(right),
        })
        .unwrap();
        b.process(format!("join{w}"), |p| Join {
            a: p.input(left),
            b: p.input(right),
            out: p.output(bottom),
            halt_above,
        })
        .unwrap();
        outs.push(bottom);
    }
    (b.build().unwrap(), outs)
}

/// A process with random fan-in that writes its outputs only sometimes.
struct Mix {
    inputs: Vec<In<u64>>,
    outs: Vec<Out<u64>>,
    salt: u64,
    acc: u64,
}

impl Process for Mix {
    fn step(&mut self, io: &mut Io<'_>) {
        let mut h = self.acc ^ self.salt;
        for &i in &self.inputs {
            h = (h ^ io.read(i)).wrapping_mul(0x100_0000_01B3);
        }
        self.acc = h;
        for (k, o) in self.outs.iter().enumerate() {
            if (h >> k) & 3 != 0 {
                io.write(o, h.rotate_left(k as u32));
            }
        }
    }
}

/// `n` processes, each owning 1–2 signals with random policies and initial
/// values, reading 1–4 random signals. Deterministic for a seed.
pub fn random(n: usize, seed: u64) -> Network {
    let mut rng = Rng::new(seed);
    let mut b = NetworkBuilder::new();
    let mut owned = Vec::new();
    let mut all = Vec::new();
    for i in 0..n {
        let bus = b.bus(format!("r{i}")).unwrap();
        let k = 1 + rng.below(2) as usize;
        let mut mine = Vec::new();
        for j in 0..k {
            let mut def = SignalDef::new(rng.below(100));
            def = match rng.below(3) {
                0 => def,
                1 => def.hold(),
                _ => def.undefined_when_unwritten(),
            };
            if rng.below(2) == 0 {
                def = def.initial(rng.next());
            }
            let s = b.signal(bus, format!("s{j}"), def).unwrap();
            mine.push(s);
            all.push(s);
        }
        owned.push(mine);
    }
    for (i, mine) in owned.into_iter().enumerate() {
        let fan_in = 1 + rng.below(4) as usize;
        let inputs: Vec<_> = (0..fan_in)
            .map(|_| all[rng.below(all.len() as u64) as usize])
            .collect();
        let salt = rng.next();
        b.process(format!("mix{i}"), |p| Mix {
            inputs: inputs.into_iter().map(|s| p.input(s)).collect(),
            outs: mine.into_iter().map(|s| p.output(s)).collect(),
            salt,
            acc: 0,
        })
        .unwrap();
    }
    b.build().unwrap()
}

/// Every executor at 1..=3 threads, sequential first.
pub fn executors() -> Vec<Executor> {
    let mut v = vec![Executor::sequential()];
    for kind in [
        ExecutorKind::Static,
        ExecutorKind::Worklist,
        ExecutorKind::Stealing,
        ExecutorKind::Balanced,
        ExecutorKind::ThesisStatic,
        ExecutorKind::ThesisWorklist,
    ] {
        for t in 1..=3 {
            let mut e = Executor::new(kind, t).with_spin(takt_sched::SpinBudget::from_micros(50));
            if kind == ExecutorKind::Balanced {
                // Re-measure often so re-cutting is exercised too.
                e = e.with_rebalance(7, 1.0);
            }
            if matches!(kind, ExecutorKind::Worklist | ExecutorKind::Stealing) {
                e = e.with_chunk(3);
            }
            v.push(e);
        }
    }
    v
}
