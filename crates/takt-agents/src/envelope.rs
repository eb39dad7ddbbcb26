//! [`Envelope`]: one queued event, 32 bytes, with the message stored inline.
//!
//! An envelope is a monomorphized function pointer (one per agent type and
//! message type), a target pointer and a 16-byte payload. A message of at
//! most 16 bytes and pointer alignment (a token, an id, an `Arc`, a `Box`)
//! is stored in the payload itself, so sending it allocates nothing; a
//! larger one is boxed and the payload holds the box. Dispatch by type is
//! the indirect call: no `TypeId` comparison is needed to find the code
//! that knows the message's type.
//!
//! The target pointer's low bit says whether the envelope owns a strong
//! reference to its target agent (cross-thread sends do; sends on the
//! target's own thread do not, see `agent.rs`).

use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::ptr;

/// Inline payload space.
pub(crate) type Payload = [MaybeUninit<usize>; 2];

/// Low bit of `Envelope::target`: the envelope holds a strong reference.
pub(crate) const REF_TAG: usize = 1;

/// Where a priority worker's remote queue keeps an envelope's message
/// priority: bits 60–62 of `target`, above every user-space address
/// (x86_64 user addresses stay below 2^47, 2^56 with five-level paging).
/// Only the priority dispatcher's remote queue carries envelopes tagged so;
/// it strips the tag before anything else sees the envelope.
const PRIO_SHIFT: u32 = 60;

/// What the envelope's function is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Run the target's handler (or count the message as unhandled/undelivered).
    Deliver,
    /// Drop the message without delivering it (queue torn down); counted.
    Discard,
}

/// The monomorphized event function. It must consume the payload exactly
/// once, before it runs anything that can push to a queue (a queue may
/// deliver an envelope in place, see [`Envelope::deliver_at`]), and release
/// the reference named by `REF_TAG`.
pub(crate) type EventFn = unsafe fn(Op, usize, *mut Payload);

/// One queued event.
pub(crate) struct Envelope {
    call: EventFn,
    /// Target address (an `AgentCell<A>`), low bit = `REF_TAG`.
    target: usize,
    payload: Payload,
}

// SAFETY: every envelope is built from a `Send` message (`Message: Send`)
// and a target that is `Sync`; the event function only runs on the thread
// that owns the target's execution.
unsafe impl Send for Envelope {}

/// Whether `M` is stored inline.
#[inline(always)]
pub(crate) const fn fits_inline<M>() -> bool {
    size_of::<M>() <= size_of::<Payload>() && align_of::<M>() <= align_of::<Payload>()
}

impl Envelope {
    /// Packs `msg` for `call`.
    #[inline(always)]
    pub(crate) fn new<M>(call: EventFn, target: usize, msg: M) -> Envelope {
        let mut payload: Payload = [MaybeUninit::uninit(); 2];
        if fits_inline::<M>() {
            // SAFETY: `M` fits in the payload, size and alignment checked.
            unsafe { ptr::write(payload.as_mut_ptr().cast::<M>(), msg) };
        } else {
            let b = Box::into_raw(Box::new(msg));
            // SAFETY: a pointer fits in the payload.
            unsafe { ptr::write(payload.as_mut_ptr().cast::<*mut M>(), b) };
        }
        Envelope {
            call,
            target,
            payload,
        }
    }

    /// An envelope without a message (start, finish, release events).
    #[inline]
    pub(crate) fn signal(call: EventFn, target: usize) -> Envelope {
        Envelope {
            call,
            target,
            payload: [MaybeUninit::uninit(); 2],
        }
    }

    /// Tags the envelope with a message priority (see [`PRIO_SHIFT`]).
    #[inline]
    pub(crate) fn with_prio(mut self, prio: u8) -> Envelope {
        self.target |= (prio as usize & 7) << PRIO_SHIFT;
        self
    }

    /// Removes the priority tag and returns the priority (0 if untagged).
    #[inline]
    pub(crate) fn take_prio(&mut self) -> u8 {
        let p = (self.target >> PRIO_SHIFT) as u8 & 7;
        self.target &= (1 << PRIO_SHIFT) - 1;
        p
    }

