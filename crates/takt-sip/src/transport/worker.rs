//! Worker loops: one function per worker model, each run on a takt-sched
//! thread, and the timed sink they hand the [`Handler`].

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
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

    fn send_leading(&mut self, sends: &[(Target, u32, u32)], out: &[u8]) -> usize {
        let n = sends.len();
        if self.batch.is_some()
            || !(2..=SEND_LEADING_MAX).contains(&n)
            || sends.iter().any(|s| s.0.transport != Transport::Udp)
        {
            return 0;
        }
        // SAFETY: all-zero is a valid sockaddr_storage, iovec and mmsghdr.
        let (mut names, mut iovs, mut hdrs): (
            [libc::sockaddr_storage; SEND_LEADING_MAX],
            [libc::iovec; SEND_LEADING_MAX],
            [libc::mmsghdr; SEND_LEADING_MAX],
        ) = unsafe { std::mem::zeroed() };
        for (i, &(to, a, b)) in sends.iter().enumerate() {
            let bytes = &out[a as usize..b as usize];
            iovs[i] = libc::iovec {
                // sendmmsg only reads through it
                iov_base: bytes.as_ptr().cast_mut().cast(),
                iov_len: bytes.len(),
            };
            hdrs[i].msg_hdr.msg_namelen = udp::sockaddr_to(&to.addr, &mut names[i]);
        }
        for ((h, name), iov) in hdrs.iter_mut().zip(&mut names).zip(&mut iovs).take(n) {
            h.msg_hdr.msg_name = (name as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
        }
        let t0 = self.clock.now();
        // SAFETY: the first n headers describe datagrams in `out` (borrowed
        // for the call) with valid addresses in `names`; the kernel only
        // reads them and writes each header's msg_len.
        let r = unsafe { libc::sendmmsg(self.udp.as_raw_fd(), hdrs.as_mut_ptr(), n as u32, 0) };
        self.send_ticks += self.clock.now().saturating_sub(t0);
        let sent = usize::try_from(r).unwrap_or(0);
        if sent < n {
            // an error stopped it (and is not reported for a later
            // datagram): it may have been an earlier datagram's ICMP
            // error, so the error queue is read after this message
            self.errors_pending = true;
        }
        sent
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

/// Most datagrams of one message [`NetSink`] sends with one `sendmmsg`
/// (a message sends at most two or three: more go one by one).
const SEND_LEADING_MAX: usize = 4;

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

/// Most INVITEs a worker of the split takes from the INVITE socket in one
/// receive when the dialog socket was found drained (one when it may
/// hold datagrams): dialog datagrams that arrive meanwhile wait for at
/// most this many INVITEs.
pub(crate) const INVITE_BATCH: usize = 4;

/// The order in which a worker of the `shared` model reads its sockets —
/// the dialog socket (the only one without the INVITE split) and the
/// INVITE socket (see [`Worker::run_shared`]) — and how many datagrams it
/// asks each receive for: a pure state machine over "which socket next",
/// tested without sockets.
///
/// It also keeps which sockets this worker *owes* a read until it finds
/// them drained, so that it never waits with a datagram stranded and never
/// probes a socket when it could wait instead:
///
/// 1. The sockets are registered edge-triggered on the shared epoll
///    instance: every arrival puts its socket's event on the instance's
///    ready list (if it is not there already) and wakes a waiter.
/// 2. A worker whose wait returns a socket's event has taken that event
///    off the list: it owes that socket until a receive on it fails with
///    `WouldBlock` or returns fewer datagrams than it asked for (a
///    non-blocking `recvmmsg` stops short only when the queue is empty, or
///    when an error arrived while it ran, which queued an event of its
///    own). A worker starts owing every socket, and so does one that was
///    woken without taking an event.
/// 3. A worker waits only when it owes nothing.
///
/// So a datagram queued on a socket nobody owes arrived after that
/// socket's last drained read or event: its event is on the ready list and
/// wakes a waiter, or the next worker to wait returns at once with it.
/// Reading a socket one does not owe is always safe (it only shortens
/// the queue). While it owes something the order reads the socket it
/// chose first whether owed or not (the dialog socket, so that dialog
/// datagrams never wait behind a backlog of INVITEs), and the other one
/// only when owed; owing nothing, it reads nothing. A worker woken for a
/// datagram thus makes one receive (which finds the queue drained) before
/// it waits again.
///
/// Dialog datagrams go first: a receive asks for at most
/// [`super::DIALOG_BURST`] minus those taken in a row, and after that many
/// the INVITE socket is read first, for one INVITE ([`INVITE_BATCH`] when
/// the dialog socket was found drained).
#[derive(Debug)]
pub(crate) struct DrainOrder {
    /// Dialog datagrams taken in a row.
    streak: u32,
    /// Woken for the INVITE socket: read it first, once.
    invite_first: bool,
    /// Whether this worker owes a read to the dialog socket (`[0]`) and
    /// the INVITE socket (`[1]`): see the type's docs.
    owes: [bool; 2],
    /// Whether there is an INVITE socket (the split).
    split: bool,
}

impl DrainOrder {
    /// The order of a new worker, which owes every socket; `split`:
    /// whether there is an INVITE socket.
    pub(crate) fn new(split: bool) -> DrainOrder {
        DrainOrder {
            streak: 0,
            invite_first: false,
            owes: [true, split],
            split,
        }
    }

    /// Receives the next datagrams with `recv(invite, max)`, which reads
    /// at most `max` (1..=`batch`) from the INVITE socket when `invite`
    /// and from the dialog socket otherwise, without waiting, and returns
    /// how many it received. Returns that count and whether they came from
    /// the INVITE socket, `None` when this worker owes no socket a read
    /// (it may wait), or the first error other than `WouldBlock`.
    pub(crate) fn next(
        &mut self,
        batch: usize,
        mut recv: impl FnMut(bool, usize) -> io::Result<usize>,
    ) -> io::Result<Option<(usize, bool)>> {
        let burst = super::DIALOG_BURST;
        if self.owes == [false; 2] {
            self.streak = 0;
            return Ok(None);
        }
        let invite_first =
            self.split && (std::mem::take(&mut self.invite_first) || self.streak >= burst);
        for (k, invite) in [invite_first, !invite_first].into_iter().enumerate() {
            // the first choice always; the other one only when owed
            if (invite && !self.split) || (k == 1 && !self.owes[usize::from(invite)]) {
                continue;
            }
            let max = match (invite, self.owes[0]) {
                (true, true) => 1,
                (true, false) => INVITE_BATCH,
                (false, _) if self.split => burst.saturating_sub(self.streak) as usize,
                (false, _) => batch,
            }
            .clamp(1, batch.max(1));
            match recv(invite, max) {
                Ok(n) => {
                    if n < max {
                        self.owes[usize::from(invite)] = false;
                    }
                    self.streak = if invite {
                        0
                    } else {
                        self.streak.saturating_add(n as u32)
                    };
                    return Ok(Some((n, invite)));
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
        let invite = invite && self.split;
        self.invite_first = invite;
        self.owes[usize::from(invite)] = true;
    }

    /// The worker found a datagram without taking an event (polling, or
    /// woken by another worker), or cannot tell which socket woke it: it
    /// owes every socket.
    pub(crate) fn owe_both(&mut self) {
        self.owes = [true, self.split];
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

    /// `reuseport`, and `shared` with [`super::WakeOrder::Fifo`]: one
    /// `recvmsg`, handle, send, repeat.
    pub(crate) fn run_single(self) {
        let mut buf = vec![0u8; self.max_message + 1];
        let mut cmsg = [0u8; CMSG_SPACE];
        let mut scratch = Scratch::new();
        let mut quote = vec![0u8; errqueue::QUOTE];
        while !self.stopped() {
            let meta =
                match self.recv_spinning(|f| udp::recv_one(&self.sock, &mut buf, &mut cmsg, f)) {
                    Ok(m) => m,
                    Err(e) => {
                        self.recv_failed(&e, &mut buf);
                        continue;
                    }
                };
            let t_in_real = udp::realtime_ns();
            self.serve(&buf, &meta, t_in_real, &mut scratch, false, &mut quote);
        }
    }

    /// The `shared` model with [`super::WakeOrder::Lifo`]: the sockets are
    /// read with non-blocking `recvmmsg` in the [`DrainOrder`] (with the
    /// INVITE split: the dialog socket first, the INVITE socket when the
    /// dialog socket is drained or after [`super::DIALOG_BURST`] dialog
    /// datagrams in a row; after a wait, the socket whose event woke the
    /// worker first), each datagram handled and its answers sent at once;
    /// a receive that returns fewer datagrams than it asked for has found
    /// the queue drained, so a worker woken for one datagram makes one
    /// receive. Drained, the worker waits on the epoll instance if it
    /// takes the [`Baton`](super::baton::Baton), or parks; having taken a
    /// batch's worth of datagrams since it last found the sockets drained,
    /// it wakes a parked worker to help.
    pub(crate) fn run_shared(self, batch: usize) {
        let Some(wait) = self.wait.clone() else {
            return self.run_single();
        };
        let batch = batch.max(1);
        let mut rx = Batch::new(batch, self.max_message + 1);
        let mut scratch = Scratch::new();
        let mut order = DrainOrder::new(self.invites.is_some());
        let mut quote = vec![0u8; errqueue::QUOTE];
        // datagrams taken since the sockets were last found drained
        let mut backlog = 0;
        while !self.stopped() {
            let got = order.next(batch, |invite, max| {
                let s = match (invite, &self.invites) {
                    (true, Some(i)) => i,
                    _ => &self.sock,
                };
                rx.recv_up_to(s, max, libc::MSG_DONTWAIT)
            });
            match got {
                Ok(Some((n, invite))) => {
                    backlog += n;
                    if backlog >= batch {
                        backlog = 0;
                        wait.baton.wake_one();
                    }
                    let t_in_real = udp::realtime_ns();
                    for i in 0..n {
                        self.serve(
                            rx.datagram(i),
                            rx.meta(i),
                            t_in_real,
                            &mut scratch,
                            invite,
                            &mut quote,
                        );
                    }
                }
                Ok(None) => {
                    backlog = 0;
                    self.idle(&wait, &mut order);
                }
                Err(e) => self.recv_failed(&e, &mut quote),
            }
        }
    }

    /// A `shared` worker that owes no socket a read: waits on the epoll
    /// instance if it takes the baton (preparing for the next message and
    /// spinning first), else parks until another worker wakes it.
    fn idle(&self, wait: &super::wake::SharedWait, order: &mut DrainOrder) {
        if !wait.baton.take() {
            wait.baton.park(self.index);
            order.owe_both();
            return;
        }
        self.handler.prepare_idle();
        if self.spin != SpinBudget::NONE
            && self
                .spin
                .spin_until(|| udp::poll_readable(&self.sock, self.invites.as_ref()))
        {
            wait.baton.put_down();
            order.owe_both();
            return;
        }
        let ready = wait.wait();
        wait.baton.put_down();
        match (ready.socket, ready.invites) {
            (false, true) => order.woken_by(true),
            (true, false) => order.woken_by(false),
            // both (the dialog socket first), the stop event, or interrupted
            _ => order.owe_both(),
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

    /// Handles, times and counts one datagram, `bytes` (from the INVITE
    /// socket when `invite`), received when the clock read `t_in_real`;
    /// `buf` is room for reading the socket's error queue.
    fn serve(
        &self,
        bytes: &[u8],
        meta: &udp::RxMeta,
        t_in_real: u64,
        scratch: &mut Scratch,
        invite: bool,
        buf: &mut [u8],
    ) {
        let c = self.clock;
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
            self.handle_datagram(&bytes[..meta.len], meta, t_in_real, t0, scratch, &mut sink);
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

    /// Receive batch of the tests (smaller than a burst).
    const BATCH: usize = 8;

    /// Two queues standing in for the sockets: `true` is the INVITE one.
    /// Every receive is logged as (socket, most asked for), and what it
    /// took as (datagram, socket).
    #[derive(Default)]
    struct Queues {
        dialog: VecDeque<u32>,
        invites: VecDeque<u32>,
        reads: Vec<(bool, usize)>,
        got: Vec<(u32, bool)>,
    }

    impl Queues {
        fn recv(&mut self, invite: bool, max: usize) -> io::Result<usize> {
            self.reads.push((invite, max));
            let q = if invite {
                &mut self.invites
            } else {
                &mut self.dialog
            };
            let n = q.len().min(max);
            if n == 0 {
                return Err(io::Error::from(io::ErrorKind::WouldBlock));
            }
            self.got.extend(q.drain(..n).map(|d| (d, invite)));
            Ok(n)
        }

        /// `o.next` over these queues, the reads it made logged afresh.
        fn next(&mut self, o: &mut DrainOrder) -> Option<(usize, bool)> {
            self.reads.clear();
            o.next(BATCH, |i, max| self.recv(i, max)).unwrap()
        }
    }

    #[test]
    fn dialog_first_invites_after_a_burst_and_after_their_wake() {
        let burst = super::super::DIALOG_BURST;
        let mut q = Queues {
            dialog: (0..2 * burst + 5).collect(),
            invites: (1000..1003).collect(),
            ..Queues::default()
        };
        let mut o = DrainOrder::new(true);
        while q.next(&mut o).is_some() {}
        let got = std::mem::take(&mut q.got);
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
        assert!(q.next(&mut o).is_none());
        // woken for the INVITE socket: that one first, a few at a time
        // when the dialog socket was found drained; the dialog datagrams
        // queued meanwhile are left to their own event
        q.dialog.extend([1, 2]);
        q.invites.extend([7, 8]);
        o.woken_by(true);
        assert_eq!(q.next(&mut o), Some((2, true)));
        assert_eq!(q.reads, [(true, INVITE_BATCH)]);
        assert_eq!(q.next(&mut o), None);
        assert!(q.reads.is_empty());
        o.woken_by(false);
        assert_eq!(q.next(&mut o), Some((2, false)));
        assert_eq!(
            std::mem::take(&mut q.got),
            [(7, true), (8, true), (1, false), (2, false)]
        );
        // an error other than WouldBlock is returned as it is
        o.owe_both();
        let e = o
            .next(BATCH, |_, _| {
                Err(io::Error::from(io::ErrorKind::ConnectionRefused))
            })
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn the_other_socket_is_read_only_when_owed() {
        let burst = super::super::DIALOG_BURST as usize;
        let mut q = Queues::default();
        let mut o = DrainOrder::new(true);
        // a new worker owes both sockets
        assert!(q.next(&mut o).is_none());
        assert_eq!(q.reads, [(false, BATCH), (true, INVITE_BATCH)]);
        // woken for the dialog socket: an INVITE queued meanwhile is left
        // to its own event (one failing receive, not two)
        q.invites.push_back(5);
        o.woken_by(false);
        assert!(q.next(&mut o).is_none());
        assert_eq!(q.reads, [(false, BATCH)]);
        // its event wakes a worker, which owes the INVITE socket until a
        // receive comes back short: then it reads nothing before waiting
        o.woken_by(true);
        assert_eq!(q.next(&mut o), Some((1, true)));
        assert_eq!(q.got, [(5, true)]);
        assert!(q.next(&mut o).is_none());
        assert!(q.reads.is_empty());
        // a burst of dialog datagrams still lets an INVITE in, owed or
        // not, and while the dialog socket may hold more, one at a time
        q.dialog.extend(0..burst as u32 + 1);
        q.invites.extend([9, 10]);
        o.woken_by(false);
        for _ in 0..burst / BATCH {
            assert_eq!(q.next(&mut o), Some((BATCH, false)));
        }
        assert_eq!(q.next(&mut o), Some((1, true)));
        assert_eq!(q.reads, [(true, 1)]);
        // then the dialog socket; drained, it owes nothing (the INVITE it
        // read was its first choice, not owed): the INVITE left is its
        // event's, then read a few at a time
        assert_eq!(q.next(&mut o), Some((1, false)));
        assert_eq!(q.reads, [(false, BATCH)]);
        assert!(q.next(&mut o).is_none());
        assert!(q.reads.is_empty());
        o.woken_by(true);
        assert_eq!(q.next(&mut o), Some((1, true)));
        assert_eq!(q.reads, [(true, INVITE_BATCH)]);
        assert_eq!(q.got.last(), Some(&(10, true)));
        // found by polling (no event taken): both are owed
        q.invites.push_back(3);
        o.owe_both();
        assert_eq!(q.next(&mut o), Some((1, true)));
        assert_eq!(q.reads, [(false, BATCH), (true, INVITE_BATCH)]);
    }

    #[test]
    fn without_the_split_one_socket_is_read_in_batches() {
        let mut q = Queues {
            dialog: (0..BATCH as u32 + 3).collect(),
            ..Queues::default()
        };
        let mut o = DrainOrder::new(false);
        assert_eq!(q.next(&mut o), Some((BATCH, false)));
        // short: drained, no further read before the wait
        assert_eq!(q.next(&mut o), Some((3, false)));
        assert_eq!(q.next(&mut o), None);
        assert!(q.reads.is_empty());
        // an event of either kind makes it owe (and read) the one socket
        o.woken_by(true);
        assert_eq!(q.next(&mut o), None);
        assert_eq!(q.reads, [(false, BATCH)]);
        o.owe_both();
        assert_eq!(q.next(&mut o), None);
        assert_eq!(q.reads, [(false, BATCH)]);
    }
}
