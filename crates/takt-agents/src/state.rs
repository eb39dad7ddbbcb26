//! States and handler tables: what an agent does with each message type in
//! each state.
//!
//! An agent type declares its behaviour once, in [`Agent::define`], through
//! a [`Definer`]: states (flat or nested), `on_enter`/`on_exit` hooks and one
//! handler per message type per state. The declaration is compiled once per
//! agent type and process into a `Behaviour` shared by every instance, so
//! registering an agent does not rebuild it.
//!
//! Compilation flattens the hierarchy: a state's table holds its own
//! handlers followed by the handlers of its ancestors that it does not
//! override, so a message with no handler in a substate reaches its
//! parent's handler with a single table scan. On top of the table each
//! state has a small direct-mapped index (`Slots`): the dispatch of a
//! message looks at one slot chosen by bits of its type's id, so the cost
//! does not grow with the handler's position in the table. In front of
//! both, each agent caches the last message type it handled and that
//! type's handler in its current state; a state change moves the cache to
//! the same type's handler in the new state, so a run of messages of one
//! type skips the lookup entirely, also when each message changes the
//! state. That move is one indexed load: every handler entry points to its
//! message type's *row*, which names the type's handler in each state (a
//! table of types × states pointers built with the behaviour). A change between states that have no
//! `on_enter`/`on_exit` hooks, nor ancestors with one, is a single store:
//! no hook can run, so nothing walks the hierarchy. A message
//! with no handler in the current state or any ancestor is counted as
//! *unhandled* and dropped.
//!
//! ```
//! use takt_agents::{Agent, Ctx, Definer, State};
//!
//! struct Door;
//! struct Push;
//! const OPEN: State = State::new(1);
//!
//! impl Agent for Door {
//!     fn define(def: &mut Definer<Self>) {
//!         // In the default (closed) state a push opens the door...
//!         def.on(|_: &mut Door, ctx: &mut Ctx<Door>, _: Push| ctx.change_state(OPEN));
//!         // ...in OPEN it closes it again.
//!         def.state(OPEN)
//!             .name("open")
//!             .on(|_: &mut Door, ctx: &mut Ctx<Door>, _: Push| ctx.change_state(State::DEFAULT));
//!     }
//! }
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::RwLock;

use crate::ask::{invoke_ask, Ask};
use crate::{Agent, Ctx, Message};

/// A state of an agent type: a small integer chosen by the agent's author.
/// [`State::DEFAULT`] (0) always exists and is the initial state unless
/// [`Definer::initial`] says otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct State(u16);

impl State {
    /// The state every agent type has.
    pub const DEFAULT: State = State(0);
    /// Largest state number accepted.
    pub const MAX: u16 = 1023;
    /// Deepest nesting accepted.
    pub const MAX_DEPTH: usize = 16;

    /// State number `id` (at most [`State::MAX`]).
    pub const fn new(id: u16) -> State {
        State(id)
    }

    /// The number.
    pub const fn id(self) -> u16 {
        self.0
    }
}

