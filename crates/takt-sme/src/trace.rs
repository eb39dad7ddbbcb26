//! Traces: every signal's committed value, cycle by cycle, as CSV or VCD.
//!
//! - **CSV**: a header `cycle,<bus>.<signal>,...` (declaration order), then
//!   one row per cycle with the values committed at its end, `U` where a
//!   value is undefined. Values are written as their `Debug` text, quoted
//!   when needed (RFC 4180), so two traces are equal exactly when every
//!   value is.
//! - **VCD** (IEEE 1364 value change dump, viewable in GTKWave): one scope
//!   per bus; integers and `bool` as bit vectors, floats as `real`, other
//!   types as `string`. Time `0` holds the values before the first traced
//!   cycle and time `c + 1` the values committed by cycle `c`; only changes
//!   are written. Undefined values are `x` (`nan` for reals, `U` for text).
//!
//! Tracing is off the hot path: with no trace set nothing is recorded or
//! tracked. With one set, worker 0 writes each cycle's row after the cycle
//! barrier while the others start the next cycle.
//!
//! ```
//! # use takt_sme::*;
//! # struct Count { out: Out<u8> }
//! # impl Process for Count { fn step(&mut self, io: &mut Io<'_>) { let c = io.cycle() as u8; io.write(&self.out, c); } }
//! let mut b = NetworkBuilder::new();
//! let bus = b.bus("counter").unwrap();
//! let v = b.signal(bus, "value", SignalDef::new(0u8)).unwrap();
//! b.process("count", |p| Count { out: p.output(v) }).unwrap();
//! let mut net = b.build().unwrap();
//! let (trace, buffer) = Trace::csv_in_memory();
//! net.set_trace(trace);
//! net.run(&Executor::sequential(), 3).unwrap();
//! assert_eq!(buffer.text(), "cycle,counter.value\n0,0\n1,1\n2,2\n");
//! ```

use std::fmt;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use crate::network::Network;
use crate::signal::{Format, VcdKind};

/// The file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Comma-separated values.
    Csv,
    /// Value change dump.
    Vcd,
}

struct Column {
    bus: String,
    name: String,
    off: usize,
    format: Format,
    /// VCD identifier code.
    code: String,
}

/// A trace being written. Attach it with
/// [`Network::set_trace`](crate::Network::set_trace).
pub struct Trace {
    format: TraceFormat,
    out: Box<dyn Write + Send>,
    columns: Vec<Column>,
    begun: bool,
    failed: bool,
    /// VCD: last value written per column.
    last: Vec<String>,
    line: String,
    value: String,
}

impl fmt::Debug for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trace")
            .field("format", &self.format)
            .field("signals", &self.columns.len())
            .field("failed", &self.failed)
            .finish()
    }
}

/// An in-memory trace destination that stays readable after the trace is
/// handed to a network.
#[derive(Clone, Debug, Default)]
pub struct TraceBuffer(Arc<Mutex<Vec<u8>>>);

