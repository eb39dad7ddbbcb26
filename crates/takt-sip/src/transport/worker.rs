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
use super::wake::Woken;
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

/// The order in which a worker of the INVITE split reads its two sockets
/// (see [`Worker::run_split`]): a pure state machine over "which socket
/// next", tested without sockets.
///
/// It also keeps which sockets this worker *owes* a read until it finds
/// them empty, so that it never waits with a datagram stranded and never
/// probes a socket it does not owe when it could wait instead:
///
/// 1. Both sockets are registered edge-triggered on the shared epoll
///    instance: every arrival puts its socket's event on the instance's
///    ready list (if it is not there already) and wakes one waiter.
/// 2. A worker whose wait returns a socket's event has taken that event
///    off the list: it owes that socket until a receive on it fails with
///    `WouldBlock` (a worker starts owing both).
/// 3. A worker waits only when it owes nothing.
///
/// So a datagram queued on a socket nobody owes arrived after that
/// socket's last `WouldBlock` or event: its event is on the ready list and
/// wakes a waiter, or the next worker to wait returns at once with it.
/// Reading a socket one does not owe is always safe (it only shortens
/// the queue); the order reads the socket it chose first whether owed or
/// not, and the other one only when owed. An idle worker woken for the
/// dialog socket thus makes one failing receive before it waits again,
/// not two.
#[derive(Debug)]
pub(crate) struct DrainOrder {
    /// Dialog datagrams taken in a row.
    streak: u32,
    /// Woken for the INVITE socket: read it first, once.
    invite_first: bool,
    /// Whether this worker owes a read to the dialog socket (`[0]`) and
    /// the INVITE socket (`[1]`): see the type's docs.
    owes: [bool; 2],
}

impl Default for DrainOrder {
    fn default() -> Self {
        DrainOrder {
            streak: 0,
            invite_first: false,
            owes: [true; 2],
        }
    }
}

impl DrainOrder {
    /// Receives the next datagram with `recv(invite)`, which reads the
    /// INVITE socket when `invite` and the dialog socket otherwise, both
    /// without waiting. Returns the datagram and whether it came from the
    /// INVITE socket, `None` when the sockets it read were empty and it
    /// owes neither (the worker may wait), or the first error other than
    /// `WouldBlock`.
    pub(crate) fn next<T>(
        &mut self,
        mut recv: impl FnMut(bool) -> io::Result<T>,
    ) -> io::Result<Option<(T, bool)>> {
        let invite_first =
            std::mem::take(&mut self.invite_first) || self.streak >= super::DIALOG_BURST;
        for (k, invite) in [invite_first, !invite_first].into_iter().enumerate() {
            // the first choice always; the other one only when owed
            if k == 1 && !self.owes[usize::from(invite)] {
                continue;
            }
            match recv(invite) {
                Ok(t) => {
                    self.streak = if invite { 0 } else { self.streak + 1 };
                    return Ok(Some((t, invite)));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.owes[usize::from(invite)] = false;
                }
                Err(e) => return Err(e),
            }
        }
        self.streak = 0;
        Ok(None)
    }

    /// The wait ended with an event of the INVITE socket (`true`) or of
    /// the dialog socket: read that one first, and owe it.
    pub(crate) fn woken_by(&mut self, invite: bool) {
        self.invite_first = invite;
        self.owes[usize::from(invite)] = true;
    }

    /// The worker found a datagram without taking an event (polling), or
    /// cannot tell which socket woke it: it owes both.
    pub(crate) fn owe_both(&mut self) {
        self.owes = [true; 2];
    }
}

