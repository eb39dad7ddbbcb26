//! State semantics: flat and nested states, on_enter/on_exit order,
//! parent handlers, unhandled counting, bad state changes.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use takt_agents::{Agent, Ctx, Definer, State};

const ON: State = State::new(1);
const ON_LOW: State = State::new(2);
const ON_HIGH: State = State::new(3);
const OFF: State = State::new(4);

/// A lamp: OFF ⟶ ON(LOW|HIGH), with a parent handler in ON.
struct Lamp {
    log: Arc<Mutex<Vec<String>>>,
}

struct Toggle;
struct Brighter;
struct Probe;
struct Bogus;
struct Chain;

fn note(me: &mut Lamp, s: &str) {
    me.log.lock().unwrap().push(s.to_string());
}

impl Agent for Lamp {
    fn define(def: &mut Definer<Self>) {
        def.initial(OFF);
        def.state(OFF)
            .name("off")
            .on_enter(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "enter off"))
            .on_exit(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "exit off"))
            .on(|_: &mut Lamp, c: &mut Ctx<Lamp>, _: Toggle| c.change_state(ON_LOW))
            .on(|_: &mut Lamp, c: &mut Ctx<Lamp>, _: Bogus| c.change_state(State::new(999)))
            .on(|_: &mut Lamp, c: &mut Ctx<Lamp>, _: Chain| c.change_state(ON_HIGH));
        def.state(ON)
            .name("on")
            .on_enter(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "enter on"))
            .on_exit(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "exit on"))
            // Handled by the parent for both substates.
            .on(|_: &mut Lamp, c: &mut Ctx<Lamp>, _: Toggle| c.change_state(OFF))
            .on(|m: &mut Lamp, c: &mut Ctx<Lamp>, _: Probe| {
                let s = format!("probe in {}", c.state_name());
                note(m, &s)
            });
        def.state(ON_LOW)
            .name("low")
            .parent(ON)
            .on_enter(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "enter low"))
            .on_exit(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "exit low"))
            .on(|_: &mut Lamp, c: &mut Ctx<Lamp>, _: Brighter| c.change_state(ON_HIGH));
        def.state(ON_HIGH)
            .name("high")
            .parent(ON)
            .on_enter(|m: &mut Lamp, _: &mut Ctx<Lamp>| {
                note(m, "enter high");
            })
            .on_exit(|m: &mut Lamp, _: &mut Ctx<Lamp>| note(m, "exit high"))
            // Overrides the parent's Probe handler.
            .on(|m: &mut Lamp, _: &mut Ctx<Lamp>, _: Probe| note(m, "high probe"));
    }

    fn on_start(&mut self, ctx: &mut Ctx<Self>) {
        let s = format!("start in {}", ctx.state_name());
        note(self, &s);
    }
}

#[test]
fn nested_states_hooks_and_fallback() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut coop = rt.coop("lamp");
    let lamp = coop.add(Lamp { log: log.clone() }, &d).unwrap();
    let coop = coop.register().unwrap();
    lamp.send(Probe); // unhandled in OFF
    lamp.send(Toggle); // OFF -> LOW (enters ON then LOW)
    lamp.send(Probe); // parent handler
    lamp.send(Brighter); // LOW -> HIGH: exits LOW only, enters HIGH only
    lamp.send(Probe); // HIGH's own handler
    lamp.send(Brighter); // unhandled in HIGH (and in ON)
    lamp.send(Toggle); // parent's: HIGH -> OFF, exits HIGH then ON
    lamp.send(Bogus); // refused, counted
    lamp.send(Chain); // OFF -> HIGH directly: enters ON then HIGH
    assert!(eventually(
        || log.lock().unwrap().len() >= 15 && lamp.stats().queued == 0
    ));
    let expect = [
        "enter off",
        "start in off",
        "exit off",
        "enter on",
        "enter low",
        "probe in low",
        "exit low",
        "enter high",
        "high probe",
        "exit high",
        "exit on",
        "enter off",
        "exit off",
        "enter on",
        "enter high",
    ];
    let got = log.lock().unwrap().clone();
    assert_eq!(got[..expect.len()], expect, "{got:#?}");
    let st = lamp.stats();
    assert_eq!(st.unhandled, 2);
    assert_eq!(st.bad_state_changes, 1);
    assert_eq!(st.handled, 7);
    coop.deregister();
    assert!(coop.wait_timeout(LONG));
}

struct Broken;
impl Agent for Broken {
    fn define(def: &mut Definer<Self>) {
        def.state(State::new(1)).parent(State::new(2));
        def.state(State::new(2)).parent(State::new(1));
    }
}

#[test]
fn inconsistent_definitions_are_refused() {
    let rt = runtime();
    let d = rt.one_thread("d").unwrap();
    let mut coop = rt.coop("bad");
    let e = coop.add(Broken, &d).unwrap_err();
    assert!(e.to_string().contains("its own ancestor"), "{e}");
}

