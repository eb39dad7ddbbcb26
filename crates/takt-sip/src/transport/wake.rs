//! Which idle worker of the `shared` model the kernel wakes for a datagram.
//!
//! The `shared` model's workers all wait on one socket, and the kernel
//! hands each arriving datagram to one of the waiters. Which one decides
//! whether a message starts on a warm core or a cold one:
//!
//! - [`WakeOrder::Fifo`] — each worker blocks in `recvmsg`. A receiver
//!   queues at the *tail* of the socket's wait queue
//!   (`prepare_to_wait_exclusive`) and a datagram wakes the head, so the
//!   worker idle **longest** gets it. Under light load the workers take
//!   turns (two workers: strict alternation) and every message starts on
//!   a core that went idle one message ago. This is OpenSIPS's behaviour
//!   and the paper's.
//! - [`WakeOrder::Lifo`] — an idle worker waits in `epoll_wait` on one
//!   epoll instance shared by all of them, the socket registered
//!   edge-triggered; one at a time: the first to find the sockets drained
//!   waits there, the others park where the kernel's wake-ups do not reach
//!   them ([`super::baton`]). So the worker that went idle **last** gets
//!   the datagram, and one that arrives while a worker is busy wakes
//!   nobody: the busy worker takes it next, with no wake-up or context
//!   switch. A worker that finds a batch's worth of datagrams queued wakes
//!   the parked worker that parked last to help. Under light load one
//!   worker takes every message and keeps its caches and branch
//!   predictors warm; under load as many work as the backlog asks for.
//!
//! Edge-triggered is what makes the shared instance safe: level-triggered
//! re-arms the socket after each delivery and wakes a second waiter for a
//! datagram the first one is already reading. A woken worker drains the
//! socket (non-blocking `recvmmsg` until one comes back short) before it
//! waits again, so a datagram that arrived while it was busy is never
//! stranded: its arrival queued an event that either woke the waiting
//! worker or is waiting in the instance's ready list.

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The order in which idle `shared` workers are woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WakeOrder {
    /// The worker idle longest (blocking `recvmsg`; OpenSIPS's order).
    Fifo,
    /// The worker idle shortest (`epoll_wait` on one shared instance, one
    /// waiter at a time).
    Lifo,
}

impl WakeOrder {
    /// Its name.
    pub fn name(&self) -> &'static str {
        match self {
            WakeOrder::Fifo => "fifo",
            WakeOrder::Lifo => "lifo",
        }
    }
}

impl std::str::FromStr for WakeOrder {
    type Err = crate::name::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fifo" => Ok(WakeOrder::Fifo),
            "lifo" => Ok(WakeOrder::Lifo),
            other => Err(crate::name::UnknownName::new(
                "wake order",
                other,
                "fifo, lifo",
            )),
        }
    }
}

/// One epoll instance with the shared socket registered edge-triggered,
/// which every worker waits on ([`WakeOrder::Lifo`]), and an eventfd
/// registered level-triggered that [`SharedWait::wake_all`] makes readable
/// for good.
///
/// Waits have no timeout: a waiter that timed out would queue again at the
/// head and take the next datagram from the worker that was warm.
#[derive(Debug)]
pub(crate) struct SharedWait {
    ep: OwnedFd,
    stop: OwnedFd,
    /// Which idle worker waits on `ep` ([`super::baton`]).
    pub(crate) baton: super::baton::Baton,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A registered descriptor, as its events name it. (The workers read
/// duplicates of the registered sockets, whose descriptor numbers differ,
/// so the event carries this instead.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woken {
    /// The shared (with the INVITE split: the dialog) socket.
    Socket,
    /// The INVITE split's INVITE socket.
    Invites,
    /// [`SharedWait::wake_all`].
    Stop,
}

/// What ended a [`SharedWait::wait`]: the events of which registered
/// descriptors it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Ready {
    /// [`Woken::Socket`]'s.
    pub(crate) socket: bool,
    /// [`Woken::Invites`]'s.
    pub(crate) invites: bool,
    /// [`Woken::Stop`]'s.
    pub(crate) stop: bool,
}

impl Woken {
    const ALL: [Woken; 3] = [Woken::Socket, Woken::Invites, Woken::Stop];

    /// The event's data for this descriptor.
    fn token(self) -> u64 {
        self as u64
    }
}

/// Adds `fd` to `ep` for input with `flags` (e.g. `EPOLLET`), its events
/// carrying `who`.
fn add(ep: &OwnedFd, fd: libc::c_int, flags: libc::c_int, who: Woken) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | flags) as u32,
        u64: who.token(),
    };
    // SAFETY: both descriptors are open; `ev` outlives the call.
    check(unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
    Ok(())
}