/// A handler for a message type `M`: `fn(&mut A, &mut Ctx<A>, M)`.
pub type Handler<A, M> = fn(&mut A, &mut Ctx<'_, A>, M);
/// A state hook: `fn(&mut A, &mut Ctx<A>)`.
pub type Hook<A> = fn(&mut A, &mut Ctx<'_, A>);
/// A request handler: returns the reply.
pub type AskHandler<A, Q, R> = fn(&mut A, &mut Ctx<'_, A>, Q) -> R;

/// Calls an erased handler: `f` is the user's function pointer, `msg`
/// points to the message to move out.
pub(crate) type Invoke<A> = unsafe fn(*const (), &mut A, &mut Ctx<'_, A>, *mut u8);

pub(crate) struct Entry<A: Agent> {
    pub(crate) type_id: TypeId,
    /// The user's function: a `Handler<A, M>` when `plain`.
    pub(crate) f: *const (),
    /// A plain handler, called directly (no `invoke` trampoline).
    pub(crate) plain: bool,
    pub(crate) invoke: Invoke<A>,
    /// This entry's message type across the states (`Behaviour::rows`):
    /// the row's element `s` is the type's plain handler entry in state
    /// `s`, or the behaviour's `vacant` entry. Null where the behaviour
    /// has no rows (more types × states than `ROWS_MAX`) and in entries
    /// made outside `compile`; filled in by `compile` before the slots
    /// are built, so every copy of a table entry carries it.
    pub(crate) row: *const *const Entry<A>,
}

impl<A: Agent> Clone for Entry<A> {
    fn clone(&self) -> Self {
        Entry { ..*self }
    }
}

/// Invokes a plain handler.
///
/// # Safety
/// `f` must be a `Handler<A, M>` and `msg` must point to an initialized `M`
/// that the caller gives up.
unsafe fn invoke_plain<A: Agent, M: Message>(
    f: *const (),
    agent: &mut A,
    ctx: &mut Ctx<'_, A>,
    msg: *mut u8,
) {
    // SAFETY: the entry was built by `StateDef::on::<M>` from a `Handler<A, M>`.
    let f: Handler<A, M> = unsafe { std::mem::transmute::<*const (), Handler<A, M>>(f) };
    // SAFETY: caller's contract.
    f(agent, ctx, unsafe { msg.cast::<M>().read() })
}

struct StateDef<A: Agent> {
    name: &'static str,
    defined: bool,
    parent: Option<u16>,
    handlers: Vec<Entry<A>>,
    on_enter: Option<Hook<A>>,
    on_exit: Option<Hook<A>>,
}

impl<A: Agent> StateDef<A> {
    fn new() -> Self {
        StateDef {
            name: "",
            defined: false,
            parent: None,
            handlers: Vec::new(),
            on_enter: None,
            on_exit: None,
        }
    }
}

/// Collects an agent type's states and handlers (see the module docs).
pub struct Definer<A: Agent> {
    states: Vec<StateDef<A>>,
    initial: State,
    errors: Vec<DefineProblem>,
}

impl<A: Agent> fmt::Debug for Definer<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Definer")
            .field("agent", &std::any::type_name::<A>())
            .field("states", &self.states.len())
            .finish()
    }
}

/// Declares one state: returned by [`Definer::state`].
pub struct StateBuilder<'d, A: Agent> {
    def: &'d mut Definer<A>,
    id: u16,
}

impl<A: Agent> fmt::Debug for StateBuilder<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateBuilder")
            .field("id", &self.id)
            .finish()
    }
}

impl<A: Agent> Definer<A> {
    fn new() -> Self {
        let mut d = Definer {
            states: Vec::new(),
            initial: State::DEFAULT,
            errors: Vec::new(),
        };
        d.slot(State::DEFAULT).name = "default";
        d
    }

    fn slot(&mut self, s: State) -> &mut StateDef<A> {
        let i = s.0 as usize;
        while self.states.len() <= i {
            self.states.push(StateDef::new());
        }
        let st = &mut self.states[i];
        st.defined = true;
        st
    }