/// Everything a worker needs.
pub(crate) struct Worker<H> {
    pub(crate) handler: Arc<H>,
    pub(crate) sock: UdpSocket,
    /// With the INVITE split: the INVITE socket (`sock` is then the dialog
    /// socket, which every send uses).
    pub(crate) invites: Option<UdpSocket>,
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
    ///
    /// With the INVITE split both sockets are drained: the kernel delivers
    /// an ICMP error for a datagram the proxy sent to a socket of the
    /// port's reuseport group chosen by the addresses' hash (the error
    /// path looks the socket up without the packet, so the split program
    /// does not run), which is the INVITE socket about half the time.
    #[cold]
    fn read_errors(&self, buf: &mut [u8]) -> u64 {
        let c = self.clock;
        let mut sink = NetSink::new(&self.sock, None, self.tcp.as_ref(), c);
        let (mut read, mut matched) =
            errqueue::drain(&*self.handler, &self.sock, buf, now_ns(c), &mut sink);
        if let Some(invites) = &self.invites {
            let (r, m) = errqueue::drain(&*self.handler, invites, buf, now_ns(c), &mut sink);
            read += r;
            matched += m;
        }
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
        let mut buf = vec![0u8; self.max_message + 1];
        let mut cmsg = [0u8; CMSG_SPACE];
        let mut scratch = Scratch::new();
        while !self.stopped() {
            let meta =
                match self.recv_spinning(|f| udp::recv_one(&self.sock, &mut buf, &mut cmsg, f)) {
                    Ok(m) => m,
                    Err(e) => {
                        self.recv_failed(&e, &mut buf);
                        continue;
                    }
                };
            self.serve(&meta, &mut buf, &mut scratch, false);
        }
    }

    /// The `shared` model with the INVITE split (see [`super`]'s Overload
    /// section): the dialog socket first, the INVITE socket when the
    /// dialog socket is empty or after [`super::DIALOG_BURST`] dialog
    /// datagrams in a row; after a wait, the socket whose event woke the
    /// worker first (an idle server adds no receive call to a message's
    /// path).
    pub(crate) fn run_split(self) {
        let Some(invites) = self.invites.as_ref() else {
            return self.run_single();
        };
        let mut buf = vec![0u8; self.max_message + 1];
        let mut cmsg = [0u8; CMSG_SPACE];
        let mut scratch = Scratch::new();
        let mut order = DrainOrder::default();
        while !self.stopped() {
            let got = match order.next(|invite| {
                let s = if invite { invites } else { &self.sock };
                udp::recv_one(s, &mut buf, &mut cmsg, libc::MSG_DONTWAIT)
            }) {
                Ok(got) => got,
                Err(e) => {
                    self.recv_failed(&e, &mut buf);
                    continue;
                }
            };
            let Some((meta, invite)) = got else {
                // both empty: prepare, spin, then wait for either
                self.handler.prepare_idle();
                let mut polled = false;
                if self.spin != SpinBudget::NONE {
                    self.spin.spin_until(|| {
                        polled = udp::poll_readable(&self.sock, invites);
                        polled
                    });
                }
                match (&self.wait, polled) {
                    (Some(w), false) => match w.wait() {
                        Some(Woken::Invites) => order.woken_by(true),
                        Some(Woken::Socket) => order.woken_by(false),
                        // the stop event, or interrupted
                        Some(Woken::Stop) | None => order.owe_both(),
                    },
                    _ => order.owe_both(),
                }
                continue;
            };
            self.serve(&meta, &mut buf, &mut scratch, invite);
        }
    }

    /// After a failed receive: nothing for a timeout or an interruption;
    /// an ICMP error reported on the socket: read the error queue;
    /// anything else: back off (never spin).
    fn recv_failed(&self, e: &io::Error, buf: &mut [u8]) {
        if !transient(e) && self.read_errors(buf) == 0 {
            std::thread::sleep(ERROR_BACKOFF);
        }
    }