impl SharedWait {
    /// The instance for `sock` and, with the INVITE split
    /// ([`super::udp::split_invites`]), its INVITE socket `invites`
    /// (registered the same way: a datagram on either wakes one waiter).
    /// `workers` is the number of workers that will wait ([`super::baton`]).
    pub(crate) fn new(
        sock: &UdpSocket,
        invites: Option<&UdpSocket>,
        workers: usize,
    ) -> io::Result<SharedWait> {
        // SAFETY: plain system calls; each result is checked and owned once.
        let ep = unsafe { OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
        // SAFETY: as above.
        let stop = unsafe {
            OwnedFd::from_raw_fd(check(libc::eventfd(
                0,
                libc::EFD_CLOEXEC | libc::EFD_NONBLOCK,
            ))?)
        };
        add(&ep, sock.as_raw_fd(), libc::EPOLLET, Woken::Socket)?;
        if let Some(i) = invites {
            add(&ep, i.as_raw_fd(), libc::EPOLLET, Woken::Invites)?;
        }
        add(&ep, stop.as_raw_fd(), 0, Woken::Stop)?;
        Ok(SharedWait {
            ep,
            stop,
            baton: super::baton::Baton::new(workers),
        })
    }

    /// Blocks until a datagram has arrived since the socket was last
    /// drained, or [`wake_all`](Self::wake_all) was called. The caller
    /// then receives with `MSG_DONTWAIT` (another worker may have taken
    /// the datagram) and checks its stop flag. Returns whose events woke
    /// it — every event ready, taken off the ready list at once (none:
    /// interrupted) — so that a worker woken for the INVITE socket alone
    /// reads that one first, one woken for both reads the dialog socket
    /// first, and each knows which sockets it owes a read (see the
    /// worker's `DrainOrder`).
    pub(crate) fn wait(&self) -> Ready {
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }; Woken::ALL.len()];
        // SAFETY: `ev` is a valid buffer for its length of events. An
        // error (EINTR) is harmless: the caller polls the socket and
        // waits again.
        let n =
            unsafe { libc::epoll_wait(self.ep.as_raw_fd(), ev.as_mut_ptr(), ev.len() as i32, -1) };
        let mut ready = Ready::default();
        for e in &ev[..usize::try_from(n).unwrap_or(0)] {
            // `add` stored the token as the event's data
            let token = e.u64;
            match Woken::ALL.into_iter().find(|w| w.token() == token) {
                Some(Woken::Socket) => ready.socket = true,
                Some(Woken::Invites) => ready.invites = true,
                Some(Woken::Stop) => ready.stop = true,
                None => {}
            }
        }
        ready
    }

    /// Wakes every waiter, now and from now on (the eventfd stays
    /// readable and is level-triggered). Call after setting the workers'
    /// stop flag, so a woken worker sees it.
    pub(crate) fn wake_all(&self) {
        self.baton.close();
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd. It cannot
        // fail short of the counter overflowing, which one write per
        // shutdown never does.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait names the registered socket whose event ended it, also
    /// for workers that read duplicates of the sockets (other descriptor
    /// numbers), and the stop event once `wake_all` is called.
    #[test]
    fn a_wait_says_which_socket_woke_it() {
        let dialog = UdpSocket::bind("127.0.0.1:0").unwrap();
        let invites = UdpSocket::bind("127.0.0.1:0").unwrap();
        let w = SharedWait::new(&dialog, Some(&invites), 1).unwrap();
        let (d2, i2) = (dialog.try_clone().unwrap(), invites.try_clone().unwrap());
        assert_ne!(d2.as_raw_fd(), dialog.as_raw_fd());
        let c = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 16];
        c.send_to(b"INVITE", invites.local_addr().unwrap()).unwrap();
        let invite = Ready {
            invites: true,
            ..Ready::default()
        };
        assert_eq!(w.wait(), invite);
        i2.recv(&mut buf).unwrap();
        c.send_to(b"ACK", dialog.local_addr().unwrap()).unwrap();
        let dialog_only = Ready {
            socket: true,
            ..Ready::default()
        };
        assert_eq!(w.wait(), dialog_only);
        d2.recv(&mut buf).unwrap();
        // both ready: one wait takes both events
        c.send_to(b"INVITE", invites.local_addr().unwrap()).unwrap();
        c.send_to(b"ACK", dialog.local_addr().unwrap()).unwrap();
        assert_eq!(
            w.wait(),
            Ready {
                socket: true,
                invites: true,
                stop: false
            }
        );
        i2.recv(&mut buf).unwrap();
        d2.recv(&mut buf).unwrap();
        w.wake_all();
        assert!(w.wait().stop);
    }
}
