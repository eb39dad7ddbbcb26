//! Signals: the typed values buses carry, and the handles processes use.
//!
//! A signal is declared once on a bus with a [`SignalDef`] (its reset value,
//! what happens when nobody writes it, and its value before cycle 0). The
//! builder hands back a [`Signal<T>`] naming it; a process turns that into
//! an [`In<T>`] (read) or an [`Out<T>`] (write) through its
//! [`Ports`](crate::Ports) while it is added. Exactly one process may claim
//! the `Out` of a signal.
//!
//! Handles carry the id of the network that made them and are checked on
//! every access, so a handle cannot reach into another network's memory.

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;

/// What an unwritten signal holds in the next cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Falls back to the declared default (the SME model's behaviour).
    #[default]
    Reset,
    /// Keeps the last committed value, like a register.
    Hold,
    /// Becomes undefined; reading it is reported in debug mode.
    Undefined,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Reset => "reset",
            Policy::Hold => "hold",
            Policy::Undefined => "undefined",
        })
    }
}

/// The value a signal holds before cycle 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Initial<T> {
    /// The declared default (the SME model's behaviour).
    Default,
    /// A given value.
    Value(T),
    /// Undefined until first written.
    Undefined,
}

/// How a signal is declared: default (reset) value, unwritten policy and
/// initial value.
///
/// ```
/// use takt_sme::SignalDef;
/// let def = SignalDef::new(0u32).hold().initial(7);
/// # let _ = def;
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SignalDef<T> {
    pub(crate) default: T,
    pub(crate) policy: Policy,
    pub(crate) initial: Initial<T>,
}

impl<T: Copy> SignalDef<T> {
    /// A signal whose reset value is `default`, reset when unwritten, and
    /// holding `default` before cycle 0.
    pub fn new(default: T) -> Self {
        SignalDef {
            default,
            policy: Policy::Reset,
            initial: Initial::Default,
        }
    }

    /// Sets the unwritten policy.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Keep the last value when unwritten.
    pub fn hold(self) -> Self {
        self.policy(Policy::Hold)
    }

    /// Become undefined when unwritten.
    pub fn undefined_when_unwritten(self) -> Self {
        self.policy(Policy::Undefined)
    }

    /// The value before cycle 0.
    pub fn initial(mut self, value: T) -> Self {
        self.initial = Initial::Value(value);
        self
    }

    /// Undefined before the first write.
    pub fn initially_undefined(mut self) -> Self {
        self.initial = Initial::Undefined;
        self
    }
}

/// A declared signal, as the builder names it. Turn it into an [`In`] or an
/// [`Out`] with [`Ports`](crate::Ports).
pub struct Signal<T> {
    pub(crate) net: u32,
    pub(crate) id: u32,
    pub(crate) off: u32,
    pub(crate) _t: PhantomData<fn() -> T>,
}

impl<T> Signal<T> {
    /// The signal's index in its network (the order of declaration), as used
    /// by traces and [`Network::signals`](crate::Network::signals).
    pub fn index(&self) -> usize {
        self.id as usize
    }
}

impl<T> Clone for Signal<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Signal<T> {}
impl<T> fmt::Debug for Signal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Signal(#{} of net {})", self.id, self.net)
    }
}

/// A process's read port on a signal: copyable, any number of readers.
pub struct In<T> {
    pub(crate) net: u32,
    pub(crate) id: u32,
    pub(crate) off: u32,
    pub(crate) _t: PhantomData<fn() -> T>,
}

impl<T> Clone for In<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for In<T> {}
impl<T> fmt::Debug for In<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "In(#{})", self.id)
    }
}

/// A process's write port on a signal. There is exactly one per signal and
/// it is deliberately neither `Clone` nor `Copy`: it belongs to the process
/// that claimed it.
pub struct Out<T> {
    pub(crate) net: u32,
    pub(crate) id: u32,
    pub(crate) off: u32,
    /// The claiming process, packed as `kind << KIND_SHIFT | index in kind`.
    pub(crate) writer: u32,
    pub(crate) _t: PhantomData<fn(T)>,
}

impl<T> fmt::Debug for Out<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Out(#{})", self.id)
    }
}

/// Bits of a packed writer id that hold the index within its kind.
pub(crate) const KIND_SHIFT: u32 = 24;
/// Most processes of one kind (one Rust type).
pub(crate) const MAX_PER_KIND: usize = 1 << KIND_SHIFT;
/// Most process kinds in one network.
pub(crate) const MAX_KINDS: usize = 1 << (32 - KIND_SHIFT);
/// Largest alignment a signal type may have (the value arena's alignment).
pub(crate) const MAX_ALIGN: usize = 16;

/// How a signal's value is written into a VCD file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VcdKind {
    /// An integer or boolean of this many bits, written in binary.
    Bits(u32),
    /// A floating-point number (`real`).
    Real,
    /// Anything else, written as its `Debug` text (GTKWave's `string`).
    Text,
}

/// Type-erased formatters for one signal type.
#[derive(Clone, Copy)]
pub(crate) struct Format {
    /// Appends the `Debug` text of the value at the pointer.
    pub(crate) debug: unsafe fn(*const u8, &mut String),
    /// The VCD representation.
    pub(crate) vcd: VcdKind,
    /// Appends the VCD value (binary digits, real, or text).
    pub(crate) vcd_value: unsafe fn(*const u8, &mut String),
}

/// # Safety
/// `p` must point to a valid, aligned `T`.
unsafe fn debug_of<T: fmt::Debug>(p: *const u8, out: &mut String) {
    use std::fmt::Write;
    // SAFETY: the caller passes a pointer to a live, aligned `T`.
    let v = unsafe { &*(p as *const T) };
    let _ = write!(out, "{v:?}");
}

