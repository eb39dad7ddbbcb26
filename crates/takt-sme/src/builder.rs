//! [`NetworkBuilder`]: declaring buses, signals and processes at run time.
//!
//! The network is built while the program runs (the thesis found generated
//! code took over an hour to compile for 5000 processes) and is fixed once
//! [`NetworkBuilder::build`] returns.
//!
//! ```
//! use takt_sme::{Executor, In, Io, NetworkBuilder, Out, Process, SignalDef};
//!
//! struct Incr { input: In<u64>, output: Out<u64> }
//! impl Process for Incr {
//!     fn step(&mut self, io: &mut Io<'_>) {
//!         let v = io.read(self.input);
//!         io.write(&self.output, v + 1);
//!     }
//! }
//!
//! let mut b = NetworkBuilder::new();
//! let n = 4;
//! let buses: Vec<_> = (0..n).map(|i| {
//!     let bus = b.bus(format!("b{i}")).unwrap();
//!     b.signal(bus, "v", SignalDef::new(0u64)).unwrap()
//! }).collect();
//! for i in 0..n {
//!     let (input, output) = (buses[(i + n - 1) % n], buses[i]);
//!     b.process(format!("p{i}"), |ports| Incr {
//!         input: ports.input(input),
//!         output: ports.output(output),
//!     }).unwrap();
//! }
//! let mut net = b.build().unwrap();
//! net.run(&Executor::sequential(), 10).unwrap();
//! assert_eq!(net.value(buses[0]), 10);
//! ```

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use crate::arena::Arena;
use crate::error::BuildError;
use crate::network::next_network_id;
use crate::network::Network;
use crate::process::{Kind, KindStore, Process};
use crate::signal::{
    Format, In, Initial, Out, Signal, SignalDef, SignalMeta, KIND_SHIFT, MAX_ALIGN, MAX_KINDS,
    MAX_PER_KIND, NO_WRITER,
};

/// A bus: a named group of signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bus {
    net: u32,
    id: u32,
}

/// Identifies a process in its network (its name is what errors print).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessId {
    pub(crate) kind: u32,
    pub(crate) local: u32,
}

/// A kind under construction: a `Vec<P>` behind `Any`, and how to finish it.
struct KindBuild {
    states: Box<dyn Any + Send>,
    names: Vec<String>,
    finish: fn(Box<dyn Any + Send>) -> Box<dyn KindStore>,
}

fn finish_kind<P: Process>(states: Box<dyn Any + Send>) -> Box<dyn KindStore> {
    let states = *states
        .downcast::<Vec<P>>()
        .expect("kind states hold their own type");
    Box::new(Kind::new(states))
}

/// Declares a network: buses, their signals, and the processes that read
/// and write them; [`NetworkBuilder::build`] fixes it (the crate docs have
/// an example).
pub struct NetworkBuilder {
    id: u32,
    buses: Vec<String>,
    bus_signals: Vec<HashSet<String>>,
    signals: Vec<SignalMeta>,
    defaults: Arena,
    initials: Arena,
    kinds: Vec<KindBuild>,
    kind_of: HashMap<TypeId, u32>,
    process_names: HashSet<String>,
    /// Every claim: (signal, writer packed) in claim order per process.
    claims: Vec<(u32, u32)>,
}

impl fmt::Debug for NetworkBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetworkBuilder")
            .field("id", &self.id)
            .field("buses", &self.buses.len())
            .field("signals", &self.signals.len())
            .field("processes", &self.process_names.len())
            .finish()
    }
}

impl Default for NetworkBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl NetworkBuilder {
    /// An empty network.
    pub fn new() -> Self {
        NetworkBuilder {
            id: next_network_id(),
            buses: Vec::new(),
            bus_signals: Vec::new(),
            signals: Vec::new(),
            defaults: Arena::default(),
            initials: Arena::default(),
            kinds: Vec::new(),
            kind_of: HashMap::new(),
            process_names: HashSet::new(),
            claims: Vec::new(),
        }
    }

    /// Declares a bus. Names must be unique and non-empty.
    pub fn bus(&mut self, name: impl Into<String>) -> Result<Bus, BuildError> {
        let name = name.into();
        if name.is_empty() {
            return Err(BuildError::EmptyName { what: "bus" });
        }
        if self.buses.contains(&name) {
            return Err(BuildError::DuplicateName { what: "bus", name });
        }
        self.buses.push(name);
        self.bus_signals.push(HashSet::new());
        Ok(Bus {
            net: self.id,
            id: self.buses.len() as u32 - 1,
        })
    }

