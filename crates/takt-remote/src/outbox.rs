//! The bridge's inbox of work: a bounded queue from any thread to the
//! bridge thread that wakes the bridge only when it is waiting.
//!
//! Agents' sends, queries and replies cross to the bridge here. The bridge
//! runs on a current-thread tokio runtime, and waking it from another
//! thread costs a system call (the runtime's eventfd) and, when the thread
//! sleeps, a context switch. A busy bridge takes everything queued in one
//! batch per turn and needs no wake-up at all.
//!
//! ## Protocol
//! 1. A producer locks the queue, appends, takes the `waiting` flag
//!    (leaving it false), unlocks, and — only if the flag was set — calls
//!    `Notify::notify_one`.
//! 2. The bridge, in [`Outbox::take`], locks the queue and swaps its whole
//!    content into a batch of its own; if there was nothing, it sets
//!    `waiting` before unlocking.
//! 3. The bridge then awaits [`Outbox::wake`] (among its other events).
//!
//! Why no wake-up is lost: `waiting` and the queue change under one lock,
//! so a producer either appends before step 2 (the bridge takes the item)
//! or after it (the producer sees `waiting` and notifies). `Notify` keeps
//! a permit when nobody awaits yet, so a notification between steps 2 and
//! 3 still ends step 3. A stale permit costs one spurious turn, no more.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

/// Why an item was not queued; the item comes back.
#[derive(Debug)]
pub(crate) enum PushError<T> {
    /// The queue holds its capacity.
    Full(T),
    /// The bridge has stopped.
    Closed(T),
}

#[derive(Debug)]
struct State<T> {
    items: VecDeque<T>,
    /// The bridge found the queue empty and waits for a notification.
    waiting: bool,
    /// The bridge has stopped: nothing more is accepted.
    closed: bool,
}

/// A bounded multi-producer queue to the bridge; see the module docs.
#[derive(Debug)]
pub(crate) struct Outbox<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    capacity: usize,
}

impl<T> Outbox<T> {
    /// An empty queue that holds up to `capacity` bounded items.
    pub(crate) fn new(capacity: usize) -> Outbox<T> {
        Outbox {
            state: Mutex::new(State {
                items: VecDeque::new(),
                waiting: false,
                closed: false,
            }),
            notify: Notify::new(),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `item` unless the queue holds its capacity; never blocks.
    pub(crate) fn push(&self, item: T) -> Result<(), PushError<T>> {
        self.push_inner(item, true)
    }

    /// Appends `item` even past the capacity (replies to queries the bridge
    /// already accepted: their number is bounded by those queries).
    pub(crate) fn push_unbounded(&self, item: T) -> Result<(), PushError<T>> {
        self.push_inner(item, false)
    }

    fn push_inner(&self, item: T, bounded: bool) -> Result<(), PushError<T>> {
        let mut s = self.lock();
        if s.closed {
            return Err(PushError::Closed(item));
        }
        if bounded && s.items.len() >= self.capacity {
            return Err(PushError::Full(item));
        }
        s.items.push_back(item);
        let wake = std::mem::take(&mut s.waiting);
        drop(s);
        if wake {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// Moves everything queued into `batch` (which the bridge keeps and
    /// reuses); returns whether anything came. When nothing did, the next
    /// push notifies [`wake`](Self::wake).
    pub(crate) fn take(&self, batch: &mut VecDeque<T>) -> bool {
        let mut s = self.lock();
        if s.items.is_empty() {
            s.waiting = true;
            return false;
        }
        std::mem::swap(&mut s.items, batch);
        true
    }

    /// Completes after a push that found the bridge waiting (or at once if
    /// one already happened since the last wake).
    pub(crate) async fn wake(&self) {
        self.notify.notified().await
    }

    /// Refuses every later push and returns what is still queued.
    pub(crate) fn close(&self) -> VecDeque<T> {
        let mut s = self.lock();
        s.closed = true;
        std::mem::take(&mut s.items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn bounded_push_refuses_past_capacity_and_replies_still_fit() {
        let q = Outbox::new(2);
        assert!(q.push(1).is_ok());
        assert!(q.push(2).is_ok());
        assert!(matches!(q.push(3), Err(PushError::Full(3))));
        assert!(q.push_unbounded(4).is_ok());
        let mut batch = VecDeque::new();
        assert!(q.take(&mut batch));
        assert_eq!(batch, [1, 2, 4]);
        batch.clear();
        assert!(!q.take(&mut batch));
        assert!(q.push(5).is_ok());
        assert_eq!(q.close(), [5]);
        assert!(matches!(q.push(6), Err(PushError::Closed(6))));
    }

    /// Every item pushed from other threads reaches a bridge that sleeps
    /// whenever it finds the queue empty: no wake-up is lost.
    #[test]
    fn no_wake_up_is_lost() {
        const PER_THREAD: usize = 20_000;
        let q = Arc::new(Outbox::new(usize::MAX));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let producers: Vec<_> = (0..2)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        q.push(t * PER_THREAD + i).unwrap();
                        if i % 1000 == 0 {
                            std::thread::sleep(Duration::from_micros(50));
                        }
                    }
                })
            })
            .collect();
        let got = rt.block_on(async {
            let mut got = Vec::new();
            let mut batch = VecDeque::new();
            while got.len() < 2 * PER_THREAD {
                if q.take(&mut batch) {
                    got.extend(batch.drain(..));
                } else {
                    tokio::time::timeout(Duration::from_secs(10), q.wake())
                        .await
                        .expect("a push found the bridge waiting and did not wake it");
                }
            }
            got
        });
        for p in producers {
            p.join().unwrap();
        }
        // Per producer, in order.
        for t in 0..2 {
            let mine: Vec<_> = got.iter().filter(|&&x| x / PER_THREAD == t).collect();
            assert_eq!(mine.len(), PER_THREAD);
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