    /// Declares (or continues declaring) state `s`.
    pub fn state(&mut self, s: State) -> StateBuilder<'_, A> {
        if s.0 > State::MAX {
            self.errors.push(DefineProblem::AboveMax { state: s.0 });
            return StateBuilder { def: self, id: 0 };
        }
        self.slot(s);
        StateBuilder { def: self, id: s.0 }
    }

    /// A handler for `M` in the default state.
    pub fn on<M: Message>(&mut self, h: Handler<A, M>) -> &mut Self {
        self.state(State::DEFAULT).on(h);
        self
    }

    /// A request handler for `Q` answered with `R` in the default state.
    pub fn on_ask<Q: Message, R: Message>(&mut self, h: AskHandler<A, Q, R>) -> &mut Self {
        self.state(State::DEFAULT).on_ask(h);
        self
    }

    /// The state new agents start in (entered before `on_start`, with its
    /// and its ancestors' `on_enter` hooks).
    pub fn initial(&mut self, s: State) -> &mut Self {
        self.initial = s;
        self
    }

    fn compile(self) -> Result<Behaviour<A>, DefineError> {
        let mut errors = self.errors;
        let n = self.states.len();
        let mut compiled: Vec<Compiled<A>> = Vec::with_capacity(n);
        for (i, st) in self.states.iter().enumerate() {
            if !st.defined {
                compiled.push(Compiled::undefined());
                continue;
            }
            // Walk the ancestry: checks parents exist, no cycle, depth bound.
            let mut chain = vec![i as u16];
            let mut cur = st.parent;
            while let Some(p) = cur {
                if (p as usize) >= n || !self.states[p as usize].defined {
                    errors.push(DefineProblem::UndefinedParent {
                        state: i as u16,
                        parent: p,
                    });
                    break;
                }
                if chain.contains(&p) {
                    errors.push(DefineProblem::OwnAncestor { state: i as u16 });
                    break;
                }
                if chain.len() >= State::MAX_DEPTH {
                    errors.push(DefineProblem::TooDeep { state: i as u16 });
                    break;
                }
                chain.push(p);
                cur = self.states[p as usize].parent;
            }
            // Own handlers first, then each ancestor's not overridden.
            let mut table: Vec<Entry<A>> = Vec::new();
            for &s in &chain {
                for e in &self.states[s as usize].handlers {
                    if !table.iter().any(|t| t.type_id == e.type_id) {
                        table.push(e.clone());
                    }
                }
            }
            let quiet = chain.iter().all(|&s| {
                let d = &self.states[s as usize];
                d.on_enter.is_none() && d.on_exit.is_none()
            });
            compiled.push(Compiled {
                name: st.name,
                defined: true,
                parent: st.parent,
                depth: chain.len() as u16,
                quiet,
                // Built by `link_rows` once every table is final.
                slots: Slots::build(&[]),
                table: table.into_boxed_slice(),
                on_enter: st.on_enter,
                on_exit: st.on_exit,
            });
        }
        let init = self.initial.0 as usize;
        if init >= n || !compiled[init].defined {
            errors.push(DefineProblem::UndefinedInitial {
                state: self.initial.0,
            });
        }
        if !errors.is_empty() {
            return Err(DefineError {
                agent: std::any::type_name::<A>(),
                problems: errors,
            });
        }
        let all_quiet = compiled.iter().all(|c| c.quiet);
        let mut vacant = Box::new(Slots::vacant());
        let rows = link_rows(&mut compiled, &mut vacant);
        for c in compiled.iter_mut().filter(|c| c.defined) {
            c.slots = Slots::build(&c.table);
        }
        Ok(Behaviour {
            states: compiled.into_boxed_slice(),
            initial: self.initial.0,
            all_quiet,
            vacant,
            _rows: rows,
        })
    }
}

/// Rows of more pointers than this (message types × states) are not built:
/// the behaviour's entries keep a null `row` and a state change rebinds the
/// handler cache through the new state's slots.
const ROWS_MAX: usize = 1 << 16;

/// Builds the behaviour's rows (see `Behaviour::rebind`): one row per plain
/// handler's message type, holding that type's plain entry in every state
/// (or `vacant`), and a row of `vacant` for `vacant` itself; points every
/// table entry (and `vacant`) at its type's row. Runs before the slots are
/// built, which copy the table entries. Returns the rows' storage, which
/// the behaviour keeps (never touched again: the entries hold pointers into
/// it).
fn link_rows<A: Agent>(
    compiled: &mut [Compiled<A>],
    vacant: &mut Box<Entry<A>>,
) -> Vec<*const Entry<A>> {
    let n = compiled.len();
    let mut types: Vec<TypeId> = Vec::new();
    for c in compiled.iter() {
        for e in c.table.iter().filter(|e| e.plain) {
            if !types.contains(&e.type_id) {
                types.push(e.type_id);
            }
        }
    }
    let vacant_ptr: *const Entry<A> = &**vacant;
    // Row k (k < types.len()) is types[k]'s; the last row is vacant's.
    let linked = types.len().saturating_mul(n) <= ROWS_MAX;
    let rows_len = if linked { (types.len() + 1) * n } else { n };
    let mut rows: Vec<*const Entry<A>> = vec![vacant_ptr; rows_len];
    // One raw pointer to the storage, from which every row pointer is
    // derived and through which the rows are filled.
    let base = rows.as_mut_ptr();
    let vacant_row = rows_len - n;
    // SAFETY: `vacant_row + n == rows_len`: the row is in the storage.
    let vacant_row = unsafe { base.add(vacant_row) };
    vacant.row = vacant_row;
    if !linked {
        return rows;
    }
    for (s, c) in compiled.iter_mut().enumerate() {
        for e in c.table.iter_mut() {
            let Some(k) = types
                .iter()
                .position(|t| *t == e.type_id)
                .filter(|_| e.plain)
            else {
                e.row = vacant_row;
                continue;
            };
            // SAFETY: `k < types.len()`, so row k ends within the storage.
            let row = unsafe { base.add(k * n) };
            e.row = row;
            // A table holds one entry per type: this is types[k]'s in s.
            // SAFETY: `s < n`, so `row + s` is in row k; the pointer
            // targets the table entry, whose storage does not move (a
            // boxed slice).
            unsafe { *row.add(s) = e as *const Entry<A> };
        }
    }
    rows
}