impl TraceBuffer {
    /// The bytes written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The bytes written so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

impl Write for TraceBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// VCD identifier for column `i`: base-94 over the printable ASCII range.
fn vcd_code(mut i: usize) -> String {
    let mut s = String::new();
    loop {
        s.push((b'!' + (i % 94) as u8) as char);
        i /= 94;
        if i == 0 {
            return s;
        }
        i -= 1;
    }
}

fn csv_field(text: &str, line: &mut String) {
    if text.contains([',', '"', '\n', '\r']) {
        line.push('"');
        line.push_str(&text.replace('"', "\"\""));
        line.push('"');
    } else {
        line.push_str(text);
    }
}

/// VCD identifiers (scope and variable names) may not contain whitespace.
fn vcd_ident(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

impl Trace {
    /// A CSV trace into `out` (buffer it, e.g. with `BufWriter`, for files).
    pub fn csv(out: impl Write + Send + 'static) -> Trace {
        Trace::new(TraceFormat::Csv, Box::new(out))
    }

    /// A VCD trace into `out`.
    pub fn vcd(out: impl Write + Send + 'static) -> Trace {
        Trace::new(TraceFormat::Vcd, Box::new(out))
    }

    /// A CSV trace in memory.
    pub fn csv_in_memory() -> (Trace, TraceBuffer) {
        let b = TraceBuffer::default();
        (Trace::csv(b.clone()), b)
    }

    /// A VCD trace in memory.
    pub fn vcd_in_memory() -> (Trace, TraceBuffer) {
        let b = TraceBuffer::default();
        (Trace::vcd(b.clone()), b)
    }

    fn new(format: TraceFormat, out: Box<dyn Write + Send>) -> Trace {
        Trace {
            format,
            out,
            columns: Vec::new(),
            begun: false,
            failed: false,
            last: Vec::new(),
            line: String::new(),
            value: String::new(),
        }
    }

    /// The format.
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    pub(crate) fn failed(&self) -> bool {
        self.failed
    }

    /// Flushes the destination.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Writes the header (first use only) and, for VCD, the values before
    /// cycle `cycle`.
    ///
    /// # Safety-relevant contract
    /// `values`/`undef` must be the buffers cycle `cycle` reads, valid for
    /// the network's layout.
    pub(crate) fn begin(
        &mut self,
        net: &Network,
        cycle: u64,
        values: *const u8,
        undef: *const u8,
    ) -> io::Result<()> {
        if self.begun {
            return Ok(());
        }
        self.begun = true;
        self.columns = net
            .signals
            .iter()
            .enumerate()
            .map(|(i, s)| Column {
                bus: net.buses[s.bus as usize].clone(),
                name: s.name.clone(),
                off: s.off as usize,
                format: s.format,
                code: vcd_code(i),
            })
            .collect();
        self.last = vec![String::new(); self.columns.len()];
        let r = match self.format {
            TraceFormat::Csv => self.csv_header(),
            TraceFormat::Vcd => self.vcd_header(cycle, values, undef),
        };
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn csv_header(&mut self) -> io::Result<()> {
        let mut line = String::from("cycle");
        for c in &self.columns {
            line.push(',');
            csv_field(&format!("{}.{}", c.bus, c.name), &mut line);
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    fn vcd_header(&mut self, cycle: u64, values: *const u8, undef: *const u8) -> io::Result<()> {
        let mut h = String::new();
        h.push_str("$version takt-sme ");
        h.push_str(env!("CARGO_PKG_VERSION"));
        h.push_str(" $end\n$comment one time unit per SME cycle $end\n$timescale 1ns $end\n");
        let mut i = 0;
        while i < self.columns.len() {
            let bus = self.columns[i].bus.clone();
            h.push_str(&format!("$scope module {} $end\n", vcd_ident(&bus)));
            while i < self.columns.len() && self.columns[i].bus == bus {
                let c = &self.columns[i];
                let (ty, width) = match c.format.vcd {
                    VcdKind::Bits(1) => ("wire", 1),
                    VcdKind::Bits(w) => ("wire", w),
                    VcdKind::Real => ("real", 64),
                    VcdKind::Text => ("string", 1),
                };
                h.push_str(&format!(
                    "$var {ty} {width} {} {} $end\n",
                    c.code,
                    vcd_ident(&c.name)
                ));
                i += 1;
            }
            h.push_str("$upscope $end\n");
        }
        h.push_str("$enddefinitions $end\n");
        h.push_str(&format!("#{cycle}\n$dumpvars\n"));
        self.out.write_all(h.as_bytes())?;
        // SAFETY: forwarded contract of `begin`.
        unsafe { self.vcd_changes(values, undef, true)? };
        self.out.write_all(b"$end\n")
    }

    /// Appends one cycle.
    ///
    /// # Safety
    /// `values`/`undef` must hold the values committed by `cycle` in the
    /// network's layout and not change during the call.
    pub(crate) unsafe fn row(
        &mut self,
        cycle: u64,
        values: *const u8,
        undef: *const u8,
    ) -> io::Result<()> {
        let r = match self.format {
            // SAFETY: forwarded.
            TraceFormat::Csv => unsafe { self.csv_row(cycle, values, undef) },
            TraceFormat::Vcd => {
                self.out.write_all(format!("#{}\n", cycle + 1).as_bytes())?;
                // SAFETY: forwarded.
                unsafe { self.vcd_changes(values, undef, false) }
            }
        };
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    unsafe fn csv_row(
        &mut self,
        cycle: u64,
        values: *const u8,
        undef: *const u8,
    ) -> io::Result<()> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        line.push_str(&cycle.to_string());
        for (i, c) in self.columns.iter().enumerate() {
            line.push(',');
            // SAFETY: `i` is a signal index and `c.off` its offset (caller).
            if unsafe { *undef.add(i) } != 0 {
                line.push('U');
            } else {
                self.value.clear();
                unsafe { (c.format.debug)(values.add(c.off), &mut self.value) };
                csv_field(&self.value, &mut line);
            }
        }
        line.push('\n');
        let r = self.out.write_all(line.as_bytes());
        self.line = line;
        r
    }

    unsafe fn vcd_changes(
        &mut self,
        values: *const u8,
        undef: *const u8,
        all: bool,
    ) -> io::Result<()> {
        let mut out = String::new();
        for (i, c) in self.columns.iter().enumerate() {
            self.value.clear();
            // SAFETY: `i` is a signal index and `c.off` its offset (caller).
            let undefined = unsafe { *undef.add(i) } != 0;
            match (undefined, c.format.vcd) {
                (true, VcdKind::Bits(1)) => self.value.push('x'),
                (true, VcdKind::Bits(_)) => self.value.push_str("bx"),
                (true, VcdKind::Real) => self.value.push_str("rnan"),
                (true, VcdKind::Text) => self.value.push_str("sU"),
                (false, _) => unsafe { (c.format.vcd_value)(values.add(c.off), &mut self.value) },
            }
            if all || self.value != self.last[i] {
                out.push_str(&self.value);
                if c.format.vcd != VcdKind::Bits(1) {
                    out.push(' ');
                }
                out.push_str(&c.code);
                out.push('\n');
                self.last[i].clone_from(&self.value);
            }
        }
        self.out.write_all(out.as_bytes())
    }
}
