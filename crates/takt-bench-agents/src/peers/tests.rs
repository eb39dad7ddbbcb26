//! Every peer on every benchmark with small parameters: the run completes,
//! checks its own work, and gives a positive, finite figure. No timing is
//! asserted beyond that (these run on a loaded 2-core machine).

use super::*;

/// Tests that run peers hold this, so that the thread-leak test counts only
/// its own threads.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn assert_plausible(peer: Peer, bench: &PeerBench) -> PeerSample {
    let sample = run_once(peer, bench).unwrap_or_else(|e| panic!("{peer} {bench:?}: {e}"));
    assert!(
        sample.value.is_finite() && sample.value > 0.0,
        "{peer} {bench:?}: value {}",
        sample.value
    );
    sample
}

fn ping_pong(placement: Placement) {
    let _serial = serial();
    for peer in Peer::ALL {
        for messages in [1, 2, 2_001] {
            let bench = PeerBench::PingPong {
                messages,
                placement,
            };
            if !peer.supports(&bench) {
                let err = run_once(peer, &bench).unwrap_err();
                assert!(
                    matches!(err, PeerError::Setup { .. }),
                    "{peer} {bench:?}: {err}"
                );
                continue;
            }
            let sample = assert_plausible(peer, &bench);
            assert_eq!(sample.registration_us_per_agent, None);
            let crossed = sample.crossed.expect("ping_pong counts crossings");
            let one = 1.0 / messages as f64;
            match placement {
                // Only the driver's first send may come from another thread.
                Placement::OneThread => assert!(crossed <= one, "{peer}: {crossed}"),
                // Every delivery's sender is the other player (or the driver).
                Placement::ThreadPerAgent => assert_eq!(crossed, 1.0, "{peer}"),
                Placement::TwoWorkers => assert!((0.0..=1.0).contains(&crossed), "{peer}"),
            }
        }
    }
}

#[test]
fn ping_pong_one_thread_every_peer() {
    ping_pong(Placement::OneThread);
}

#[test]
fn ping_pong_thread_per_agent_every_peer() {
    ping_pong(Placement::ThreadPerAgent);
}

#[test]
fn ping_pong_two_workers_where_supported() {
    ping_pong(Placement::TwoWorkers);
    assert!(
        Peer::ALL
            .iter()
            .filter(|p| p.supports(&PeerBench::PingPong {
                messages: 1,
                placement: Placement::TwoWorkers
            }))
            .count()
            == 3
    );
}

#[test]
fn customer_ring_every_peer() {
    let _serial = serial();
    for peer in Peer::ALL {
        for (agents, tokens) in [(1, 1), (7, 3), (300, 20), (64, 64)] {
            let bench = PeerBench::CustomerRing { agents, tokens };
            let sample = assert_plausible(peer, &bench);
            let reg = sample
                .registration_us_per_agent
                .unwrap_or_else(|| panic!("{peer}: no registration figure"));
            assert!(
                reg.is_finite() && reg > 0.0,
                "{peer} {bench:?}: registration {reg}"
            );
        }
    }
}

#[test]
fn skynet_every_peer_checks_its_sum() {
    let _serial = serial();
    for peer in Peer::ALL {
        for leaves in [1, 10, 1_000] {
            let bench = PeerBench::Skynet { leaves };
            let sample = assert_plausible(peer, &bench);
            assert_eq!(sample.registration_us_per_agent, None);
        }
    }
}

#[test]
fn runs_leave_no_threads_behind() {
    let _serial = serial();
    let before = thread_count();
    for _ in 0..5 {
        for peer in Peer::ALL {
            for bench in [
                PeerBench::PingPong {
                    messages: 100,
                    placement: Placement::ThreadPerAgent,
                },
                PeerBench::CustomerRing {
                    agents: 10,
                    tokens: 2,
                },
                PeerBench::Skynet { leaves: 10 },
            ] {
                assert_plausible(peer, &bench);
            }
        }
    }
    // No other peer test runs meanwhile (`serial`); the slack covers threads
    // of other tests. 75 runs, 25 of them making two threads each,
    // must not leave theirs behind (one peer leaking on one bench would
    // leave 10).
    // /proc is Linux-only.
    if let (Some(before), Some(after)) = (before, thread_count()) {
        assert!(
            after <= before + 4,
            "threads before {before}, after {after}: runs leak threads"
        );
    }
}

fn thread_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/task").ok().map(|d| d.count())
}

fn invalid(bench: PeerBench) -> String {
    for peer in Peer::ALL {
        match run_once(peer, &bench) {
            Err(PeerError::InvalidParams { .. }) => {}
            other => panic!("{peer} {bench:?}: expected invalid parameters, got {other:?}"),
        }
    }
    bench.validate().unwrap_err().to_string()
}