    /// Declares a signal of type `T` on `bus`.
    pub fn signal<T>(
        &mut self,
        bus: Bus,
        name: impl Into<String>,
        def: SignalDef<T>,
    ) -> Result<Signal<T>, BuildError>
    where
        T: Copy + Send + Sync + fmt::Debug + 'static,
    {
        let name = name.into();
        if bus.net != self.id {
            return Err(BuildError::ForeignBus {
                bus: bus.id as usize,
            });
        }
        if name.is_empty() {
            return Err(BuildError::EmptyName { what: "signal" });
        }
        let bus_name = &self.buses[bus.id as usize];
        if align_of::<T>() > MAX_ALIGN {
            return Err(BuildError::AlignTooLarge {
                bus: bus_name.clone(),
                signal: name,
                type_name: std::any::type_name::<T>(),
                align: align_of::<T>(),
            });
        }
        if self.signals.len() >= u32::MAX as usize - 1 {
            return Err(BuildError::TooMany {
                what: "signals",
                max: u32::MAX as usize - 1,
            });
        }
        if self.defaults.len() + size_of::<T>() + MAX_ALIGN > u32::MAX as usize {
            return Err(BuildError::TooMany {
                what: "bytes of signal values",
                max: u32::MAX as usize,
            });
        }
        if !self.bus_signals[bus.id as usize].insert(name.clone()) {
            return Err(BuildError::DuplicateName {
                what: "signal",
                name: format!("{bus_name}.{name}"),
            });
        }
        let off = self.defaults.alloc::<T>();
        self.initials.resize(self.defaults.len());
        let (initial, initially_undefined) = match def.initial {
            Initial::Default => (def.default, false),
            Initial::Value(v) => (v, false),
            Initial::Undefined => (def.default, true),
        };
        // SAFETY: `off` was just allocated for a `T`; both arenas share the layout.
        unsafe {
            self.defaults.put(off, def.default);
            self.initials.put(off, initial);
        }
        let id = self.signals.len() as u32;
        self.signals.push(SignalMeta {
            name,
            bus: bus.id,
            off: off as u32,
            size: size_of::<T>() as u32,
            policy: def.policy,
            initially_undefined,
            writer: NO_WRITER,
            type_name: std::any::type_name::<T>(),
            format: Format::of::<T>(),
        });
        Ok(Signal {
            net: self.id,
            id,
            off: off as u32,
            _t: PhantomData,
        })
    }