impl<A: Agent> StateBuilder<'_, A> {
    fn def(&mut self) -> &mut StateDef<A> {
        &mut self.def.states[self.id as usize]
    }

    /// A name for traces and errors.
    pub fn name(mut self, name: &'static str) -> Self {
        self.def().name = name;
        self
    }

    /// Makes this a substate of `parent`: messages it does not handle go to
    /// the parent's handlers; entering it enters the parent first.
    pub fn parent(mut self, parent: State) -> Self {
        if parent.0 == self.id {
            self.def
                .errors
                .push(DefineProblem::OwnParent { state: self.id });
        } else {
            self.def().parent = Some(parent.0);
        }
        self
    }

    /// Runs when the agent enters this state.
    pub fn on_enter(mut self, h: Hook<A>) -> Self {
        self.def().on_enter = Some(h);
        self
    }

    /// Runs when the agent leaves this state.
    pub fn on_exit(mut self, h: Hook<A>) -> Self {
        self.def().on_exit = Some(h);
        self
    }

    fn entry(&mut self, e: Entry<A>) {
        let st = self.def();
        if let Some(old) = st.handlers.iter_mut().find(|o| o.type_id == e.type_id) {
            *old = e;
        } else {
            st.handlers.push(e);
        }
    }

    /// Handles `M` in this state (replaces an earlier handler for `M`).
    pub fn on<M: Message>(mut self, h: Handler<A, M>) -> Self {
        self.entry(Entry {
            type_id: TypeId::of::<M>(),
            f: h as *const (),
            plain: true,
            invoke: invoke_plain::<A, M>,
            row: std::ptr::null(),
        });
        self
    }

    /// Answers requests `Q` with `R` in this state (see [`crate::Addr::ask`]).
    pub fn on_ask<Q: Message, R: Message>(mut self, h: AskHandler<A, Q, R>) -> Self {
        self.entry(Entry {
            type_id: TypeId::of::<Ask<Q, R>>(),
            f: h as *const (),
            plain: false,
            invoke: invoke_ask::<A, Q, R>,
            row: std::ptr::null(),
        });
        self
    }
}

/// An agent type's states or handlers are inconsistent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefineError {
    /// The agent type.
    pub agent: &'static str,
    /// What is wrong, in the order found.
    pub problems: Vec<DefineProblem>,
}

impl fmt::Display for DefineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "agent {} is ill-defined: ", self.agent)?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DefineError {}

/// One inconsistency in an agent type's states (inside [`DefineError`]).
/// States are named by their number ([`State::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefineProblem {
    /// A state declared above [`State::MAX`].
    AboveMax {
        /// The state.
        state: u16,
    },
    /// A state declared as its own parent.
    OwnParent {
        /// The state.
        state: u16,
    },
    /// A state whose parent, or an ancestor's parent, is not declared.
    UndefinedParent {
        /// The state.
        state: u16,
        /// The undeclared parent.
        parent: u16,
    },
    /// A state whose chain of parents comes back to itself.
    OwnAncestor {
        /// The state.
        state: u16,
    },
    /// A state nested deeper than [`State::MAX_DEPTH`].
    TooDeep {
        /// The state.
        state: u16,
    },
    /// The initial state ([`Definer::initial`]) is not declared.
    UndefinedInitial {
        /// The state.
        state: u16,
    },
}

