//! Worker loops: one function per worker model, each run on a takt-sched
//! thread, and the timed sink they hand the [`Handler`].

use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use takt_sched::{Clock, SpinBudget};

use super::errqueue;
use super::handler::Handler;
use super::tcp::{Conn, Tcp};
use super::udp::{self, Batch, CMSG_SPACE};
use crate::proxy::{Inbound, Scratch, SendError, Sink, Target, Transport};
use crate::stats::{Registry, Sample, WorkerStats};

/// The handlers' clock: TSC-derived nanoseconds.
pub(crate) fn now_ns(c: &Clock) -> u64 {
    c.ticks_to_ns(c.now())
}

/// A sink that sends over UDP (immediately, or queued into a batch) and
/// TCP, and adds up the TSC ticks spent inside send system calls.
pub(crate) struct NetSink<'a> {
    udp: &'a UdpSocket,
    batch: Option<&'a mut Batch>,
    tcp: Option<&'a Arc<Tcp>>,
    /// The TCP connection being read, when a TCP loop handles its message:
    /// responses on it skip the connection table.
    conn: Option<&'a Arc<Conn>>,
    clock: &'a Clock,
    /// Ticks inside send calls.
    pub(crate) send_ticks: u64,
    /// Datagrams queued into the batch.
    pub(crate) queued: usize,
    /// A UDP send met an earlier datagram's ICMP error: the socket's
    /// error queue has entries to read ([`super::errqueue`]).
    pub(crate) errors_pending: bool,
}

impl<'a> NetSink<'a> {
    pub(crate) fn new(
        udp: &'a UdpSocket,
        batch: Option<&'a mut Batch>,
        tcp: Option<&'a Arc<Tcp>>,
        clock: &'a Clock,
    ) -> Self {
        NetSink {
            udp,
            batch,
            tcp,
            conn: None,
            clock,
            send_ticks: 0,
            queued: 0,
            errors_pending: false,
        }
    }

    /// The sink of a TCP loop handling a message from `conn`.
    pub(crate) fn on_conn(mut self, conn: &'a Arc<Conn>) -> Self {
        self.conn = Some(conn);
        self
    }
}

impl Sink for NetSink<'_> {
    fn send_range(
        &mut self,
        to: &Target,
        out: &[u8],
        range: std::ops::Range<usize>,
    ) -> Result<(), SendError> {
        match (to.transport, self.batch.as_mut()) {
            // batched UDP: sent from the worker's held scratch by `flush`
            (Transport::Udp, Some(b)) => {
                b.queue_range(to.addr, range);
                self.queued += 1;
                Ok(())
            }
            _ => self.send(to, &out[range]),
        }
    }

    fn send(&mut self, to: &Target, bytes: &[u8]) -> Result<(), SendError> {
        match to.transport {
            Transport::Tcp => {
                let tcp = self.tcp.ok_or(SendError::NoTransport)?;
                let t0 = self.clock.now();
                let r = tcp.send(self.conn, to, bytes);
                self.send_ticks += self.clock.now().saturating_sub(t0);
                r
            }
            Transport::Udp => {
                if let Some(b) = self.batch.as_mut() {
                    b.queue(to.addr, bytes);
                    self.queued += 1;
                    return Ok(());
                }
                let t0 = self.clock.now();
                let mut r = self.udp.send_to(bytes, to.addr);
                if let Err(e) = &r {
                    if errqueue::maybe_pending(e) {
                        // another datagram's ICMP error, reported (and
                        // cleared) here: this datagram was not sent yet
                        self.errors_pending = true;
                        r = self.udp.send_to(bytes, to.addr);
                    }
                }
                self.send_ticks += self.clock.now().saturating_sub(t0);
                r.map(drop).map_err(|e| match e.raw_os_error() {
                    Some(libc::EMSGSIZE) => SendError::TooLarge,
                    Some(libc::ECONNREFUSED) => SendError::Refused,
                    _ => SendError::Unreachable,
                })
            }
        }
    }
}

/// Which UDP workers are handling a message now: one flag per worker,
/// each alone on its cache line (a worker writes only its own), read by
/// the others outside the timed region. What [`Sample::overlapped`] is
/// made of.
#[derive(Debug)]
pub(crate) struct Busy {
    flags: Box<[BusyFlag]>,
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct BusyFlag(AtomicBool);

impl Busy {
    pub(crate) fn new(workers: usize) -> Busy {
        Busy {
            flags: (0..workers).map(|_| BusyFlag::default()).collect(),
        }
    }

    fn set(&self, me: usize, busy: bool) {
        // Relaxed: a statistic; nothing is published through the flag.
        self.flags[me].0.store(busy, Ordering::Relaxed);
    }

