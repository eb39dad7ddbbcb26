//! Presence: which nodes are up, what they export, and NodeDown.
//!
//! Every node publishes a [`Presence`] announcement on
//! `<cluster>.presence` when it starts, after each export, and then every
//! heartbeat interval; a node that closes announces `leaving`. Every node
//! keeps a [`Directory`] of the announcements it heard. A peer whose last
//! announcement is older than its own `heartbeat × missed_heartbeats` is
//! down: the directory marks it so (sends to it then fail at once and are
//! counted undeliverable) and its watchers receive [`NodeEvent::Down`].
//! The check runs ten times per heartbeat interval, so NodeDown arrives at
//! most a tenth of an interval after the third missed heartbeat's due
//! time. A later announcement brings it back ([`NodeEvent::Up`]).
//!
//! This notices a crashed process and a host that falls silent alike; NATS
//! itself notices a dead TCP peer only after its ping interval (minutes).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use takt_agents::Recipient;

/// One node's announcement (postcard on the wire).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Presence {
    pub(crate) node: String,
    pub(crate) incarnation: u64,
    pub(crate) heartbeat_us: u64,
    pub(crate) missed: u32,
    pub(crate) exports: Vec<String>,
    pub(crate) leaving: bool,
}

/// A change in a peer's presence, delivered to watchers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// The node announced itself (first time, or back after being down).
    Up {
        /// The node's name.
        node: String,
    },
    /// The node missed its heartbeats or left.
    Down {
        /// The node's name.
        node: String,
        /// Whether it said so (`leaving`) rather than fell silent.
        left: bool,
    },
}

/// What one node knows about a peer.
#[derive(Debug)]
pub(crate) struct Peer {
    pub(crate) name: String,
    /// Read on every send to the peer; written by the bridge thread.
    pub(crate) up: AtomicBool,
    state: Mutex<PeerState>,
}

#[derive(Debug)]
struct PeerState {
    incarnation: u64,
    last_seen: Instant,
    down_after: Duration,
    exports: Vec<String>,
}

impl Peer {
    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }
}

/// The peers this node heard of, and the watchers of their changes.
#[derive(Default)]
pub(crate) struct Directory {
    peers: Mutex<HashMap<String, Arc<Peer>>>,
    changed: Condvar,
    watchers: Mutex<Vec<Recipient<NodeEvent>>>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory").finish_non_exhaustive()
    }
}

impl Directory {
    /// Records an announcement heard at `now`; returns the event it causes.
    pub(crate) fn heard(&self, p: Presence, now: Instant) -> Option<NodeEvent> {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let down_after = Duration::from_micros(p.heartbeat_us) * p.missed.max(1);
        let ev = match peers.get(&p.node) {
            Some(peer) => {
                let mut s = peer.state.lock().unwrap_or_else(|e| e.into_inner());
                if p.leaving {
                    if s.incarnation != p.incarnation {
                        return None; // an old incarnation leaving says nothing of the new
                    }
                    s.exports.clear();
                    let was_up = peer.up.swap(false, Ordering::AcqRel);
                    was_up.then(|| NodeEvent::Down {
                        node: p.node.clone(),
                        left: true,
                    })
                } else {
                    s.incarnation = p.incarnation;
                    s.last_seen = now;
                    s.down_after = down_after;
                    s.exports = p.exports;
                    let was_up = peer.up.swap(true, Ordering::AcqRel);
                    (!was_up).then(|| NodeEvent::Up {
                        node: p.node.clone(),
                    })
                }
            }
            None if p.leaving => None,
            None => {
                peers.insert(
                    p.node.clone(),
                    Arc::new(Peer {
                        name: p.node.clone(),
                        up: AtomicBool::new(true),
                        state: Mutex::new(PeerState {
                            incarnation: p.incarnation,
                            last_seen: now,
                            down_after,
                            exports: p.exports,
                        }),
                    }),
                );
                Some(NodeEvent::Up { node: p.node })
            }
        };
        drop(peers);
        self.changed.notify_all();
        ev
    }

