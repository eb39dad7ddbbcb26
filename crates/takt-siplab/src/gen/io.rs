//! The socket layer under a generator thread's UA core: one trait, one
//! implementation per transport (UDP here, TCP in [`super::tcp`]).
//!
//! A thread's loop is the same over either transport: ask which sources
//! have input ([`SideIo::ready`]), take their messages a batch at a time
//! ([`SideIo::recv`]), stage what the UA core polls out ([`SideIo::push`])
//! and send it ([`SideIo::flush`]), then wait ([`SideIo::wait`]). A
//! source is a socket (UDP) or a connection or listener (TCP); a message
//! arrives with the *port* the UA core answers on — the socket's index,
//! or the connection's key — which comes back in its [`Transmit::port`].

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use takt_sip::ua::Transmit;

use super::report::SocketReport;
use super::socket::{Poller, RecvBatch, SendFailures, SendQueue};

/// One batch taken from a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Received {
    /// Messages handed to the caller.
    pub(super) messages: usize,
    /// Whether more may be queued at the source (the batch was full).
    pub(super) more: bool,
}

impl Received {
    pub(super) const NONE: Received = Received {
        messages: 0,
        more: false,
    };
}

/// The sockets of one generator thread.
pub(super) trait SideIo {
    /// The epoll instance over its sources (keys as [`SideIo::recv`]
    /// takes them).
    fn poller(&mut self) -> &mut Poller;

    /// The keys of the sources with input now (no waiting).
    fn ready(&mut self, out: &mut Vec<usize>) {
        self.poller().ready(out);
    }

    /// Waits up to `timeout` for input on any source.
    fn wait(&mut self, timeout: Duration) {
        self.poller().wait(timeout);
    }

    /// Takes one batch from source `key`, handing each whole message to
    /// `handle(bytes, source address, port)`; what cannot be taken
    /// (truncated datagrams, unframable streams, errors) is counted.
    fn recv<F: FnMut(&[u8], SocketAddr, usize)>(&mut self, key: usize, handle: F) -> Received;

    /// Stages `stage[start..start + t.len]` for `t`.
    fn push(&mut self, t: &Transmit, start: usize, stage: &[u8]);

    /// Sends what is staged; ranges refer to `stage`.
    fn flush(&mut self, stage: &[u8]);

    /// Whether bytes are still waiting for the kernel (a full stream
    /// buffer): the caller then waits no longer than a millisecond.
    fn backlog(&self) -> bool {
        false
    }

    /// What the sockets counted.
    fn report(&self) -> SocketReport;
}

/// UDP: a thread's sockets (the UAC's `--ports`, the UAS's one), received
/// with `recvmmsg` and sent with one `sendmmsg` per socket.
#[derive(Debug)]
pub(super) struct UdpIo {
    socks: Vec<UdpSocket>,
    poller: Poller,
    rb: RecvBatch,
    queues: Vec<SendQueue>,
    /// Sockets with something queued.
    touched: Vec<usize>,
    /// The largest drop count seen per socket (the kernel's counter is
    /// cumulative per socket).
    drops: Vec<u32>,
    counts: SocketReport,
    fails: SendFailures,
}

impl UdpIo {
    /// Over `socks`, receiving up to `batch` datagrams per call.
    pub(super) fn new(socks: Vec<UdpSocket>, batch: usize) -> std::io::Result<UdpIo> {
        let poller = Poller::new(&socks)?;
        let n = socks.len();
        Ok(UdpIo {
            socks,
            poller,
            rb: RecvBatch::new(batch),
            queues: (0..n).map(|_| SendQueue::new()).collect(),
            touched: Vec::with_capacity(n),
            drops: vec![0; n],
            counts: SocketReport::default(),
            fails: SendFailures::default(),
        })
    }
}

impl SideIo for UdpIo {
    fn poller(&mut self) -> &mut Poller {
        &mut self.poller
    }

    fn recv<F: FnMut(&[u8], SocketAddr, usize)>(&mut self, key: usize, mut handle: F) -> Received {
        match self.rb.recv(&self.socks[key]) {
            Ok(0) => Received::NONE,
            Ok(n) => {
                if let Some(d) = self.rb.drops {
                    self.drops[key] = self.drops[key].max(d);
                }
                for j in 0..n {
                    let (bytes, src, trunc) = self.rb.get(j);
                    if trunc {
                        self.counts.truncated += 1;
                    } else {
                        handle(bytes, src, key);
                    }
                }
                Received {
                    messages: n,
                    more: n == self.rb.capacity(),
                }
            }
            Err(_) => {
                self.counts.recv_errors += 1;
                Received::NONE
            }
        }
    }

    fn push(&mut self, t: &Transmit, start: usize, _stage: &[u8]) {
        let q = &mut self.queues[t.port];
        if q.is_empty() {
            self.touched.push(t.port);
        }
        q.push(t.dst, start, t.len);
    }

    fn flush(&mut self, stage: &[u8]) {
        for &i in &self.touched {
            self.queues[i].flush(&self.socks[i], stage, &mut self.fails);
        }
        self.touched.clear();
    }

    fn report(&self) -> SocketReport {
        SocketReport {
            drops: Some(self.drops.iter().map(|&d| u64::from(d)).sum()),
            send_full: self.fails.full,
            send_errors: self.fails.errors,
            ..self.counts
        }
    }
}
