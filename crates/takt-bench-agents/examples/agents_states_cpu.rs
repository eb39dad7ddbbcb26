//! Where a slow `process_state_changes` run lost its time: per run, the
//! process phase's wall time per message beside the dispatcher thread's
//! own CPU time over the same phase (`CLOCK_THREAD_CPUTIME_ID`, read in the
//! handlers after the phase's clock has been read).
//!
//! - wall ≈ on-CPU, both at the usual figure: a normal run;
//! - wall above on-CPU: the thread was off its CPU for the difference
//!   (another task shared the CPU);
//! - on-CPU itself above the usual figure, wall ≈ on-CPU: the thread ran the
//!   whole phase but each message took longer (the processor was slower
//!   for it, e.g. by what else ran on its core outside this machine).
//!
//! The agent is the suite's (one message type with a handler in each of
//! ten states, each handler moving to the next state, the messages sent
//! by the agent to itself first). With `shared`, every state's handler
//! is one and the same function, which reads the state to find the next:
//! the same work and state changes, but the handler call's target no
//! longer changes from one message to the next, so the processor can
//! predict it; the difference between the two is what the suite's
//! rotating targets cost. Arguments: `[runs] [messages] [shared]`
//! (default 20 runs of 100,000, ten handlers). One line per run: `wall W
//! on_cpu C off_cpu O` in ns/msg.

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Instant;

use takt_agents::{Agent, Config, Ctx, Definer, Runtime, State};

struct Tick;
struct Go;

const STATES: u16 = 10;

/// One run's process phase: (wall, on-CPU) nanoseconds.
type Phase = (u64, u64);

/// The suite's agent: a handler of its own in each state.
struct Stately {
    n: u64,
    processed: u64,
    start: Option<(Instant, u64)>,
    done: mpsc::Sender<Phase>,
}

/// The same agent with one handler function for every state (`shared`).
struct Shared(Stately);

/// The calling thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant the kernel knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Stately {
    /// Sends the `n` messages, then starts the phase's clocks.
    fn go<A: Agent>(&mut self, ctx: &mut Ctx<A>) {
        for _ in 0..self.n {
            ctx.send_self(Tick);
        }
        // CPU clock first, so the wall clock's phase is inside the CPU one.
        let cpu = thread_cpu_ns();
        self.start = Some((Instant::now(), cpu));
    }

    /// One message handled; the last one reads the clocks.
    fn handled(&mut self) {
        self.processed += 1;
        if self.processed == self.n {
            let (t0, cpu0) = self.start.take().expect("set after sending");
            let wall = t0.elapsed().as_nanos() as u64;
            let cpu = thread_cpu_ns() - cpu0;
            let _ = self.done.send((wall, cpu));
        }
    }
}

fn on_tick<const I: u16>(me: &mut Stately, ctx: &mut Ctx<Stately>, _: Tick) {
    ctx.change_state(State::new((I + 1) % STATES));
    me.handled();
}

fn on_any(me: &mut Shared, ctx: &mut Ctx<Shared>, _: Tick) {
    let next = (ctx.state().id() + 1) % STATES;
    ctx.change_state(State::new(next));
    me.0.handled();
}

impl Agent for Stately {
    fn define(def: &mut Definer<Self>) {
        def.state(State::new(0)).on(on_tick::<0>);
        def.state(State::new(1)).on(on_tick::<1>);
        def.state(State::new(2)).on(on_tick::<2>);
        def.state(State::new(3)).on(on_tick::<3>);
        def.state(State::new(4)).on(on_tick::<4>);
        def.state(State::new(5)).on(on_tick::<5>);
        def.state(State::new(6)).on(on_tick::<6>);
        def.state(State::new(7)).on(on_tick::<7>);
        def.state(State::new(8)).on(on_tick::<8>);
        def.state(State::new(9)).on(on_tick::<9>);
        def.on(|me: &mut Stately, ctx: &mut Ctx<Stately>, _: Go| me.go(ctx));
    }
}

impl Agent for Shared {
    fn define(def: &mut Definer<Self>) {
        for s in 0..STATES {
            def.state(State::new(s)).on(on_any);
        }
        def.on(|me: &mut Shared, ctx: &mut Ctx<Shared>, _: Go| me.0.go(ctx));
    }
}

fn run(n: u64, shared: bool) -> Result<Phase, Box<dyn std::error::Error>> {
    let rt = Runtime::new(Config::default());
    let disp = rt.one_thread("states")?;
    let (tx, rx) = mpsc::channel();
    let mut coop = rt.coop("states");
    let agent = Stately {
        n,
        processed: 0,
        start: None,
        done: tx,
    };
    if shared {
        let a = coop.add(Shared(agent), &disp)?;
        coop.register()?;
        a.send(Go);
    } else {
        let a = coop.add(agent, &disp)?;
        coop.register()?;
        a.send(Go);
    }
    let phase = rx.recv()?;
    rt.shutdown();
    Ok(phase)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut num = |default: u64| match args.next().map_or(Ok(default), |s| s.parse::<u64>()) {
        Ok(v) if v > 0 => Some(v),
        _ => None,
    };
    let (Some(runs), Some(n)) = (num(20), num(100_000)) else {
        eprintln!("usage: agents_states_cpu [runs >= 1] [messages >= 1] [shared]");
        return ExitCode::from(2);
    };
    let shared = match args.next().as_deref() {
        None => false,
        Some("shared") => true,
        Some(other) => {
            eprintln!("agents_states_cpu: unknown variant {other:?}: expected shared");
            return ExitCode::from(2);
        }
    };
    // One warm-up run (behaviour compiled, code and allocator warm).
    for k in 0..=runs {
        match run(n, shared) {
            Ok(_) if k == 0 => {}
            Ok((wall, cpu)) => {
                let per = |ns: u64| ns as f64 / n as f64;
                println!(
                    "wall {:.2} on_cpu {:.2} off_cpu {:.2}",
                    per(wall),
                    per(cpu),
                    per(wall.saturating_sub(cpu))
                );
            }
            Err(e) => {
                eprintln!("agents_states_cpu: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