    /// Whether a worker other than `me` is handling a message.
    fn others(&self, me: usize) -> bool {
        self.flags
            .iter()
            .enumerate()
            // Relaxed: see `set`.
            .any(|(i, f)| i != me && f.0.load(Ordering::Relaxed))
    }
}

/// Everything a worker needs.
pub(crate) struct Worker<H> {
    pub(crate) handler: Arc<H>,
    pub(crate) sock: UdpSocket,
    pub(crate) tcp: Option<Arc<Tcp>>,
    pub(crate) stats: Arc<Mutex<WorkerStats>>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) max_message: usize,
    pub(crate) clock: &'static Clock,
    /// How long to poll the socket without blocking before a blocking receive.
    pub(crate) spin: SpinBudget,
    /// The `shared` model's epoll instance when idle workers are woken
    /// last-idle-first ([`super::WakeOrder::Lifo`]); `None`: block in the
    /// receive call itself.
    pub(crate) wait: Option<Arc<super::wake::SharedWait>>,
    /// The workers' busy flags, and this worker's index among them.
    pub(crate) busy: Arc<Busy>,
    pub(crate) index: usize,
}

/// Pause after a receive error that is not a timeout or an interruption.
const ERROR_BACKOFF: Duration = Duration::from_millis(1);

fn transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

impl<H: Handler> Worker<H> {
    fn stopped(&self) -> bool {
        // Acquire pairs with the Release store in Server::stop.
        self.stop.load(Ordering::Acquire)
    }

    /// Reads the socket's error queue (ICMP errors for datagrams sent
    /// from it) into `buf` and hands every entry to the handler
    /// ([`errqueue::drain`]); counts them. Returns the entries read.
    #[cold]
    fn read_errors(&self, buf: &mut [u8]) -> u64 {
        let c = self.clock;
        let mut sink = NetSink::new(&self.sock, None, self.tcp.as_ref(), c);
        let (read, matched) =
            errqueue::drain(&*self.handler, &self.sock, buf, now_ns(c), &mut sink);
        if read > 0 {
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            st.record_icmp_errors(read, matched);
        }
        read
    }