    /// Builds the envelope `new(call, target, msg)` would, directly in `slot`.
    ///
    /// # Safety
    /// `slot` must be valid for writes and hold no envelope (it is
    /// overwritten without dropping); `call` must be the event function
    /// for `M` and `target`, as for [`new`](Self::new).
    #[inline(always)]
    pub(crate) unsafe fn write_at<M>(slot: *mut Envelope, call: EventFn, target: usize, msg: M) {
        // SAFETY: caller's contract; every field is written, so the slot
        // then holds a valid envelope.
        unsafe {
            ptr::addr_of_mut!((*slot).call).write(call);
            ptr::addr_of_mut!((*slot).target).write(target);
            let payload = ptr::addr_of_mut!((*slot).payload);
            if fits_inline::<M>() {
                ptr::write(payload.cast::<M>(), msg);
            } else {
                ptr::write(payload.cast::<*mut M>(), Box::into_raw(Box::new(msg)));
            }
        }
    }

    /// Runs the envelope stored at `slot`, in place.
    ///
    /// # Safety
    /// `slot` holds an initialized envelope that nobody else will run or
    /// drop (its queue has let go of it), and the slot stays valid until
    /// the event function has taken the payload, which it does before it
    /// runs any code that can push to that queue.
    #[inline(always)]
    pub(crate) unsafe fn deliver_at(slot: *mut Envelope) {
        // SAFETY: caller's contract; the event function consumes the
        // payload exactly once.
        unsafe {
            ((*slot).call)(
                Op::Deliver,
                (*slot).target,
                ptr::addr_of_mut!((*slot).payload),
            )
        }
    }

    /// Runs the event.
    #[inline(always)]
    pub(crate) fn deliver(self) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: the function was built for this payload and target; the
        // envelope is consumed (ManuallyDrop) so it runs exactly once.
        unsafe { (me.call)(Op::Deliver, me.target, &mut me.payload) }
    }
}

impl Drop for Envelope {
    fn drop(&mut self) {
        // SAFETY: as in `deliver`; `drop` runs at most once.
        unsafe { (self.call)(Op::Discard, self.target, &mut self.payload) }
    }
}

/// Moves the message out of a payload.
///
/// # Safety
/// `payload` must hold an `M` written by [`Envelope::new::<M>`] that has not
/// been taken yet.
#[inline(always)]
pub(crate) unsafe fn take<M>(payload: *mut Payload) -> M {
    if fits_inline::<M>() {
        // SAFETY: caller's contract; inline layout.
        unsafe { ptr::read(payload.cast::<M>()) }
    } else {
        // SAFETY: caller's contract; boxed layout.
        unsafe { *Box::from_raw(ptr::read(payload.cast::<*mut M>())) }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DELIVERED: AtomicUsize = AtomicUsize::new(0);
    static DISCARDED: AtomicUsize = AtomicUsize::new(0);

    unsafe fn call<M: PartialEq + std::fmt::Debug + Default>(op: Op, _t: usize, p: *mut Payload) {
        // SAFETY: built by `Envelope::new::<M>`.
        let m: M = unsafe { take(p) };
        assert_ne!(m, M::default());
        match op {
            Op::Deliver => DELIVERED.fetch_add(1, Ordering::Relaxed),
            Op::Discard => DISCARDED.fetch_add(1, Ordering::Relaxed),
        };
    }

    #[test]
    fn inline_and_boxed_round_trip() {
        assert!(fits_inline::<u64>());
        assert!(fits_inline::<(u64, u64)>());
        assert!(!fits_inline::<[u64; 3]>());
        assert!(!fits_inline::<u128>() || align_of::<u128>() <= 8);
        assert_eq!(size_of::<Envelope>(), 32);
        Envelope::new(call::<u64>, 0, 7u64).deliver();
        Envelope::new(call::<[u64; 3]>, 0, [1u64, 2, 3]).deliver();
        Envelope::new(call::<String>, 0, "x".to_string()).deliver();
        drop(Envelope::new(call::<Vec<u8>>, 0, vec![1u8]));
        assert_eq!(DELIVERED.load(Ordering::Relaxed), 3);
        assert_eq!(DISCARDED.load(Ordering::Relaxed), 1);
    }
}
