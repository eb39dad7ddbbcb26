//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use takt_agents::{Config, Runtime};
use takt_sched::SpinBudget;

/// Generous: the tests run on a loaded 2-core machine.
pub const LONG: Duration = Duration::from_secs(30);

pub fn runtime() -> Runtime {
    Runtime::new(Config {
        spin: SpinBudget::from_micros(5),
        ..Config::default()
    })
}

/// Counts down from `n`; waiters block until it reaches 0.
#[derive(Debug)]
pub struct Countdown {
    left: Mutex<u64>,
    cv: Condvar,
}

impl Countdown {
    pub fn new(n: u64) -> Arc<Self> {
        Arc::new(Countdown {
            left: Mutex::new(n),
            cv: Condvar::new(),
        })
    }
    pub fn hit(&self) {
        let mut l = self.left.lock().unwrap();
        *l = l.saturating_sub(1);
        if *l == 0 {
            self.cv.notify_all();
        }
    }
    pub fn wait(&self) -> bool {
        let deadline = Instant::now() + LONG;
        let mut l = self.left.lock().unwrap();
        while *l > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            l = self.cv.wait_timeout(l, deadline - now).unwrap().0;
        }
        true
    }
    pub fn left(&self) -> u64 {
        *self.left.lock().unwrap()
    }
}

/// Polls `f` until it holds or the long timeout passes.
pub fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + LONG;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f()
}

/// Threads of this process.
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}