macro_rules! int_vcd {
    ($name:ident, $t:ty, $u:ty) => {
        /// # Safety
        /// `p` must point to a valid, aligned value of the named type.
        unsafe fn $name(p: *const u8, out: &mut String) {
            use std::fmt::Write;
            // SAFETY: the caller passes a pointer to a live, aligned value.
            let v = unsafe { *(p as *const $t) } as $u;
            let _ = write!(out, "b{:b}", v);
        }
    };
}
int_vcd!(vcd_u8, u8, u8);
int_vcd!(vcd_u16, u16, u16);
int_vcd!(vcd_u32, u32, u32);
int_vcd!(vcd_u64, u64, u64);
int_vcd!(vcd_i8, i8, u8);
int_vcd!(vcd_i16, i16, u16);
int_vcd!(vcd_i32, i32, u32);
int_vcd!(vcd_i64, i64, u64);
int_vcd!(vcd_usize, usize, u64);
int_vcd!(vcd_isize, isize, u64);

/// # Safety
/// `p` must point to a valid `bool`.
unsafe fn vcd_bool(p: *const u8, out: &mut String) {
    // SAFETY: the caller passes a pointer to a live bool.
    out.push_str(if unsafe { *(p as *const bool) } {
        "1"
    } else {
        "0"
    });
}

/// # Safety
/// `p` must point to a valid, aligned `f64`.
unsafe fn vcd_f64(p: *const u8, out: &mut String) {
    use std::fmt::Write;
    // SAFETY: the caller passes a pointer to a live, aligned f64.
    let _ = write!(out, "r{:?}", unsafe { *(p as *const f64) });
}

/// # Safety
/// `p` must point to a valid, aligned `f32`.
unsafe fn vcd_f32(p: *const u8, out: &mut String) {
    use std::fmt::Write;
    // SAFETY: the caller passes a pointer to a live, aligned f32.
    let _ = write!(out, "r{:?}", unsafe { *(p as *const f32) } as f64);
}

/// # Safety
/// `p` must point to a valid, aligned `T`.
unsafe fn vcd_text<T: fmt::Debug>(p: *const u8, out: &mut String) {
    use std::fmt::Write;
    // SAFETY: the caller passes a pointer to a live, aligned `T`.
    let v = unsafe { &*(p as *const T) };
    let text = format!("{v:?}");
    out.push('s');
    // VCD values end at whitespace: escape it.
    for ch in text.chars() {
        if ch.is_whitespace() {
            let _ = write!(out, "\\x{:02x}", ch as u32 & 0xff);
        } else {
            out.push(ch);
        }
    }
}

impl Format {
    /// Formatters for `T`; primitive numbers and `bool` get native VCD types.
    pub(crate) fn of<T: fmt::Debug + 'static>() -> Format {
        let id = TypeId::of::<T>();
        type VcdFn = unsafe fn(*const u8, &mut String);
        let native: &[(TypeId, VcdKind, VcdFn)] = &[
            (TypeId::of::<bool>(), VcdKind::Bits(1), vcd_bool),
            (TypeId::of::<u8>(), VcdKind::Bits(8), vcd_u8),
            (TypeId::of::<u16>(), VcdKind::Bits(16), vcd_u16),
            (TypeId::of::<u32>(), VcdKind::Bits(32), vcd_u32),
            (TypeId::of::<u64>(), VcdKind::Bits(64), vcd_u64),
            (TypeId::of::<i8>(), VcdKind::Bits(8), vcd_i8),
            (TypeId::of::<i16>(), VcdKind::Bits(16), vcd_i16),
            (TypeId::of::<i32>(), VcdKind::Bits(32), vcd_i32),
            (TypeId::of::<i64>(), VcdKind::Bits(64), vcd_i64),
            (TypeId::of::<usize>(), VcdKind::Bits(64), vcd_usize),
            (TypeId::of::<isize>(), VcdKind::Bits(64), vcd_isize),
            (TypeId::of::<f64>(), VcdKind::Real, vcd_f64),
            (TypeId::of::<f32>(), VcdKind::Real, vcd_f32),
        ];
        let (vcd, vcd_value) = native
            .iter()
            .find(|(t, _, _)| *t == id)
            .map(|&(_, k, f)| (k, f))
            .unwrap_or((VcdKind::Text, vcd_text::<T> as VcdFn));
        Format {
            debug: debug_of::<T>,
            vcd,
            vcd_value,
        }
    }
}

/// Everything the network knows about one signal.
#[derive(Clone)]
pub(crate) struct SignalMeta {
    pub(crate) name: String,
    pub(crate) bus: u32,
    pub(crate) off: u32,
    pub(crate) size: u32,
    pub(crate) policy: Policy,
    /// `Some(undefined)` when an initial state is declared: `true` for
    /// [`Initial::Undefined`]. The initial bytes live in the initial arena.
    pub(crate) initially_undefined: bool,
    /// Packed writer id, or [`NO_WRITER`].
    pub(crate) writer: u32,
    pub(crate) type_name: &'static str,
    pub(crate) format: Format,
}

/// Marks a signal nobody has claimed yet.
pub(crate) const NO_WRITER: u32 = u32::MAX;

/// A signal as [`Network::signals`](crate::Network::signals) describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalInfo {
    /// Bus name.
    pub bus: String,
    /// Signal name within the bus.
    pub name: String,
    /// Rust type name of the value.
    pub type_name: &'static str,
    /// Unwritten policy.
    pub policy: Policy,
    /// Name of the writing process.
    pub writer: String,
    /// How traces write it into VCD.
    pub vcd: VcdKind,
}

impl SignalInfo {
    /// `bus.signal`, as traces name it.
    pub fn full_name(&self) -> String {
        format!("{}.{}", self.bus, self.name)
    }
}