/// Alternates between two states on every message of one type, with the
/// handler for that type defined per state (one of them inherited from a
/// parent): each delivery must run the handler of the state current at
/// that moment, never a handler cached from the state before.
struct Flip {
    seen: Arc<Mutex<Vec<char>>>,
    done: Arc<Countdown>,
}
struct Tick(u32);
const LEFT: State = State::new(1);
const RIGHT: State = State::new(2);
const RIGHT_CHILD: State = State::new(3);

fn tick(me: &mut Flip, c: &mut Ctx<Flip>, tag: char, n: u32, next: State) {
    me.seen.lock().unwrap().push(tag);
    c.change_state(next);
    if n == 0 {
        me.done.hit();
    } else {
        c.send_self(Tick(n - 1));
    }
}

impl Agent for Flip {
    fn define(def: &mut Definer<Self>) {
        def.initial(LEFT);
        def.state(LEFT)
            .on(|m: &mut Flip, c: &mut Ctx<Flip>, Tick(n): Tick| tick(m, c, 'L', n, RIGHT_CHILD));
        def.state(RIGHT)
            .on(|m: &mut Flip, c: &mut Ctx<Flip>, Tick(n): Tick| tick(m, c, 'R', n, LEFT));
        // Inherits the Tick handler of RIGHT.
        def.state(RIGHT_CHILD).parent(RIGHT);
    }
}

#[test]
fn handler_follows_state_changes_for_one_message_type() {
    let rt = runtime();
    let d = rt.one_thread("flip").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let done = Countdown::new(1);
    let mut coop = rt.coop("flip");
    let a = coop
        .add(
            Flip {
                seen: seen.clone(),
                done: done.clone(),
            },
            &d,
        )
        .unwrap();
    coop.register().unwrap();
    a.send(Tick(9));
    assert!(done.wait());
    let got: String = seen.lock().unwrap().iter().collect();
    assert_eq!(got, "LRLRLRLRLR");
    rt.shutdown();
}

/// One message type handled in most states, changing state each time, some
/// states quiet (no hooks) and one with hooks, one without a handler for
/// the type: each delivery runs the handler of the state current at that
/// moment — the cached handler follows every change, fast (quiet to quiet)
/// or not — and the state without one counts the message as unhandled.
struct Wheel {
    log: Arc<Mutex<Vec<String>>>,
    done: Arc<Countdown>,
}
struct Turn;
struct Other;
struct Stop;
const W: [State; 5] = [
    State::new(0),
    State::new(1),
    State::new(2),
    State::new(3),
    State::new(4),
];

fn turn<const I: usize>(me: &mut Wheel, c: &mut Ctx<Wheel>, _: Turn) {
    me.log.lock().unwrap().push(format!("turn {I}"));
    c.change_state(W[(I + 1) % W.len()]);
}

impl Agent for Wheel {
    fn define(def: &mut Definer<Self>) {
        def.state(W[0])
            .on(turn::<0>)
            .on(|m: &mut Wheel, _: &mut Ctx<Wheel>, _: Stop| m.done.hit());
        def.state(W[1]).on(turn::<1>);
        def.state(W[2]).on(turn::<2>);
        // No Turn handler here; Other moves on to the hooked state.
        def.state(W[3])
            .on(|m: &mut Wheel, c: &mut Ctx<Wheel>, _: Other| {
                m.log.lock().unwrap().push("other 3".into());
                c.change_state(W[4]);
            });
        def.state(W[4])
            .on_enter(|m: &mut Wheel, _: &mut Ctx<Wheel>| {
                m.log.lock().unwrap().push("enter 4".into())
            })
            .on_exit(|m: &mut Wheel, _: &mut Ctx<Wheel>| {
                m.log.lock().unwrap().push("exit 4".into())
            })
            .on(turn::<4>);
    }
}

#[test]
fn cached_handler_follows_quiet_and_hooked_state_changes() {
    let rt = runtime();
    let d = rt.one_thread("wheel").unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let done = Countdown::new(1);
    let mut coop = rt.coop("wheel");
    let a = coop
        .add(
            Wheel {
                log: log.clone(),
                done: done.clone(),
            },
            &d,
        )
        .unwrap();
    coop.register().unwrap();
    for _ in 0..2 {
        a.send(Turn); // 0 -> 1
        a.send(Turn); // 1 -> 2
        a.send(Turn); // 2 -> 3
        a.send(Turn); // unhandled in 3
        a.send(Other); // 3 -> 4: enters 4
        a.send(Turn); // 4's handler, exits 4 -> 0
    }
    a.send(Turn); // 0 -> 1
    a.send(Turn); // 1 -> 2
    a.send(Turn); // 2 -> 3
    a.send(Turn); // unhandled in 3
    a.send(Other); // 3 -> 4
    a.send(Turn); // 4 -> 0
    a.send(Stop);
    assert!(done.wait());
    let round = [
        "turn 0", "turn 1", "turn 2", "other 3", "enter 4", "turn 4", "exit 4",
    ];
    let expect: Vec<&str> = round
        .iter()
        .cycle()
        .take(3 * round.len())
        .copied()
        .collect();
    assert_eq!(*log.lock().unwrap(), expect);
    assert_eq!(a.stats().unhandled, 3);
    rt.shutdown();
}
