//! The error types: each refusal is a typed value whose `Display` says
//! what was refused, and whose cause is reachable through `source()`.

use std::error::Error as _;
use std::time::Duration;

use takt_agents::{
    Agent, BindingError, Config, DefineProblem, Definer, DispatcherKind, RegError, Runtime, State,
};
use takt_sched::{CpuSet, SchedError, ThreadSpec};

struct Idle;

impl Agent for Idle {
    fn define(_: &mut Definer<Self>) {}
}

#[test]
fn bindings_are_refused_with_typed_reasons() {
    let rt = Runtime::new(Config::default());
    let err = rt.thread_pool("pool", 0).unwrap_err();
    assert!(matches!(
        &err,
        RegError::Binding(BindingError::NoThreads { dispatcher, kind: DispatcherKind::ThreadPool })
            if dispatcher == "pool"
    ));
    assert_eq!(
        err.to_string(),
        "bad binding: thread_pool 'pool' needs at least one thread"
    );
    assert!(err.source().is_some());

    let prio = rt.priority("prio").unwrap();
    let one = rt.one_thread("one").unwrap();
    let group = rt.active_group("ag").unwrap();
    let mut coop = rt.coop("bad");
    let cases: [(RegError, BindingError, &str); 4] = [
        (
            coop.add(Idle, prio.priority(8)).unwrap_err(),
            BindingError::PriorityTooHigh { priority: 8, max: 7 },
            "bad binding: priority 8 is above 7",
        ),
        (
            coop.add(Idle, one.priority(1)).unwrap_err(),
            BindingError::PriorityNotSupported {
                dispatcher: "one".into(),
                kind: DispatcherKind::OneThread,
            },
            "bad binding: dispatcher 'one' is one_thread, priorities belong to the priority dispatcher",
        ),
        (
            coop.add(Idle, one.group("g")).unwrap_err(),
            BindingError::GroupNotSupported {
                dispatcher: "one".into(),
                kind: DispatcherKind::OneThread,
            },
            "bad binding: dispatcher 'one' is one_thread, groups belong to active_group",
        ),
        (
            coop.add(Idle, &group).unwrap_err(),
            BindingError::NoGroup {
                dispatcher: "ag".into(),
            },
            "bad binding: active_group 'ag' needs a group name (Dispatcher::group)",
        ),
    ];
    for (err, want, text) in cases {
        assert_eq!(err.to_string(), text);
        match err {
            RegError::Binding(got) => assert_eq!(got, want),
            other => panic!("not a binding error: {other:?}"),
        }
    }
    drop(coop);
    rt.shutdown();
}

#[test]
fn a_timer_thread_the_kernel_refuses_is_a_timer_error_with_its_cause() {
    // CPU 1023 exists on no machine this runs on: the placement is refused.
    let config = Config {
        thread: ThreadSpec::new("t").with_cpus(CpuSet::single(1023)),
        ..Config::default()
    };
    let rt = Runtime::new(config);
    let h = rt.handle();
    // the agent lives on a runtime whose threads may start
    let disp = Runtime::new(Config::default());
    let mut coop = disp.coop("c");
    let d = disp.one_thread("d").unwrap();
    let a = coop.add(Idle, &d).unwrap();
    let err = h.send_after(&a, (), Duration::from_millis(1)).unwrap_err();
    assert!(matches!(err.cause(), SchedError::Refused { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("timer thread unavailable: kernel refused cpus=1023"),
        "{err}"
    );
    assert!(err.source().is_some());
    // the failed start is kept: the next timer gets the same error
    let again = h.send_after(&a, (), Duration::from_millis(1)).unwrap_err();
    assert_eq!(again.to_string(), err.to_string());
    drop(coop);
    rt.shutdown();
    disp.shutdown();
}

/// Declares state 1 as its own parent and starts in undeclared state 5.
struct IllDefined;

impl Agent for IllDefined {
    fn define(def: &mut Definer<Self>) {
        def.state(State::new(1)).parent(State::new(1));
        def.initial(State::new(5));
    }
}

#[test]
fn an_ill_defined_agent_type_lists_its_problems_as_values() {
    let rt = Runtime::new(Config::default());
    let d = rt.one_thread("d").unwrap();
    let mut coop = rt.coop("c");
    let err = coop.add(IllDefined, &d).unwrap_err();
    let RegError::Define(e) = &err else {
        panic!("not a definition error: {err:?}")
    };
    assert_eq!(
        e.problems,
        [
            DefineProblem::OwnParent { state: 1 },
            DefineProblem::UndefinedInitial { state: 5 },
        ]
    );
    assert!(e.agent.ends_with("IllDefined"), "{}", e.agent);
    assert_eq!(
        err.to_string(),
        format!(
            "agent {} is ill-defined: state 1 cannot be its own parent; initial state 5 is not defined",
            e.agent
        )
    );
    drop(coop);
    rt.shutdown();
}
