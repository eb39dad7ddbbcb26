//! The tokio runtimes the tokio-based peers (kameo, ractor) run on.
//!
//! - [`runtime`]: the run's own runtime, on which the calling thread drives
//!   the benchmark inside `Runtime::block_on` — current-thread for
//!   one-thread rows, two workers for [`Placement::TwoWorkers`].
//! - [`Home`]: a thread of its own for one actor — a current-thread runtime
//!   on a thread made by [`ThreadSpec`], driven until the home is dropped —
//!   for [`Placement::ThreadPerAgent`], tokio's equivalent of takt's
//!   `active_obj` and of an actix `Arbiter` per actor.
//!
//! [`Placement::TwoWorkers`]: super::Placement::TwoWorkers
//! [`Placement::ThreadPerAgent`]: super::Placement::ThreadPerAgent

use takt_sched::{TaktThread, ThreadSpec};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::oneshot;

use super::{PeerError, Placement, Run};

/// The runtime of one run: current-thread, or `workers` workers.
pub(super) fn runtime(run: &Run, workers: usize) -> Result<Runtime, PeerError> {
    let mut builder = if workers <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(workers);
        b
    };
    builder
        .enable_time()
        .thread_name(format!("takt-peer-{}", run.peer))
        .build()
        .map_err(|e| run.setup(format_args!("tokio runtime: {e}")))
}

/// The runtimes of a `ping_pong` run: the driving runtime — two workers
/// for [`Placement::TwoWorkers`] (the players run on it), current-thread
/// otherwise — and, for [`Placement::ThreadPerAgent`], one [`Home`] per
/// player (none otherwise). Drop the homes before the runtime.
pub(super) fn for_ping_pong(
    run: &Run,
    placement: Placement,
) -> Result<(Runtime, Vec<Home>), PeerError> {
    let rt = runtime(
        run,
        if placement == Placement::TwoWorkers {
            2
        } else {
            1
        },
    )?;
    let homes = match placement {
        Placement::ThreadPerAgent => vec![
            Home::new(run, &format!("takt-peer-{}-a", run.peer))?,
            Home::new(run, &format!("takt-peer-{}-b", run.peer))?,
        ],
        _ => Vec::new(),
    };
    Ok((rt, homes))
}

/// A thread running a current-thread runtime until dropped. Tasks spawned
/// on [`handle`](Self::handle) (an actor's task, with the handle entered
/// while the framework spawns it) run on that thread only.
pub(super) struct Home {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<TaktThread<()>>,
}

impl Home {
    /// Starts the thread `name` with its runtime.
    pub(super) fn new(run: &Run, name: &str) -> Result<Home, PeerError> {
        let rt = runtime(run, 1)?;
        let handle = rt.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = ThreadSpec::new(name)
            .spawn(move || {
                // Runs the actors spawned here until the home is dropped
                // (or its sender is), then drops what is left.
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| run.setup(e))?;
        Ok(Home {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The home runtime's handle.
    pub(super) fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panicked home thread has already ended: nothing to clean up.
            let _ = thread.join();
        }
    }
}