impl fmt::Display for DefineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DefineProblem::AboveMax { state } => {
                write!(f, "state {state} is above State::MAX ({})", State::MAX)
            }
            DefineProblem::OwnParent { state } => {
                write!(f, "state {state} cannot be its own parent")
            }
            DefineProblem::UndefinedParent { state, parent } => {
                write!(f, "state {state} has undefined parent {parent}")
            }
            DefineProblem::OwnAncestor { state } => write!(f, "state {state} is its own ancestor"),
            DefineProblem::TooDeep { state } => {
                write!(f, "state {state} nests deeper than {}", State::MAX_DEPTH)
            }
            DefineProblem::UndefinedInitial { state } => {
                write!(f, "initial state {state} is not defined")
            }
        }
    }
}

pub(crate) struct Compiled<A: Agent> {
    pub(crate) name: &'static str,
    defined: bool,
    pub(crate) parent: Option<u16>,
    pub(crate) depth: u16,
    /// Neither this state nor an ancestor has an `on_enter` or `on_exit`
    /// hook: a change between two quiet states runs no hook, so it is the
    /// store of the new state (no walk to the common ancestor).
    pub(crate) quiet: bool,
    pub(crate) table: Box<[Entry<A>]>,
    /// Direct-mapped index over `table`.
    pub(crate) slots: Slots<A>,
    pub(crate) on_enter: Option<Hook<A>>,
    pub(crate) on_exit: Option<Hook<A>>,
}

impl<A: Agent> Compiled<A> {
    /// The table scan behind a slot miss: a type without a handler here,
    /// or (rarely) one whose slot another type took.
    #[inline(never)]
    fn scan(&self, type_id: TypeId) -> Option<&Entry<A>> {
        self.table.iter().find(|e| e.type_id == type_id)
    }

    fn undefined() -> Self {
        Compiled {
            name: "",
            defined: false,
            parent: None,
            depth: 0,
            quiet: true,
            table: Box::new([]),
            slots: Slots::build(&[]),
            on_enter: None,
            on_exit: None,
        }
    }
}

/// The compiled behaviour of an agent type: per state, one flat table.
pub(crate) struct Behaviour<A: Agent> {
    pub(crate) states: Box<[Compiled<A>]>,
    pub(crate) initial: u16,
    /// Every state is quiet (no hooks anywhere): a state change never
    /// looks at the states' own flags.
    pub(crate) all_quiet: bool,
    /// An entry no message type matches: what an agent's handler cache
    /// points to when it holds nothing (so a lookup in it needs no null
    /// check). Boxed: the rows point to it.
    pub(crate) vacant: Box<Entry<A>>,
    /// The storage of the rows the entries' `row` pointers point into
    /// (`link_rows`); only read through those pointers.
    _rows: Vec<*const Entry<A>>,
}

// SAFETY: the erased pointers are plain `fn` pointers, which are Send and Sync.
unsafe impl<A: Agent> Send for Behaviour<A> {}
// SAFETY: as above; the behaviour is immutable once compiled.
unsafe impl<A: Agent> Sync for Behaviour<A> {}

impl<A: Agent> Behaviour<A> {
    /// The handler for `type_id` in state `state` (own or inherited).
    #[inline(always)]
    pub(crate) fn lookup(&self, state: u16, type_id: TypeId) -> Option<&Entry<A>> {
        // `state` is always a defined state: set only from checked values
        // (`has_state`), so the index is in bounds.
        debug_assert!((state as usize) < self.states.len());
        // SAFETY: see above.
        let st = unsafe { self.states.get_unchecked(state as usize) };
        match st.slots.get(type_id) {
            Some(e) => Some(e),
            None => st.scan(type_id),
        }
    }

    /// What an agent's handler cache holds after a change to state `to`:
    /// the plain handler of the cached entry's message type in `to`, else
    /// `vacant`. So a run of one message type that changes state on every
    /// message (one type handled in every state) still finds its handler in
    /// the cache. The entry's row names that handler for every state, so
    /// this is one indexed load (no hashing of the type); an entry without
    /// a row (a behaviour too big for rows) goes through `to`'s slots, and
    /// a type its slot does not hold takes the lookup on its next delivery,
    /// as after any miss.
    #[inline(always)]
    pub(crate) fn rebind(&self, to: u16, cached: &Entry<A>) -> &Entry<A> {
        debug_assert!((to as usize) < self.states.len());
        if !cached.row.is_null() {
            // SAFETY: a row has one element per state and `to` is a state;
            // its elements point to entries of this behaviour (`link_rows`),
            // which lives as long as its entries.
            return unsafe { &**cached.row.add(to as usize) };
        }
        // SAFETY: `to` is a defined state (as in `lookup`).
        let st = unsafe { self.states.get_unchecked(to as usize) };
        match st.slots.get(cached.type_id) {
            Some(e) if e.plain => e,
            _ => &self.vacant,
        }
    }

