#!/usr/bin/env python3
"""Server CPU time per completed call of `takt sip proxy` at a fixed rate,
its system calls and context switches per call.

  crates/takt-sip/scripts/cpu_per_call.py TAKT MODE CPS [SECS] [--workers N] [--strace | --no-perf | --record PERF_DATA | --callgrind OUT]

Starts `TAKT sip proxy` (MODE stateless|stateful, the `shared` model,
4 workers on CPU 1, UDP only; or MODE relay: `TAKT sip relay` on CPU 1,
`takt sip capacity`'s settings),
runs `TAKT sip gen` on CPU 0 at CPS calls/s for SECS seconds (3 by
default), and prints the proxy's run time (the sum over its threads of
/proc/PID/task/*/schedstat, read before and after the load) divided by
the calls the generator completed, and the proxy's system calls by name
and context switches per completed call, counted by `perf stat` on the
kernel's tracepoints (cheap: the CPU figure stays valid). With --strace
the proxy runs under `strace -c -f` instead (which slows it several
times: its CPU figure is then meaningless); with --record, `perf record`
samples it (cpu-clock, call graphs) into PERF_DATA; with --callgrind the
proxy runs under valgrind's callgrind (keep the rate low: 200 cps) and
OUT is its profile, for instruction counts of the whole worker path.
"""
import json, os, signal, socket, subprocess, sys, tempfile, time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = sys.argv[1:]
if len(args) < 3:
    sys.exit(__doc__)
takt, mode, cps = os.path.abspath(args[0]), args[1], args[2]
secs = args[3] if len(args) > 3 else "3"
use_strace = "--strace" in flags
workers = "4"
if "--workers" in flags:
    workers = flags[flags.index("--workers") + 1]


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_ns(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


tmp = tempfile.mkdtemp(prefix="cpu_per_call.")
ppx, puas = free_port(), free_port()
relay = mode == "relay"
proxy = [takt, "sip", "proxy", "--listen", f"127.0.0.1:{ppx}", "--next-hop",
         f"127.0.0.1:{puas}", "--mode", mode, "--model", "shared", "--workers", workers,
         "--cpus", "1", "--no-tcp", "--interval", "0", "--stats", f"unix:{tmp}/stats.sock"]
if relay:
    # takt sip capacity's null relay, for the kernel-bound floor
    proxy = [takt, "sip", "relay", "--listen", f"127.0.0.1:{ppx}", "--uas", f"127.0.0.1:{puas}",
             "--cpus", "1"]
if "--callgrind" in flags:
    # instruction counts of every thread (valgrind runs them one at a time)
    proxy = ["valgrind", "--tool=callgrind", "--dump-instr=no",
             "--callgrind-out-file=" + flags[flags.index("--callgrind") + 1]] + proxy
if use_strace:
    proxy = ["strace", "-c", "-f", "-o", f"{tmp}/strace.txt"] + proxy
p = subprocess.Popen(proxy, stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/proxy.err", "w"))
for _ in range(100):
    if relay or os.path.exists(f"{tmp}/stats.sock"):
        break
    time.sleep(0.05)
time.sleep(0.3)
# the proxy's own pid (under strace: its child)
pid = p.pid
if use_strace or "--callgrind" in flags:
    for _ in range(600):
        if os.path.exists(f"{tmp}/stats.sock"):
            break
        time.sleep(0.1)
    time.sleep(1)
if use_strace:
    kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
    pid = int(kids[0])
EVENTS = ["raw_syscalls:sys_enter", "context-switches", "cpu-migrations"] + [
    f"syscalls:sys_enter_{n}" for n in
    ["recvmsg", "recvmmsg", "sendto", "sendmsg", "sendmmsg", "futex", "epoll_wait",
     "epoll_pwait", "poll", "clock_nanosleep", "sched_yield"]]
perf = None
if "--record" in flags:
    # a sampled profile (cpu-clock: no hardware counters needed) instead of counts
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "4000", "-g", "-o",
                             flags[flags.index("--record") + 1], "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
elif not use_strace and "--no-perf" not in flags and "--callgrind" not in flags:
    perf = subprocess.Popen(["perf", "stat", "-x,", "-o", f"{tmp}/perf.txt", "-e",
                             ",".join(EVENTS), "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.2)
before = run_ns(pid)
g = subprocess.run([takt, "sip", "gen", "--proxy", f"127.0.0.1:{ppx}", "--uas-listen",
                    f"127.0.0.1:{puas}", "--cps", cps, "--duration", f"{secs}s", "--cpus", "0",
                    "--drain", "1s", "--json"], capture_output=True, text=True, cwd="/tmp")
after = run_ns(pid)
if perf:
    perf.send_signal(signal.SIGINT)
    perf.wait(timeout=30)
os.kill(p.pid if not use_strace else pid, signal.SIGINT)
p.wait(timeout=120)
doc = json.loads(g.stdout)
rows = {r["name"]: r["median"] for r in doc["results"]}
calls = rows["calls_completed"]
print(f"{mode} {cps} cps: completed {calls:.0f} failed {rows['calls_failed']:.0f} "
      f"achieved {rows['achieved_cps']:.0f} cps  server cpu/call "
      f"{(after - before) / 1e3 / max(calls, 1):.2f} us")
if use_strace:
    for line in open(f"{tmp}/strace.txt"):
        f = line.split()
        if len(f) >= 5 and f[3].isdigit():
            print(f"  {f[-1]:<16} {int(f[3]) / max(calls, 1):7.3f} per call"
                  + (f"  ({f[4]} errors)" if len(f) == 6 else ""))
if perf and "--record" not in flags:
    for line in open(f"{tmp}/perf.txt"):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "").isdigit():
            print(f"  {f[2].split(':')[-1]:<24} {float(f[0]) / max(calls, 1):7.3f} per call")
