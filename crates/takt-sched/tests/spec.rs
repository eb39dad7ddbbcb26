//! Applying thread specs for real: the kernel's answer is read back.

use std::time::Duration;
use takt_sched::{CpuSet, SchedError, SchedPolicy, SchedWarning, ThreadSpec};

fn run_with(policy: &str) -> Result<takt_sched::Applied, SchedError> {
    let spec = ThreadSpec::new("spec-test").with_policy(policy.parse().unwrap());
    let t = spec.spawn(|| takt_sched::current_policy().unwrap())?;
    let applied = t.applied().clone();
    let now = t.join().unwrap();
    assert_eq!(now.keyword(), policy.split(':').next().unwrap());
    Ok(applied)
}

#[test]
fn fair_policies_apply_and_read_back() {
    for p in ["other", "other:nice=5", "batch", "batch:nice=3", "idle"] {
        let a = run_with(p).unwrap_or_else(|e| panic!("{p}: {e}"));
        let want: SchedPolicy = p.parse().unwrap();
        assert_eq!(a.policy, Some(want), "{p}");
        assert!(a.warnings.is_empty(), "{p}: {:?}", a.warnings);
    }
}

#[test]
fn slice_in_range_is_kept_and_out_of_range_is_reported() {
    let a = run_with("other:slice=3ms").unwrap();
    // Kernels before 6.12 have no custom slice and report it as clamped.
    if a.warnings.is_empty() {
        assert_eq!(
            a.policy,
            Some(SchedPolicy::Other {
                nice: 0,
                slice: Some(Duration::from_millis(3))
            })
        );
        let small = run_with("other:slice=20us").unwrap();
        assert_eq!(
            small.warnings,
            vec![SchedWarning::SliceClamped {
                requested: Duration::from_micros(20),
                effective: Duration::from_micros(100)
            }]
        );
        assert!(small.warnings[0].to_string().contains("clamped"));
    }
}

#[test]
fn realtime_policies_need_privilege() {
    // Root (CAP_SYS_NICE) gets the policy; anyone else gets EPERM, named.
    match run_with("rr:prio=3") {
        Ok(a) => assert_eq!(a.policy, Some(SchedPolicy::Rr { prio: 3 })),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.contains("rr:prio=3") && msg.contains("EPERM"), "{msg}");
        }
    }
}

#[test]
fn refused_cpu_set_names_setting_and_errno() {
    let spec = ThreadSpec::new("bad-cpus").with_cpus(CpuSet::single(1000));
    let err = spec.spawn(|| ()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("cpus=1000"), "{msg}");
    assert!(msg.contains("EINVAL"), "{msg}");
}

#[test]
fn pinning_is_read_back() {
    let online = CpuSet::online();
    let last = online.iter().last().unwrap();
    let spec = ThreadSpec::new("pinned").with_cpus(CpuSet::single(last));
    let t = spec.spawn(takt_sched::get_affinity).unwrap();
    assert_eq!(t.applied().cpus, Some(CpuSet::single(last)));
    assert_eq!(t.join().unwrap().unwrap(), CpuSet::single(last));
    assert_eq!(spec.pinned_nth(5).cpus(), Some(&CpuSet::single(last)));
}

#[test]
fn from_args_parses_cli_forms() {
    let s = ThreadSpec::from_args("w", Some("0-1"), Some("other:nice=-5,slice=200us")).unwrap();
    assert_eq!(s.to_string(), "w cpus=0-1 sched=other:nice=-5,slice=200us");
    assert!(ThreadSpec::from_args("w", Some("1-0"), None).is_err());
    assert!(ThreadSpec::from_args("w", None, Some("turbo")).is_err());
}

/// The policy of what a thread under `spec` creates: a takt-sched thread
/// with no policy of its own, a plain std thread, and a process.
fn children_of(spec: ThreadSpec) -> Result<[SchedPolicy; 3], SchedError> {
    let t = spec.spawn(|| {
        let sched = ThreadSpec::new("child")
            .spawn(|| takt_sched::current_policy().unwrap())
            .unwrap()
            .join()
            .unwrap();
        let plain = std::thread::spawn(|| takt_sched::current_policy().unwrap())
            .join()
            .unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let read = takt_sched::read_process(child.id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        [sched, plain, read.unwrap().threads[0].after.policy]
    })?;
    Ok(t.join().unwrap())
}

#[test]
fn reset_on_fork_keeps_a_realtime_policy_from_children() {
    let fifo: SchedPolicy = "fifo:prio=7".parse().unwrap();
    let spec = ThreadSpec::new("rt-parent").with_policy(fifo);
    // unprivileged, no real-time policy to inherit: the refusal is named
    let inherited = match children_of(spec.clone()) {
        Ok(c) => c,
        Err(e) => {
            assert!(e.to_string().contains("EPERM"), "{e}");
            return;
        }
    };
    // without the flag, every child inherits the policy…
    assert_eq!(inherited, [fifo; 3]);
    // …with it, none does
    let t = spec
        .clone()
        .with_reset_on_fork()
        .spawn(|| takt_sched::current_policy().unwrap())
        .unwrap();
    assert!(t.applied().reset_on_fork);
    assert_eq!(t.join().unwrap(), fifo);
    assert_eq!(
        children_of(spec.with_reset_on_fork()).unwrap(),
        [SchedPolicy::DEFAULT; 3]
    );
}
