//! Progress of long runs on stderr: one bar per stage with its estimated
//! time, the same for every long command.
//!
//! A [`Progress`] draws in one of three ways, chosen once:
//! - [`Progress::bars`]: indicatif bars, one per open [`Stage`], each with
//!   the elapsed time against the stage's estimate and the latest step;
//! - [`Progress::lines`]: one plain line per step (`[  12.3s] stage: step`),
//!   for logs and pipes;
//! - [`Progress::hidden`]: nothing (library use, tests).
//!
//! [`Progress::auto`] picks bars when stderr is a terminal and lines
//! otherwise. Cloning shares the display.

use std::fmt;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Display {
    /// indicatif bars on stderr.
    Bars,
    /// One line per step on stderr.
    Lines,
    /// Nothing.
    Hidden,
}

#[derive(Debug)]
struct Open {
    id: u64,
    name: String,
    bar: Option<ProgressBar>,
}

#[derive(Debug)]
struct Inner {
    display: Display,
    multi: Option<MultiProgress>,
    started: Instant,
    /// Open stages, innermost last.
    open: Mutex<(u64, Vec<Open>)>,
}

/// The progress display of one command (cheap to clone; clones share it).
#[derive(Clone, Debug)]
pub struct Progress {
    inner: Arc<Inner>,
}

/// Formats seconds as `42 s` or `3.5 min`.
pub fn fmt_secs(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else {
        format!("{:.1} min", secs / 60.0)
    }
}

fn time_bar(estimate: Duration) -> impl Fn(&ProgressState, &mut dyn fmt::Write) + Clone {
    move |state: &ProgressState, w: &mut dyn fmt::Write| {
        const WIDTH: usize = 24;
        let frac = if estimate.is_zero() {
            1.0
        } else {
            (state.elapsed().as_secs_f64() / estimate.as_secs_f64()).min(1.0)
        };
        let full = (frac * WIDTH as f64).round() as usize;
        let _ = write!(
            w,
            "[{}{}] {:>6} of ~{}",
            "#".repeat(full),
            "-".repeat(WIDTH - full),
            fmt_secs(state.elapsed().as_secs_f64()),
            fmt_secs(estimate.as_secs_f64())
        );
    }
}

impl Progress {
    fn with(display: Display) -> Self {
        let multi = (display == Display::Bars)
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Progress {
            inner: Arc::new(Inner {
                display,
                multi,
                started: Instant::now(),
                open: Mutex::new((0, Vec::new())),
            }),
        }
    }

    /// Bars on stderr.
    pub fn bars() -> Self {
        Progress::with(Display::Bars)
    }

    /// One line per step on stderr.
    pub fn lines() -> Self {
        Progress::with(Display::Lines)
    }

    /// No output.
    pub fn hidden() -> Self {
        Progress::with(Display::Hidden)
    }

    /// Bars when stderr is a terminal, else lines.
    pub fn auto() -> Self {
        if std::io::stderr().is_terminal() {
            Progress::bars()
        } else {
            Progress::lines()
        }
    }

    /// How this display shows progress.
    pub fn display(&self) -> Display {
        self.inner.display
    }

    /// Opens a stage expected to take `estimate`; it closes when the
    /// returned [`Stage`] is finished or dropped.
    pub fn stage(&self, name: impl Into<String>, estimate: Duration) -> Stage {
        let name = name.into();
        let bar = self.inner.multi.as_ref().map(|m| {
            let style = ProgressStyle::with_template("{prefix:.bold} {timebar} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner())
                .with_key("timebar", time_bar(estimate));
            let bar = m.add(ProgressBar::new_spinner().with_style(style));
            bar.set_prefix(name.clone());
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        if self.inner.display == Display::Lines {
            self.line(
                &name,
                &format!("expected about {}", fmt_secs(estimate.as_secs_f64())),
            );
        }
        let mut open = self
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.0 += 1;
        let id = open.0;
        open.1.push(Open {
            id,
            name: name.clone(),
            bar,
        });
        Stage {
            progress: self.clone(),
            id,
            name,
            started: Instant::now(),
            done: false,
        }
    }

    /// Reports a step of the innermost open stage (or a free line when no
    /// stage is open).
    pub fn step(&self, msg: &str) {
        let open = self
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match open.1.last() {
            Some(Open { bar: Some(b), .. }) => b.set_message(msg.to_string()),
            Some(Open { name, .. }) => self.line(name, msg),
            None => self.line("", msg),
        }
    }

    /// Prints a line above the bars (or as a line), whatever the display
    /// but [`Display::Hidden`].
    pub fn println(&self, msg: &str) {
        match (&self.inner.multi, self.inner.display) {
            (Some(m), _) => {
                let _ = m.println(msg);
            }
            (None, Display::Hidden) => {}
            (None, _) => eprintln!("{msg}"),
        }
    }

    fn line(&self, stage: &str, msg: &str) {
        if self.inner.display != Display::Lines {
            return;
        }
        let t = self.inner.started.elapsed().as_secs_f64();
        if stage.is_empty() {
            eprintln!("[{t:6.1}s] {msg}");
        } else {
            eprintln!("[{t:6.1}s] {stage}: {msg}");
        }
    }

    fn close(&self, id: u64, summary: &str) {
        let mut open = self
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = open.1.iter().position(|o| o.id == id) {
            let o = open.1.remove(i);
            match o.bar {
                Some(b) => b.finish_with_message(summary.to_string()),
                None => self.line(&o.name, summary),
            }
        }
    }
}

/// An open stage of a [`Progress`]; closes with a `done in N s` line when
/// finished or dropped.
#[derive(Debug)]
pub struct Stage {
    progress: Progress,
    id: u64,
    name: String,
    started: Instant,
    done: bool,
}

impl Stage {
    /// The stage's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reports a step of this stage.
    pub fn step(&self, msg: &str) {
        let open = self
            .progress
            .inner
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match open.1.iter().find(|o| o.id == self.id) {
            Some(Open { bar: Some(b), .. }) => b.set_message(msg.to_string()),
            Some(_) => self.progress.line(&self.name, msg),
            None => {}
        }
    }

    /// Closes the stage with `done in N s`.
    pub fn finish(mut self) {
        self.close("done");
    }

    /// Closes the stage with `outcome in N s` (e.g. `interrupted`).
    pub fn finish_with(mut self, outcome: &str) {
        self.close(outcome);
    }

    fn close(&mut self, outcome: &str) {
        if !self.done {
            self.done = true;
            let summary = format!("{outcome} in {:.1} s", self.started.elapsed().as_secs_f64());
            self.progress.close(self.id, &summary);
        }
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.close("done");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_nest_and_close_in_any_order() {
        let p = Progress::hidden();
        let outer = p.stage("agents", Duration::from_secs(60));
        let inner = p.stage("ping_pong", Duration::from_secs(5));
        p.step("threads=2");
        assert_eq!(p.inner.open.lock().unwrap().1.len(), 2);
        outer.finish();
        assert_eq!(p.inner.open.lock().unwrap().1[0].name, "ping_pong");
        inner.step("run 1/5");
        drop(inner);
        assert!(p.inner.open.lock().unwrap().1.is_empty());
        p.step("no stage: ignored when hidden");
    }

    #[test]
    fn seconds_read_plainly() {
        assert_eq!(fmt_secs(42.4), "42 s");
        assert_eq!(fmt_secs(210.0), "3.5 min");
    }
}
