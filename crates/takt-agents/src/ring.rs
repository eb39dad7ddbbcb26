//! [`Ring`]: the growable FIFO behind a worker's local queue.
//!
//! Like `VecDeque`, but shaped for the one-thread dispatch loop: the
//! capacity is a power of two and `head`/`tail` run freely (wrapping), so a
//! push is a length check, one masked store and one increment, and a pop
//! one compare, one masked load and one increment — no wrap-around
//! compare-and-subtract on either side. Growing (doubling) is out of line.
//!
//! Invariants: `buf.len() == mask + 1` is a power of two;
//! `len = tail - head` (wrapping) is at most `buf.len()`; the slots
//! `head..tail` (masked) hold initialized values, every other slot is
//! uninitialized.

use std::fmt;
use std::mem::MaybeUninit;

/// A growable FIFO ring (see the module docs).
pub(crate) struct Ring<T> {
    buf: Box<[MaybeUninit<T>]>,
    mask: usize,
    head: usize,
    tail: usize,
}

impl<T> Ring<T> {
    /// An empty ring holding at least `cap` values before it grows.
    pub(crate) fn with_capacity(cap: usize) -> Self {
        let cap = cap.max(1).next_power_of_two();
        Ring {
            buf: (0..cap).map(|_| MaybeUninit::uninit()).collect(),
            mask: cap - 1,
            head: 0,
            tail: 0,
        }
    }

    /// Number of values queued.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head)
    }

    /// Whether nothing is queued.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == self.tail
    }

    /// Appends `v`.
    #[inline(always)]
    pub(crate) fn push_back(&mut self, v: T) {
        if self.len() > self.mask {
            self.grow();
        }
        let i = self.tail & self.mask;
        // SAFETY: `i <= mask < buf.len()`; the slot is outside `head..tail`
        // (the ring is not full), so it is uninitialized and overwriting
        // it leaks nothing.
        unsafe { self.buf.get_unchecked_mut(i).write(v) };
        self.tail = self.tail.wrapping_add(1);
    }

    /// Appends a value that `write` initializes in place (no move through
    /// the stack). `write` gets the uninitialized slot and must initialize
    /// it; the ring is grown before `write` runs.
    ///
    /// # Safety
    /// `write` must fully initialize the slot it is given.
    #[inline(always)]
    pub(crate) unsafe fn push_in_place(&mut self, write: impl FnOnce(*mut T)) {
        if self.len() > self.mask {
            self.grow();
        }
        let i = self.tail & self.mask;
        // SAFETY: as in `push_back`: `i` is in bounds and the slot is
        // outside `head..tail`, so nothing is overwritten; the caller
        // initializes it before `tail` makes it part of the queue.
        write(unsafe { self.buf.get_unchecked_mut(i).as_mut_ptr() });
        self.tail = self.tail.wrapping_add(1);
    }

    /// Removes the oldest value and returns its slot, still holding it: the
    /// caller now owns the value and must move it out (or drop it in place)
    /// before the next push, which may reuse or free the slot.
    #[inline(always)]
    pub(crate) fn pop_front_in_place(&mut self) -> Option<*mut T> {
        if self.head == self.tail {
            return None;
        }
        let i = self.head & self.mask;
        self.head = self.head.wrapping_add(1);
        // SAFETY: `i <= mask`, in bounds; the slot was inside `head..tail`
        // and is now outside it, so the ring will not read or drop it.
        Some(unsafe { self.buf.get_unchecked_mut(i).as_mut_ptr() })
    }

    /// Removes the oldest value.
    #[inline(always)]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.head == self.tail {
            return None;
        }
        let i = self.head & self.mask;
        self.head = self.head.wrapping_add(1);
        // SAFETY: `i` was the head slot, inside `head..tail`, so it is
        // initialized; advancing `head` first makes this read its only one.
        Some(unsafe { self.buf.get_unchecked(i).assume_init_read() })
    }

    /// Doubles the capacity, keeping the order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let len = self.len();
        let cap = self.buf.len() * 2;
        let mut buf: Box<[MaybeUninit<T>]> = (0..cap).map(|_| MaybeUninit::uninit()).collect();
        for (k, slot) in buf.iter_mut().enumerate().take(len) {
            let i = self.head.wrapping_add(k) & self.mask;
            // SAFETY: slot `i` is inside `head..tail` (initialized); it is
            // moved out exactly once, and the old buffer is then dropped
            // as `MaybeUninit`, which drops no value.
            slot.write(unsafe { self.buf[i].assume_init_read() });
        }
        self.buf = buf;
        self.mask = cap - 1;
        self.head = 0;
        self.tail = len;
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        while self.pop_front().is_some() {}
    }
}

impl<T> fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ring")
            .field("len", &self.len())
            .field("capacity", &self.buf.len())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[test]
    fn fifo_across_growth_and_wrap() {
        let mut r = Ring::with_capacity(4);
        let mut next_in = 0u32;
        let mut next_out = 0u32;
        // Interleave pushes and pops so head/tail wrap inside the buffer
        // before and after each growth.
        for round in 0..200u32 {
            for _ in 0..(round % 7 + 1) {
                r.push_back(next_in);
                next_in += 1;
            }
            for _ in 0..(round % 5) {
                if let Some(v) = r.pop_front() {
                    assert_eq!(v, next_out);
                    next_out += 1;
                }
            }
            assert_eq!(r.len() as u32, next_in - next_out);
        }
        while let Some(v) = r.pop_front() {
            assert_eq!(v, next_out);
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert!(r.is_empty());
    }

    #[test]
    fn drops_what_is_left_exactly_once() {
        let item = Rc::new(());
        let mut r = Ring::with_capacity(2);
        for _ in 0..9 {
            r.push_back(item.clone());
        }
        drop(r.pop_front());
        assert_eq!(Rc::strong_count(&item), 9);
        drop(r);
        assert_eq!(Rc::strong_count(&item), 1);
    }

    #[test]
    fn free_running_indices_wrap() {
        let mut r: Ring<u8> = Ring::with_capacity(2);
        r.head = usize::MAX - 1;
        r.tail = usize::MAX - 1;
        for i in 0..5 {
            r.push_back(i);
        }
        for i in 0..5 {
            assert_eq!(r.pop_front(), Some(i));
        }
        assert_eq!(r.pop_front(), None);
    }
}