    /// Whether `s` is a state of this type.
    pub(crate) fn has_state(&self, s: State) -> bool {
        self.states.get(s.0 as usize).is_some_and(|c| c.defined)
    }

    /// The state's name.
    pub(crate) fn name_of(&self, s: u16) -> &'static str {
        self.states.get(s as usize).map_or("?", |c| c.name)
    }
}

type Cache = HashMap<TypeId, &'static (dyn Any + Send + Sync)>;
static CACHE: RwLock<Option<Cache>> = RwLock::new(None);

/// The compiled behaviour of `A`, built on first use and kept for the
/// process (one per agent *type*, so bounded). `A::define` must therefore
/// not depend on instance data.
pub(crate) fn behaviour_of<A: Agent>() -> Result<&'static Behaviour<A>, DefineError> {
    let key = TypeId::of::<A>();
    let lookup = |c: &Cache| {
        c.get(&key).map(|b| {
            b.downcast_ref::<Result<Behaviour<A>, DefineError>>()
                .expect("cache entries are keyed by their type")
        })
    };
    {
        let g = CACHE.read().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = g.as_ref().and_then(lookup) {
            return r.as_ref().map_err(Clone::clone);
        }
    }
    let mut def = Definer::<A>::new();
    A::define(&mut def);
    let compiled: &'static Result<Behaviour<A>, DefineError> = Box::leak(Box::new(def.compile()));
    let mut g = CACHE.write().unwrap_or_else(|p| p.into_inner());
    let cache = g.get_or_insert_with(HashMap::new);
    // Another thread may have compiled it meanwhile: keep the first.
    let entry = *cache.entry(key).or_insert(compiled);
    let r = entry
        .downcast_ref::<Result<Behaviour<A>, DefineError>>()
        .expect("cache entries are keyed by their type");
    r.as_ref().map_err(Clone::clone)
}

/// A type never sent as a message (it is private to this module): the
/// type id of vacant slots, so a vacant slot never matches.
struct Vacant;

/// 64 bits of a type id, for slot selection. `TypeId`'s `Hash` feeds the
/// hasher a constant, so for a known type this folds to a constant.
#[inline(always)]
fn type_key(t: TypeId) -> u64 {
    let mut h = KeyHasher(0);
    t.hash(&mut h);
    h.finish()
}

/// Collects what `TypeId::hash` writes (a multiply mixes it).
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline(always)]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline(always)]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(26) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    #[inline(always)]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A direct-mapped index over a state's handler table: `slots.len()` is a
/// power of two, `mask = slots.len() - 1`, and the entry for a type with
/// key `k` (`type_key`) is at `(k >> shift) & mask` unless another type
/// took that slot. `get` compares the full type id, so a hit is always the
/// right entry; a miss falls back to the table scan, so a collision costs
/// speed, never correctness. `build` picks the size (up to 4× the table,
/// at most 256) and shift with the fewest collisions, usually none.
pub(crate) struct Slots<A: Agent> {
    slots: Box<[Entry<A>]>,
    mask: usize,
    shift: u32,
}

impl<A: Agent> Slots<A> {
    fn vacant() -> Entry<A> {
        Entry {
            type_id: TypeId::of::<Vacant>(),
            f: std::ptr::null(),
            plain: false,
            // Never called: no message has type `Vacant`.
            invoke: invoke_plain::<A, ()>,
            row: std::ptr::null(),
        }
    }

