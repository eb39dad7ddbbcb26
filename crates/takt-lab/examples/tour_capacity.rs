//! The README's tour: the capacity laboratory's search as a library. The
//! search asks for trials at rates of its choosing — ramp, bisection, then
//! a grid with repetitions — and finds the highest rate whose drop rate
//! stays under the threshold with its confidence bound. Any load can be
//! plugged in through [`Trial`]; `takt sip capacity` plugs in the native
//! SIP generator against a started proxy. Here a modelled server that
//! sheds calls above 12,000 calls/s stands in for it.
//!
//! `cargo run --release -p takt-lab --example tour_capacity`

use std::convert::Infallible;

use takt_siplab::search::{run, Search, SearchConfig, Trial, TrialOutcome};

/// A server that carries 12,000 calls/s and drops the excess.
struct Modelled {
    capacity_cps: f64,
}

impl Trial for Modelled {
    type Error = Infallible;

    fn trial(&mut self, rate_cps: f64) -> Result<TrialOutcome, Infallible> {
        // one second of calls, seven messages each
        let sent = (rate_cps * 7.0) as u64;
        let excess = (rate_cps - self.capacity_cps).max(0.0) / rate_cps;
        Ok(TrialOutcome {
            offered_cps: rate_cps,
            achieved_cps: rate_cps,
            sent,
            lost: (sent as f64 * excess) as u64,
            ..TrialOutcome::default()
        })
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = SearchConfig {
        threshold: 0.01, // 1% of messages lost
        reps: 3,
        ..SearchConfig::default()
    };
    let mut search = Search::new(cfg)?;
    let result = run(
        &mut search,
        &mut Modelled {
            capacity_cps: 12_000.0,
        },
    )?;
    for p in &result.grid {
        println!("{:>8.0} cps: drop rate {:.4}", p.rate_cps, p.drop_rate);
    }
    let capacity = result.capacity.ok_or("the search did not finish")?;
    println!(
        "capacity: {capacity} calls/s after {} trials",
        result.trials.len()
    );
    Ok(())
}