    /// Adds a process named `name` whose state `make` builds, claiming its
    /// ports through the [`Ports`] it is given.
    ///
    /// Processes of one Rust type are stored together and stepped in batches;
    /// the execution order inside a cycle is by type, then by insertion (it
    /// never changes results).
    pub fn process<P: Process>(
        &mut self,
        name: impl Into<String>,
        make: impl FnOnce(&mut Ports<'_>) -> P,
    ) -> Result<ProcessId, BuildError> {
        let name = name.into();
        if name.is_empty() {
            return Err(BuildError::EmptyName { what: "process" });
        }
        if self.process_names.contains(&name) {
            return Err(BuildError::DuplicateName {
                what: "process",
                name,
            });
        }
        let kind = match self.kind_of.get(&TypeId::of::<P>()) {
            Some(&k) => k,
            None => {
                if self.kinds.len() >= MAX_KINDS {
                    return Err(BuildError::TooMany {
                        what: "process types",
                        max: MAX_KINDS,
                    });
                }
                self.kinds.push(KindBuild {
                    states: Box::new(Vec::<P>::new()),
                    names: Vec::new(),
                    finish: finish_kind::<P>,
                });
                let k = self.kinds.len() as u32 - 1;
                self.kind_of.insert(TypeId::of::<P>(), k);
                k
            }
        };
        let local = self.kinds[kind as usize].names.len();
        if local >= MAX_PER_KIND {
            return Err(BuildError::TooMany {
                what: "processes of one type",
                max: MAX_PER_KIND,
            });
        }
        let writer = (kind << KIND_SHIFT) | local as u32;
        let mut ports = Ports {
            net: self.id,
            writer,
            process: &name,
            signals: &self.signals,
            buses: &self.buses,
            claimed: Vec::new(),
            error: None,
            conflict: None,
        };
        let state = make(&mut ports);
        let Ports {
            claimed,
            error,
            conflict,
            ..
        } = ports;
        if let Some(mut e) = error {
            if let (BuildError::TwoWriters { first, .. }, Some(w)) = (&mut e, conflict) {
                let kb = &self.kinds[(w >> KIND_SHIFT) as usize];
                *first = kb.names[(w & ((1 << KIND_SHIFT) - 1)) as usize].clone();
            }
            return Err(e);
        }
        for &s in &claimed {
            self.signals[s as usize].writer = writer;
            self.claims.push((s, writer));
        }
        let kb = &mut self.kinds[kind as usize];
        kb.states
            .downcast_mut::<Vec<P>>()
            .expect("kind states hold their own type")
            .push(state);
        kb.names.push(name.clone());
        self.process_names.insert(name);
        Ok(ProcessId {
            kind,
            local: local as u32,
        })
    }

    /// Checks the network (every signal has a writer) and freezes it.
    pub fn build(self) -> Result<Network, BuildError> {
        if let Some(s) = self.signals.iter().find(|s| s.writer == NO_WRITER) {
            return Err(BuildError::NoWriter {
                bus: self.buses[s.bus as usize].clone(),
                signal: s.name.clone(),
            });
        }
        let mut kind_base = Vec::with_capacity(self.kinds.len() + 1);
        let mut names = Vec::new();
        let mut kinds = Vec::with_capacity(self.kinds.len());
        for kb in self.kinds {
            kind_base.push(names.len() as u32);
            names.extend(kb.names);
            kinds.push((kb.finish)(kb.states));
        }
        kind_base.push(names.len() as u32);
        // Signals owned by each process, grouped in execution order.
        let exec_of = |writer: u32| {
            kind_base[(writer >> KIND_SHIFT) as usize] + (writer & ((1 << KIND_SHIFT) - 1))
        };
        let mut per_process: Vec<Vec<u32>> = vec![Vec::new(); names.len()];
        for &(s, w) in &self.claims {
            per_process[exec_of(w) as usize].push(s);
        }
        let mut owned_start = Vec::with_capacity(names.len() + 1);
        let mut owned = Vec::with_capacity(self.signals.len());
        for list in per_process {
            owned_start.push(owned.len() as u32);
            owned.extend(list);
        }
        owned_start.push(owned.len() as u32);
        Ok(Network::new(crate::network::Parts {
            id: self.id,
            buses: self.buses,
            signals: self.signals,
            defaults: self.defaults,
            initials: self.initials,
            kinds,
            kind_base,
            names,
            owned,
            owned_start,
        }))
    }
}

/// What a process being added uses to claim its ports.
pub struct Ports<'b> {
    net: u32,
    writer: u32,
    process: &'b str,
    signals: &'b [SignalMeta],
    buses: &'b [String],
    claimed: Vec<u32>,
    error: Option<BuildError>,
    /// The earlier writer of a signal claimed twice.
    conflict: Option<u32>,
}

impl fmt::Debug for Ports<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ports")
            .field("process", &self.process)
            .field("outputs", &self.claimed.len())
            .finish()
    }
}

impl Ports<'_> {
    /// A read port on `sig`. Any number of processes may read a signal.
    pub fn input<T>(&mut self, sig: Signal<T>) -> In<T> {
        if sig.net != self.net {
            self.fail(BuildError::ForeignSignal {
                process: self.process.to_string(),
            });
        }
        In {
            net: sig.net,
            id: sig.id,
            off: sig.off,
            _t: PhantomData,
        }
    }

    /// The write port of `sig`. Exactly one process may claim it; a second
    /// claim makes [`NetworkBuilder::process`] fail with
    /// [`BuildError::TwoWriters`].
    pub fn output<T>(&mut self, sig: Signal<T>) -> Out<T> {
        if sig.net != self.net {
            self.fail(BuildError::ForeignSignal {
                process: self.process.to_string(),
            });
        } else {
            let meta = &self.signals[sig.id as usize];
            let bus = self.buses[meta.bus as usize].clone();
            if self.claimed.contains(&sig.id) {
                self.fail(BuildError::OutputTwice {
                    process: self.process.to_string(),
                    bus,
                    signal: meta.name.clone(),
                });
            } else if meta.writer != NO_WRITER {
                if self.error.is_none() {
                    self.conflict = Some(meta.writer);
                }
                self.fail(BuildError::TwoWriters {
                    bus,
                    signal: meta.name.clone(),
                    first: String::new(),
                    second: self.process.to_string(),
                });
            } else {
                self.claimed.push(sig.id);
            }
        }
        Out {
            net: sig.net,
            id: sig.id,
            off: sig.off,
            writer: self.writer,
            _t: PhantomData,
        }
    }

    /// The name of the process being added.
    pub fn process_name(&self) -> &str {
        self.process
    }

    fn fail(&mut self, e: BuildError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }
}