    fn build(table: &[Entry<A>]) -> Self {
        let keys: Vec<u64> = table.iter().map(|e| type_key(e.type_id)).collect();
        let mut best: Option<(usize, usize, u32)> = None; // (collisions, size, shift)
        let mut size = table.len().next_power_of_two().max(1);
        let limit = (table.len() * 4).next_power_of_two().clamp(1, 256);
        'search: while size <= limit {
            let mask = size - 1;
            for shift in 0..=(64 - size.trailing_zeros()).min(63) {
                let mut used = vec![false; size];
                let mut collisions = 0;
                for &k in &keys {
                    let i = ((k >> shift) as usize) & mask;
                    if used[i] {
                        collisions += 1;
                    }
                    used[i] = true;
                }
                if best.is_none_or(|(c, _, _)| collisions < c) {
                    best = Some((collisions, size, shift));
                }
                if collisions == 0 {
                    break 'search;
                }
            }
            size *= 2;
        }
        let (_, size, shift) = best.unwrap_or((0, 1, 0));
        let mask = size - 1;
        let mut slots: Vec<Entry<A>> = (0..size).map(|_| Self::vacant()).collect();
        // First come first served: on a collision the earlier table entry
        // (own handlers before inherited ones) keeps the slot.
        for (e, &k) in table.iter().zip(&keys) {
            let i = ((k >> shift) as usize) & mask;
            if slots[i].type_id == TypeId::of::<Vacant>() {
                slots[i] = e.clone();
            }
        }
        Slots {
            slots: slots.into_boxed_slice(),
            mask,
            shift,
        }
    }

    /// The entry for `type_id` if it sits in its slot.
    #[inline(always)]
    fn get(&self, type_id: TypeId) -> Option<&Entry<A>> {
        let i = ((type_key(type_id) >> self.shift) as usize) & self.mask;
        debug_assert!(i < self.slots.len());
        // SAFETY: `slots.len() == mask + 1`, so `i <= mask` is in bounds.
        let e = unsafe { self.slots.get_unchecked(i) };
        (e.type_id == type_id).then_some(e)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Many;
    impl Agent for Many {
        fn define(_: &mut Definer<Self>) {}
    }

    macro_rules! handlers {
        ($def:expr, $($t:ty),*) => {
            $( $def.on(|_: &mut Many, _: &mut Ctx<Many>, _: $t| {}); )*
        };
    }

    /// Every registered type is found through its slot or the scan, with
    /// the entry registered for it; an unregistered type is not found.
    #[test]
    fn lookup_finds_every_type_and_only_those() {
        let mut def = Definer::<Many>::new();
        handlers!(
            def,
            u8,
            u16,
            u32,
            u64,
            i8,
            i16,
            i32,
            i64,
            char,
            bool,
            (),
            (u8, u8),
            (u16, u8),
            (u32, u8),
            [u8; 1],
            [u8; 2],
            [u8; 3],
            Option<u8>,
            Option<u16>
        );
        // Inherited handlers in a substate, one overridden.
        def.state(State::new(1)).parent(State::DEFAULT).on(
            |_: &mut Many, _: &mut Ctx<Many>, x: u8| {
                std::hint::black_box(x.wrapping_add(7));
            },
        );
        let b = def.compile().expect("well-defined");
        for s in [0u16, 1] {
            let table = &b.states[s as usize].table;
            assert_eq!(table.len(), 19);
            for e in table.iter() {
                let found = b.lookup(s, e.type_id).expect("registered type");
                assert_eq!(found.f, e.f);
            }
            assert!(b.lookup(s, TypeId::of::<String>()).is_none());
            // `Vacant` marks empty slots and is private to this module, so no
            // message ever has its type; a lookup of it is not a case to test
            // (it hits a vacant slot or not depending on TypeId's hash).
        }
        // The substate's own u8 handler wins over the inherited one.
        let own = b.states[1].table[0].f;
        assert_eq!(b.lookup(1, TypeId::of::<u8>()).unwrap().f, own);
        assert_ne!(b.lookup(0, TypeId::of::<u8>()).unwrap().f, own);
    }

    /// A state is quiet when neither it nor an ancestor has a hook.
    #[test]
    fn quiet_states_have_no_hook_in_their_chain() {
        let mut def = Definer::<Many>::new();
        handlers!(def, u8);
        def.state(State::new(1))
            .on_enter(|_: &mut Many, _: &mut Ctx<Many>| {});
        def.state(State::new(2)).parent(State::new(1));
        def.state(State::new(3)).parent(State::DEFAULT);
        def.state(State::new(4))
            .on_exit(|_: &mut Many, _: &mut Ctx<Many>| {});
        let b = def.compile().expect("well-defined");
        let quiet: Vec<bool> = b.states.iter().map(|s| s.quiet).collect();
        assert_eq!(quiet, [true, false, false, true, false]);
    }

    /// Rebinding finds the cached type's plain handler in the new state
    /// (own or inherited), and nothing for a type the new state does not
    /// handle or for the vacant entry; through the rows whatever the slots
    /// hold, and through the slots for an entry without a row (nothing
    /// then for a type whose slot another type took).
    #[test]
    fn rebind_follows_the_type_into_the_new_state() {
        let mut def = Definer::<Many>::new();
        handlers!(def, u8, u16);
        def.state(State::new(1))
            .parent(State::DEFAULT)
            .on(|_: &mut Many, _: &mut Ctx<Many>, _: u16| {});
        def.state(State::new(2))
            .on(|_: &mut Many, _: &mut Ctx<Many>, _: u32| {});
        let mut b = def.compile().expect("well-defined");
        // The same handler for the same type (rows point at table entries,
        // lookups may return their copies in the slots).
        let same = |e: &Entry<Many>, f: Option<&Entry<Many>>| {
            let f = f.expect("a handler");
            e.type_id == f.type_id && e.f == f.f && e.plain
        };
        let u8_in_0 = b.lookup(0, TypeId::of::<u8>()).unwrap().clone();
        let u16_in_0 = b.lookup(0, TypeId::of::<u16>()).unwrap().clone();
        assert!(!u8_in_0.row.is_null() && !u16_in_0.row.is_null());
        // Inherited u8, own u16 in state 1, and back in state 0.
        assert!(same(b.rebind(1, &u8_in_0), b.lookup(1, TypeId::of::<u8>())));
        assert!(same(
            b.rebind(1, &u16_in_0),
            b.lookup(1, TypeId::of::<u16>())
        ));
        assert_ne!(b.rebind(1, &u16_in_0).f, u16_in_0.f);
        assert!(same(b.rebind(0, b.rebind(1, &u16_in_0)), Some(&u16_in_0)));
        // State 2 handles neither.
        assert!(std::ptr::eq(b.rebind(2, &u8_in_0), &*b.vacant));
        assert!(std::ptr::eq(b.rebind(1, &b.vacant), &*b.vacant));
        assert!(std::ptr::eq(
            b.rebind(0, &Slots::<Many>::vacant()),
            &*b.vacant
        ));
        // A one-slot index held by u16: u8 is found only by the scan. The
        // rows still rebind it; without a row the rebound cache holds
        // nothing (the next delivery looks it up).
        let st = &mut b.states[1];
        let owner = st
            .table
            .iter()
            .find(|e| e.type_id == TypeId::of::<u16>())
            .unwrap()
            .clone();
        st.slots = Slots {
            slots: vec![owner].into_boxed_slice(),
            mask: 0,
            shift: 0,
        };
        assert!(same(b.rebind(1, &u8_in_0), b.lookup(1, TypeId::of::<u8>())));
        let rowless = |e: &Entry<Many>| Entry {
            row: std::ptr::null(),
            ..e.clone()
        };
        assert!(std::ptr::eq(b.rebind(1, &rowless(&u8_in_0)), &*b.vacant));
        assert_eq!(
            b.rebind(1, &rowless(&u16_in_0)).type_id,
            TypeId::of::<u16>()
        );
    }

    /// A collision only costs the scan: with a one-slot index every type
    /// but the slot's owner is found by scanning.
    #[test]
    fn colliding_slots_fall_back_to_the_scan() {
        let mut def = Definer::<Many>::new();
        handlers!(def, u8, u16, u32);
        let mut b = def.compile().expect("well-defined");
        let st = &mut b.states[0];
        st.slots = Slots {
            slots: vec![st.table[1].clone()].into_boxed_slice(),
            mask: 0,
            shift: 0,
        };
        for e in b.states[0].table.iter() {
            assert_eq!(b.lookup(0, e.type_id).expect("found").f, e.f);
        }
        assert!(b.lookup(0, TypeId::of::<i8>()).is_none());
    }
}