#[test]
fn invalid_parameters_are_precise_errors() {
    assert_eq!(
        invalid(PeerBench::PingPong {
            messages: 0,
            placement: Placement::OneThread
        }),
        "invalid ping_pong parameters: messages must be at least 1, got 0"
    );
    assert_eq!(
        invalid(PeerBench::CustomerRing {
            agents: 0,
            tokens: 0
        }),
        "invalid customer_ring parameters: agents (N) must be at least 1, got 0"
    );
    assert_eq!(
        invalid(PeerBench::CustomerRing {
            agents: 5,
            tokens: 0
        }),
        "invalid customer_ring parameters: tokens (M) must be at least 1, got 0"
    );
    assert_eq!(
        invalid(PeerBench::CustomerRing {
            agents: 5,
            tokens: 6
        }),
        "invalid customer_ring parameters: tokens (M = 6) must not exceed agents (N = 5): \
         token j starts at agent j*N/M, one token per agent at most"
    );
    for leaves in [0, 2, 11, 999, 1_000_001, u64::MAX] {
        assert_eq!(
            invalid(PeerBench::Skynet { leaves }),
            format!(
                "invalid skynet parameters: leaves must be a power of ten (1, 10, 100, …), got {leaves}"
            )
        );
    }
    assert_eq!(
        invalid(PeerBench::Skynet { leaves: 10_000_000 }),
        "invalid skynet parameters: leaves must be at most 1000000 (1111111 actors), got 10000000"
    );
}

#[test]
fn peer_names_round_trip() {
    for peer in Peer::ALL {
        assert_eq!(peer.name().parse::<Peer>().unwrap(), peer);
        assert_eq!(peer.to_string(), peer.name());
    }
    assert_eq!(
        "akka".parse::<Peer>().unwrap_err().to_string(),
        "unknown peer \"akka\": expected one of actix, kameo, ractor, crossbeam, caf"
    );
}

#[test]
fn skynet_arithmetic() {
    assert_eq!(skynet_depth(1), Some(0));
    assert_eq!(skynet_depth(1_000_000), Some(6));
    assert_eq!(skynet_depth(0), None);
    assert_eq!(skynet_depth(20), None);
    assert_eq!(skynet_nodes(1), 1);
    assert_eq!(skynet_nodes(1_000_000), 1_111_111);
    assert_eq!(skynet_sum(1_000_000), 499_999_500_000);
    assert_eq!(skynet_sum(1), 0);
}

#[test]
fn ring_tokens_start_on_distinct_agents() {
    for (agents, tokens) in [(1, 1), (7, 3), (50_000, 100), (64, 64)] {
        let starts: Vec<usize> = (0..tokens)
            .map(|j| token_start(j, agents, tokens))
            .collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
        assert!(*starts.last().unwrap() < agents);
    }
    assert_eq!(token_start(1, 50_000, 100), 500);
}

#[test]
fn board_rejects_extra_completions_and_reports_failures() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let run = Run {
        peer: Peer::Kameo,
        bench: "ping_pong",
        deadline: Duration::from_millis(50),
    };
    let board = board::Board::new(1, 1);
    board.complete(7);
    board.complete(8);
    let since = std::time::Instant::now();
    let err = rt.block_on(board.finished(&run, since)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kameo ping_pong: more units of work completed than were started"
    );

    let board = board::Board::new(3, 1);
    board.started();
    let err = rt.block_on(board.all_started(&run, since)).unwrap_err();
    assert!(
        matches!(err, PeerError::Timeout { .. }),
        "expected a timeout, got {err:?}"
    );
    assert!(
        err.to_string()
            .contains("all actors to start (1 of 3 actors started"),
        "{err}"
    );
}

#[test]
fn inside_an_async_runtime_is_an_error_not_a_panic() {
    let _serial = serial();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let bench = PeerBench::PingPong {
        messages: 10,
        placement: Placement::OneThread,
    };
    for peer in [Peer::Actix, Peer::Kameo, Peer::Ractor] {
        let err = rt.block_on(async { run_once(peer, &bench) }).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{peer} ping_pong: could not set up: called from inside a tokio runtime; \
                 each run builds its own runtime, so call run_once from a plain thread"
            )
        );
    }
    // The floor builds no runtime and CAF runs on threads of its own:
    // both run anywhere.
    assert_plausible_in(&rt, Peer::Crossbeam, &bench);
    assert_plausible_in(&rt, Peer::Caf, &bench);
}

fn assert_plausible_in(rt: &tokio::runtime::Runtime, peer: Peer, bench: &PeerBench) {
    let sample = rt.block_on(async { run_once(peer, bench) }).unwrap();
    assert!(sample.value > 0.0);
}

#[cfg(feature = "caf")]
#[test]
fn caf_is_available_in_the_default_build() {
    // scripts/setup.sh installs libcaf-dev: a build without the CAF 0.17
    // headers fails here (and in every test above) rather than skipping.
    assert_eq!(Peer::Caf.unavailable(), None);
    for peer in Peer::ALL {
        if peer != Peer::Caf {
            assert_eq!(peer.unavailable(), None, "{peer}");
        }
    }
}