    /// Handles, times and counts one datagram received into `buf` (from
    /// the INVITE socket when `invite`).
    fn serve(&self, meta: &udp::RxMeta, buf: &mut [u8], scratch: &mut Scratch, invite: bool) {
        let c = self.clock;
        let t_in_real = udp::realtime_ns();
        let before = self.busy.others(self.index);
        self.busy.set(self.index, true);
        let t0 = c.now();
        if meta.truncated || meta.len > self.max_message {
            self.busy.set(self.index, false);
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            st.record_oversized();
            return;
        }
        let mut sink = NetSink::new(&self.sock, None, self.tcp.as_ref(), c);
        let (mut sample, o) =
            self.handle_datagram(&buf[..meta.len], meta, t_in_real, t0, scratch, &mut sink);
        sample.overlapped = before || self.busy.others(self.index);
        self.busy.set(self.index, false);
        let pending = sink.errors_pending;
        let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        st.record(&sample, &o);
        if let Some(d) = meta.drops {
            if invite {
                st.set_invite_socket_drops(u64::from(d));
            } else {
                st.set_socket_drops(u64::from(d));
            }
        }
        drop(st);
        if pending {
            self.read_errors(buf);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Two queues standing in for the sockets: `true` is the INVITE one.
    struct Queues {
        dialog: VecDeque<u32>,
        invites: VecDeque<u32>,
    }

    impl Queues {
        fn recv(&mut self, invite: bool) -> io::Result<u32> {
            let q = if invite {
                &mut self.invites
            } else {
                &mut self.dialog
            };
            q.pop_front()
                .ok_or_else(|| io::Error::from(io::ErrorKind::WouldBlock))
        }
    }

    #[test]
    fn dialog_first_invites_after_a_burst_and_after_their_wake() {
        let burst = super::super::DIALOG_BURST;
        let mut q = Queues {
            dialog: (0..2 * burst + 5).collect(),
            invites: (1000..1003).collect(),
        };
        let mut o = DrainOrder::default();
        let mut got = Vec::new();
        while let Some((m, invite)) = o.next(|i| q.recv(i)).unwrap() {
            got.push((m, invite));
        }
        // a burst of dialog datagrams, one INVITE, another burst, one
        // INVITE, the rest of the dialog ones, then the last INVITE
        let b = burst as usize;
        assert!(got[..b].iter().all(|&(_, i)| !i));
        assert_eq!(got[b], (1000, true));
        assert!(got[b + 1..2 * b + 1].iter().all(|&(_, i)| !i));
        assert_eq!(got[2 * b + 1], (1001, true));
        assert!(got[2 * b + 2..2 * b + 7].iter().all(|&(_, i)| !i));
        assert_eq!(got[2 * b + 7], (1002, true));
        assert_eq!(got.len(), 2 * b + 8);
        // both empty: None, and the streak starts over
        assert!(o.next(|i| q.recv(i)).unwrap().is_none());
        // woken for the INVITE socket: that one first, once
        q.dialog.extend([1, 2]);
        q.invites.extend([7, 8]);
        o.woken_by(true);
        assert_eq!(o.next(|i| q.recv(i)).unwrap(), Some((7, true)));
        assert_eq!(o.next(|i| q.recv(i)).unwrap(), Some((1, false)));
        // an error other than WouldBlock is returned as it is
        let e = o
            .next(|_| Err::<u32, _>(io::Error::from(io::ErrorKind::ConnectionRefused)))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn the_other_socket_is_read_only_when_owed() {
        let burst = super::super::DIALOG_BURST;
        let mut q = Queues {
            dialog: VecDeque::new(),
            invites: VecDeque::new(),
        };
        let mut reads = Vec::new();
        let mut o = DrainOrder::default();
        let next = |o: &mut DrainOrder, q: &mut Queues, reads: &mut Vec<bool>| {
            reads.clear();
            o.next(|i| {
                reads.push(i);
                q.recv(i)
            })
            .unwrap()
        };
        // a new worker owes both sockets
        assert!(next(&mut o, &mut q, &mut reads).is_none());
        assert_eq!(reads, [false, true]);
        // woken for the dialog socket: an INVITE queued meanwhile is left
        // to its own event (one failing receive, not two)
        q.invites.push_back(5);
        o.woken_by(false);
        assert!(next(&mut o, &mut q, &mut reads).is_none());
        assert_eq!(reads, [false]);
        // its event wakes a worker, which owes the INVITE socket until empty
        o.woken_by(true);
        assert_eq!(next(&mut o, &mut q, &mut reads), Some((5, true)));
        assert!(next(&mut o, &mut q, &mut reads).is_none());
        assert_eq!(reads, [false, true]);
        // a burst of dialog datagrams still lets an INVITE in, owed or not
        q.dialog.extend(0..burst + 1);
        q.invites.push_back(9);
        o.woken_by(false);
        for _ in 0..burst {
            assert!(matches!(next(&mut o, &mut q, &mut reads), Some((_, false))));
        }
        assert_eq!(next(&mut o, &mut q, &mut reads), Some((9, true)));
        assert_eq!(next(&mut o, &mut q, &mut reads), Some((burst, false)));
        assert!(next(&mut o, &mut q, &mut reads).is_none());
        assert_eq!(reads, [false]);
        // found by polling (no event taken): both are owed
        q.invites.push_back(3);
        o.owe_both();
        assert_eq!(next(&mut o, &mut q, &mut reads), Some((3, true)));
        assert_eq!(reads, [false, true]);
    }
}