    /// Marks peers silent for longer than their limit as down at `now`;
    /// returns the events.
    pub(crate) fn expire(&self, now: Instant) -> Vec<NodeEvent> {
        let peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for peer in peers.values() {
            if !peer.is_up() {
                continue;
            }
            let s = peer.state.lock().unwrap_or_else(|e| e.into_inner());
            if now.saturating_duration_since(s.last_seen) > s.down_after {
                peer.up.store(false, Ordering::Release);
                out.push(NodeEvent::Down {
                    node: peer.name.clone(),
                    left: false,
                });
            }
        }
        out
    }

    /// The peer named `node`, known or not yet (a placeholder that is down
    /// until it announces itself).
    pub(crate) fn peer(&self, node: &str) -> Arc<Peer> {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers
            .entry(node.to_string())
            .or_insert_with(|| {
                Arc::new(Peer {
                    name: node.to_string(),
                    up: AtomicBool::new(false),
                    state: Mutex::new(PeerState {
                        incarnation: 0,
                        last_seen: Instant::now(),
                        down_after: Duration::ZERO,
                        exports: Vec::new(),
                    }),
                })
            })
            .clone()
    }

    /// Waits until an up peer exports `name` (or `deadline` passes).
    pub(crate) fn find(&self, name: &str, deadline: Instant) -> Option<Arc<Peer>> {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let hit = peers.values().find(|p| {
                p.is_up()
                    && p.state
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .exports
                        .iter()
                        .any(|e| e == name)
            });
            if let Some(p) = hit {
                return Some(p.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            peers = self
                .changed
                .wait_timeout(peers, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits until `node` is up (or `deadline` passes); returns whether it is.
    pub(crate) fn wait_up(&self, node: &str, deadline: Instant) -> bool {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if peers.get(node).is_some_and(|p| p.is_up()) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            peers = self
                .changed
                .wait_timeout(peers, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The names of the peers up now.
    pub(crate) fn up(&self) -> Vec<String> {
        let peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = peers
            .values()
            .filter(|p| p.is_up())
            .map(|p| p.name.clone())
            .collect();
        v.sort();
        v
    }

    pub(crate) fn watch(&self, r: Recipient<NodeEvent>) {
        self.watchers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r);
    }

    /// Hands `ev` to every open watcher (dropping closed ones).
    pub(crate) fn notify(&self, ev: NodeEvent) {
        let mut w = self.watchers.lock().unwrap_or_else(|e| e.into_inner());
        w.retain(|r| r.is_open());
        for r in w.iter() {
            r.send(ev.clone());
        }
        drop(w);
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(node: &str, leaving: bool) -> Presence {
        Presence {
            node: node.into(),
            incarnation: 1,
            heartbeat_us: 100_000,
            missed: 3,
            exports: vec!["svc".into()],
            leaving,
        }
    }

    #[test]
    fn up_down_and_back_on_virtual_time() {
        let d = Directory::default();
        let t0 = Instant::now();
        let up = |n: &str| NodeEvent::Up { node: n.into() };
        assert_eq!(d.heard(p("a", false), t0), Some(up("a")));
        assert_eq!(d.heard(p("a", false), t0), None);
        assert!(d.expire(t0 + Duration::from_millis(300)).is_empty());
        assert_eq!(
            d.expire(t0 + Duration::from_millis(301)),
            vec![NodeEvent::Down {
                node: "a".into(),
                left: false
            }]
        );
        assert!(!d.peer("a").is_up());
        assert!(d.find("svc", Instant::now()).is_none());
        assert_eq!(d.heard(p("a", false), t0), Some(up("a")));
        assert!(d.find("svc", Instant::now()).is_some());
        assert_eq!(
            d.heard(p("a", true), t0),
            Some(NodeEvent::Down {
                node: "a".into(),
                left: true
            })
        );
        assert_eq!(d.up(), Vec::<String>::new());
        // A placeholder is down until it announces itself.
        assert!(!d.peer("b").is_up());
    }
}
