//! A byte arena aligned to 16 bytes: the flat storage of signal values.
//!
//! Every signal of a network has one offset, the same in every arena of the
//! network (the two value buffers, the defaults, the initial values), so
//! moving a value between them is a copy at one offset.

use std::mem::{align_of, size_of};
use std::ptr;

use crate::signal::MAX_ALIGN;

/// A growable, zero-initialized, 16-byte aligned byte buffer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Arena {
    words: Vec<u128>,
    /// Bytes in use.
    len: usize,
}

const _: () = assert!(align_of::<u128>() >= MAX_ALIGN || cfg!(not(target_arch = "x86_64")));

impl Arena {
    /// Reserves room for a `T` and returns its offset.
    pub(crate) fn alloc<T>(&mut self) -> usize {
        let align = align_of::<T>();
        let off = self.len.next_multiple_of(align);
        self.len = off + size_of::<T>();
        let words = self.len.div_ceil(size_of::<u128>());
        if words > self.words.len() {
            self.words.resize(words, 0);
        }
        off
    }

    /// Grows (or keeps) the arena to `len` bytes.
    pub(crate) fn resize(&mut self, len: usize) {
        self.len = len;
        self.words.resize(len.div_ceil(size_of::<u128>()), 0);
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Stores `v` at `off`.
    ///
    /// # Safety
    /// `off` must come from [`Arena::alloc::<T>`] on an arena of this layout.
    pub(crate) unsafe fn put<T: Copy>(&mut self, off: usize, v: T) {
        debug_assert!(off + size_of::<T>() <= self.len);
        // SAFETY: in bounds and aligned for `T` by the caller's contract.
        unsafe { ptr::write(self.as_mut_ptr().add(off) as *mut T, v) }
    }

    /// Reads the `T` at `off`.
    ///
    /// # Safety
    /// `off` must come from [`Arena::alloc::<T>`] and hold a written `T`.
    pub(crate) unsafe fn get<T: Copy>(&self, off: usize) -> T {
        debug_assert!(off + size_of::<T>() <= self.len);
        // SAFETY: in bounds, aligned and initialized by the caller's contract.
        unsafe { ptr::read(self.as_ptr().add(off) as *const T) }
    }

    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.words.as_ptr() as *const u8
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr() as *mut u8
    }
}