    /// Runs `recv` with `MSG_DONTWAIT`; when nothing is queued, lets the
    /// handler prepare for the next message ([`Handler::prepare_idle`]), polls
    /// again until the spin budget is spent, then receives blocking. The
    /// polling keeps this thread (and its vCPU) awake between messages
    /// that arrive within the budget, at the cost of the CPU it burns.
    fn recv_spinning<T>(
        &self,
        mut recv: impl FnMut(libc::c_int) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut got = None;
        let polled = |got: &mut Option<io::Result<T>>, r: io::Result<T>| match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            r => {
                *got = Some(r);
                true
            }
        };
        // Something queued already: no wait, nothing to prepare.
        if polled(&mut got, recv(libc::MSG_DONTWAIT)) {
            return got.expect("set when polled");
        }
        // Idle: use the gap to load what the next message will touch.
        self.handler.prepare_idle();
        if self.spin != SpinBudget::NONE {
            self.spin
                .spin_until(|| polled(&mut got, recv(libc::MSG_DONTWAIT)));
        }
        got.unwrap_or_else(|| match &self.wait {
            None => recv(0),
            Some(w) => {
                w.wait();
                recv(libc::MSG_DONTWAIT)
            }
        })
    }

    /// `shared` and `reuseport`: one `recvmsg`, handle, send, repeat.
    pub(crate) fn run_single(self) {
        let c = self.clock;
        let mut buf = vec![0u8; self.max_message + 1];
        let mut cmsg = [0u8; CMSG_SPACE];
        let mut scratch = Scratch::new();
        while !self.stopped() {
            let meta =
                match self.recv_spinning(|f| udp::recv_one(&self.sock, &mut buf, &mut cmsg, f)) {
                    Ok(m) => m,
                    Err(e) if transient(&e) => continue,
                    Err(_) => {
                        // an ICMP error reported on the socket: read the
                        // error queue; anything else: never spin
                        if self.read_errors(&mut buf) == 0 {
                            std::thread::sleep(ERROR_BACKOFF);
                        }
                        continue;
                    }
                };
            let t_in_real = udp::realtime_ns();
            let before = self.busy.others(self.index);
            self.busy.set(self.index, true);
            let t0 = c.now();
            if meta.truncated || meta.len > self.max_message {
                self.busy.set(self.index, false);
                let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
                st.record_oversized();
                continue;
            }
            let mut sink = NetSink::new(&self.sock, None, self.tcp.as_ref(), c);
            let (mut sample, o) = self.handle_datagram(
                &buf[..meta.len],
                &meta,
                t_in_real,
                t0,
                &mut scratch,
                &mut sink,
            );
            sample.overlapped = before || self.busy.others(self.index);
            self.busy.set(self.index, false);
            let pending = sink.errors_pending;
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            st.record(&sample, &o);
            if let Some(d) = meta.drops {
                st.set_socket_drops(u64::from(d));
            }
            drop(st);
            if pending {
                self.read_errors(&mut buf);
            }
        }
    }

    /// Hands one received datagram to the handler and times it: K_rcv from the
    /// kernel timestamp to `t_in_real`, T_sip from `t0` (TSC ticks) to now
    /// minus the time `sink` spent inside send calls, which is K_snd.
    #[inline]
    fn handle_datagram(
        &self,
        bytes: &[u8],
        meta: &udp::RxMeta,
        t_in_real: u64,
        t0: u64,
        scratch: &mut Scratch,
        sink: &mut NetSink<'_>,
    ) -> (Sample, crate::proxy::Outcome) {
        let c = self.clock;
        let k_rcv = meta.t_arr_ns.map(|a| t_in_real.saturating_sub(a));
        let o = self.handler.handle(
            &Inbound {
                bytes,
                from: Target {
                    addr: meta.src,
                    transport: Transport::Udp,
                    conn: None,
                },
                now: c.ticks_to_ns(t0),
                queue_delay_ns: k_rcv.unwrap_or(0),
            },
            scratch,
            sink,
        );
        let total = c.ticks_to_ns(c.now().saturating_sub(t0));
        let snd = c.ticks_to_ns(sink.send_ticks);
        let sample = Sample {
            k_rcv_ns: k_rcv,
            t_sip_ns: total.saturating_sub(snd),
            k_snd_ns: snd,
            overlapped: false,
        };
        (sample, o)
    }

    /// `batched`: `recvmmsg` up to `batch` datagrams, handle each (UDP
    /// sends are queued), one `sendmmsg`; K_snd is split over the batch's
    /// messages by the datagrams each queued.
    pub(crate) fn run_batched(self, batch: usize) {
        let c = self.clock;
        let mut rx = Batch::new(batch, self.max_message + 1);
        let mut tx = Batch::new(batch, 1);
        let mut scratch = Scratch::new();
        let mut per_msg: Vec<(Sample, crate::proxy::Outcome, usize)> = Vec::with_capacity(batch);
        let mut quote = vec![0u8; errqueue::QUOTE];
        let mut pending = false;
        while !self.stopped() {
            let n = match self.recv_spinning(|f| rx.recv(&self.sock, f)) {
                Ok(n) => n,
                Err(e) if transient(&e) => continue,
                Err(_) => {
                    if self.read_errors(&mut quote) == 0 {
                        std::thread::sleep(ERROR_BACKOFF);
                    }
                    continue;
                }
            };
            let t_in_real = udp::realtime_ns();
            per_msg.clear();
            let mut oversized = 0;
            let mut drops = None;
            for i in 0..n {
                let meta = rx.meta[i];
                if meta.drops.is_some() {
                    drops = meta.drops;
                }
                if meta.truncated || meta.len > self.max_message {
                    oversized += 1;
                    continue;
                }
                let before = self.busy.others(self.index);
                self.busy.set(self.index, true);
                let t0 = c.now();
                let mut sink = NetSink::new(&self.sock, Some(&mut tx), self.tcp.as_ref(), c);
                // K_snd so far covers only TCP sends; the UDP datagrams this
                // message queued get their share of the sendmmsg below.
                let (mut sample, o) = self.handle_datagram(
                    rx.datagram(i),
                    &meta,
                    t_in_real,
                    t0,
                    &mut scratch,
                    &mut sink,
                );
                sample.overlapped = before || self.busy.others(self.index);
                self.busy.set(self.index, false);
                pending |= sink.errors_pending;
                per_msg.push((sample, o, sink.queued));
                // the ranges just queued stay valid until the flush below
                scratch.hold();
            }
            let total_queued = tx.queued();
            let t0 = c.now();
            if total_queued > 0 {
                pending |= tx.flush(&self.sock, scratch.output()).1;
            }
            scratch.release();
            let snd = c.ticks_to_ns(c.now().saturating_sub(t0));
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            st.record_batch(n);
            for _ in 0..oversized {
                st.record_oversized();
            }
            for (s, o, q) in &mut per_msg {
                if total_queued > 0 {
                    s.k_snd_ns += snd * *q as u64 / total_queued as u64;
                }
                st.record(s, o);
            }
            if let Some(d) = drops {
                st.set_socket_drops(u64::from(d));
            }
            drop(st);
            if std::mem::take(&mut pending) {
                self.read_errors(&mut quote);
            }
        }
    }
}

/// The timer thread: runs the handler's [`Handler::tick`] every `tick`,
/// reads its socket's error queue ([`errqueue`], step 4) and publishes
/// what the handler holds ([`Handler::held`]).
///
/// Its socket is worker 0's (a clone); the errors it reads are counted in
/// that worker's `errors` statistics.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_timer<H: Handler>(
    handler: Arc<H>,
    sock: UdpSocket,
    tcp: Option<Arc<Tcp>>,
    reg: Arc<Registry>,
    errors: Arc<Mutex<WorkerStats>>,
    stop: Arc<AtomicBool>,
    tick: Duration,
    clock: &'static Clock,
) {
    let mut quote = vec![0u8; errqueue::QUOTE];
    // Acquire pairs with the Release store in Server::stop.
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(tick);
        let mut sink = NetSink::new(&sock, None, tcp.as_ref(), clock);
        handler.tick(now_ns(clock), &mut sink);
        let (read, matched) =
            errqueue::drain(&*handler, &sock, &mut quote, now_ns(clock), &mut sink);
        if read > 0 {
            errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record_icmp_errors(read, matched);
        }
        reg.set_transactions(handler.held());
    }
}
