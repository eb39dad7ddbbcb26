//! Every benchmark with small parameters: the run completes and its
//! observations are exactly the work asked for. No timing is asserted beyond
//! "positive" (these run on a loaded machine).

use super::*;

const DEADLINE: Duration = Duration::from_secs(120);

#[test]
fn caf_0_17_is_available() {
    // setup.sh installs libcaf-dev: a build without it is a failure here.
    let (major, minor, _) = caf_version().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((major, minor), (0, 17));
}

#[test]
fn ping_pong_counts_every_delivery() {
    for home in [
        Home::Scheduler { threads: 1 },
        Home::Scheduler { threads: 2 },
        Home::Detached,
    ] {
        for messages in [1, 2, 2_001] {
            let o = ping_pong(messages, home, DEADLINE).unwrap_or_else(|e| panic!("{home:?}: {e}"));
            assert!(o.elapsed > Duration::ZERO, "{home:?} {o:?}");
            assert_eq!(o.value, messages, "{home:?}");
            assert_eq!(o.handled, messages, "{home:?}");
            assert_eq!((o.completed, o.started, o.stopped), (1, 2, 2), "{home:?}");
            match home {
                // Only the caller's first send comes from another thread.
                Home::Scheduler { threads: 1 } => assert_eq!(o.crossed, 1, "{o:?}"),
                Home::Detached => assert_eq!(o.crossed, messages, "{o:?}"),
                Home::Scheduler { .. } => assert!((1..=messages).contains(&o.crossed)),
            }
        }
    }
}

#[test]
fn customer_ring_retires_every_token() {
    for (agents, tokens) in [(1, 1), (7, 3), (300, 20), (64, 64)] {
        let o = customer_ring(agents, tokens, 1, DEADLINE).unwrap();
        assert!(o.elapsed > Duration::ZERO && o.registration > Duration::ZERO);
        assert_eq!(o.completed, tokens);
        assert_eq!(o.handled, agents * tokens);
        assert_eq!((o.started, o.stopped), (agents, agents));
    }
}

#[test]
fn skynet_sums_its_leaves() {
    for (leaves, nodes) in [(1, 1), (10, 11), (1_000, 1_111)] {
        let o = skynet(leaves, 1, DEADLINE).unwrap();
        assert_eq!(o.value, leaves * (leaves - 1) / 2);
        assert_eq!(o.handled, nodes - 1);
        assert_eq!((o.started, o.stopped, o.completed), (nodes, nodes, 1));
    }
}

#[test]
fn a_missed_deadline_is_a_timeout_and_the_run_still_tears_down() {
    let err = ping_pong(
        u64::MAX,
        Home::Scheduler { threads: 1 },
        Duration::from_millis(20),
    )
    .unwrap_err();
    match err {
        CafError::Timeout { waiting_for, after } => {
            assert!(waiting_for.starts_with("the last delivery (2 of 2 actors started"));
            assert!(after >= Duration::from_millis(20));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn invalid_parameters_are_refused_before_anything_runs() {
    let msg = |r: Result<Outcome, CafError>| r.unwrap_err().to_string();
    assert_eq!(
        msg(ping_pong(0, Home::Detached, DEADLINE)),
        "invalid parameters: messages must be at least 1, got 0"
    );
    assert_eq!(
        msg(ping_pong(1, Home::Scheduler { threads: 0 }, DEADLINE)),
        "invalid parameters: scheduler threads must be at least 1, got 0"
    );
    assert_eq!(
        msg(customer_ring(5, 6, 1, DEADLINE)),
        "invalid parameters: tokens (M) must be between 1 and agents (N = 5), got 6"
    );
    assert_eq!(
        msg(customer_ring(0, 0, 1, DEADLINE)),
        "invalid parameters: agents (N) must be at least 1, got 0"
    );
    for leaves in [0, 2, 20, 100_000_000] {
        assert_eq!(
            msg(skynet(leaves, 1, DEADLINE)),
            format!(
                "invalid parameters: leaves must be a power of ten from 1 to 10000000, got {leaves}"
            )
        );
    }
}
