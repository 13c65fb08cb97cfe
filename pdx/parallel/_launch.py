"""`pdx launch` and `pdx.parallel.init`: multi-process jobs on jax.distributed.

The launcher starts `--nproc_per_node` copies of a script on this node, each
with its rank in the environment and in its own process group, writes each
rank's output to `<log_dir>/workerlog.<rank>` (rank 0 is echoed to the console
too), and owns the job: the first rank that fails (in time order), or a rank
that makes no progress for `--timeout` seconds, ends every rank and every
process a rank started (SIGTERM, SIGKILL after `--grace_s`), and the launcher
exits 1 naming that rank and showing the end of its log. SIGINT, SIGTERM or
SIGHUP to the launcher end the job the same way; if the launcher itself dies,
the ranks and their children die with it.

Inside the script, `pdx.parallel.init()` calls `jax.distributed.initialize`
from that environment (gloo collectives on CPU). Outside the launcher it
detects SLURM (`SLURM_PROCID`, `SLURM_NTASKS`, first host of
`SLURM_JOB_NODELIST`) and Kubernetes/other launchers that set
`COORDINATOR_ADDRESS`, `NUM_PROCESSES`, `PROCESS_ID` (e.g. a JobSet or an
Indexed Job whose pod index is the process id); with none of them it is a
no-op (one process).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

_ENV_COORDINATOR = "PDX_COORDINATOR"
_ENV_NUM_PROCESSES = "PDX_NUM_PROCESSES"
_ENV_PROCESS_ID = "PDX_PROCESS_ID"
_ENV_LOCAL_RANK = "PDX_LOCAL_RANK"
_ENV_LAUNCHER_PID = "PDX_LAUNCHER_PID"
_ENV_TIMEOUT = "PDX_LAUNCH_TIMEOUT"
_INITIALIZED = {"done": False}

_INIT_TIMEOUT_MSG = (
    "pdx.parallel.init: process {pid} of {n} could not reach the coordinator at {addr} within {timeout}s "
    "({cause}). Check that every process was started (pdx launch starts them together), that "
    "--master HOST:PORT is reachable from this node and the port is free, or raise timeout_s=.")


def _cluster_env() -> tuple[str, int, int] | None:
    """(coordinator, num_processes, process_id) from pdx launch, SLURM or a generic launcher."""
    env = os.environ
    if _ENV_COORDINATOR in env:
        return env[_ENV_COORDINATOR], int(env[_ENV_NUM_PROCESSES]), int(env[_ENV_PROCESS_ID])
    if "COORDINATOR_ADDRESS" in env and "NUM_PROCESSES" in env and "PROCESS_ID" in env:  # Kubernetes & co.
        return env["COORDINATOR_ADDRESS"], int(env["NUM_PROCESSES"]), int(env["PROCESS_ID"])
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env and int(env["SLURM_NTASKS"]) > 1:
        host = _first_slurm_host(env.get("SLURM_JOB_NODELIST", env.get("SLURM_NODELIST", "localhost")))
        port = 8476 + int(env.get("SLURM_JOB_ID", "0")) % 1000
        return f"{host}:{port}", int(env["SLURM_NTASKS"]), int(env["SLURM_PROCID"])
    return None


def _first_slurm_host(nodelist: str) -> str:
    """First host of a SLURM nodelist such as 'node[003-005,9],gpu1' -> 'node003'."""
    head = nodelist.split(",")[0] if "[" not in nodelist.split(",")[0] else nodelist[: nodelist.index("]") + 1]
    if "[" not in head:
        return head
    prefix, ranges = head.split("[", 1)
    return prefix + ranges.rstrip("]").split(",")[0].split("-")[0]


def init(*, timeout_s: int = 300) -> tuple[int, int]:
    """Join the multi-process job this process belongs to (no-op when alone).

    Call it first thing in a script run by `pdx launch` (or under SLURM /
    Kubernetes), before any other JAX call. On CPU it selects gloo
    collectives so cross-process all-reduces work without accelerators.
    After it, an uncaught exception ends the process at once (exit code 1)
    instead of waiting in jax.distributed's shutdown barrier for the other
    ranks, so the launcher sees the crash and stops the job. In a rank of
    `pdx launch` it also starts a daemon thread that ends the rank and every
    process it started once the launcher is gone.

    Args:
      timeout_s: seconds to wait for every process to reach the coordinator.

    Returns:
      (process_index, process_count).

    Example:
      >>> import pdx
      >>> pdx.parallel.init()   # alone: nothing to join
      (0, 1)
    """
    import jax

    _watch_launcher()
    found = _cluster_env()
    if found is None or _INITIALIZED["done"]:
        return jax.process_index(), jax.process_count()
    addr, n, pid = found
    if os.environ.get("JAX_PLATFORMS", "") == "cpu" or jax.config.jax_platforms in (None, "", "cpu"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    deadline = time.monotonic() + timeout_s
    if pid != 0:
        _wait_for_coordinator(addr, deadline, pid=pid, n=n, timeout=timeout_s)
    # The runtime aborts the process (no Python exception) when the others never
    # arrive: say what to check before that happens.
    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()) + 1.0, lambda: print(
        _INIT_TIMEOUT_MSG.format(pid=pid, n=n, addr=addr, timeout=timeout_s, cause="not every process registered"),
        file=sys.stderr, flush=True))
    watchdog.daemon = True
    watchdog.start()
    try:
        jax.distributed.initialize(coordinator_address=addr, num_processes=n, process_id=pid,
                                   initialization_timeout=max(1, int(deadline - time.monotonic())),
                                   **_runtime_timeouts())
    finally:
        watchdog.cancel()
    sys.excepthook = _exit_at_once(sys.excepthook)
    _INITIALIZED["done"] = True
    return jax.process_index(), jax.process_count()


def _runtime_timeouts() -> dict:
    """jax.distributed's failure detection, tied to `pdx launch --timeout` when launched by it.

    A rank that stops heartbeating is declared dead after `heartbeat_timeout_seconds` (the
    coordination service then fails every other rank's pending work, which matters across nodes,
    where one node's launcher cannot see another's ranks), and a finished rank waits at most
    `shutdown_timeout_seconds` for the others at exit. jax's defaults are 100 s and 300 s.
    """
    try:
        timeout = float(os.environ.get(_ENV_TIMEOUT, "0"))
    except ValueError:
        timeout = 0.0
    if not timeout > 0:
        return {}
    return {"heartbeat_timeout_seconds": int(min(100, max(10, timeout))),
            "shutdown_timeout_seconds": int(min(300, max(10, timeout)))}


def _watch_launcher() -> None:
    """In a rank of `pdx launch`: a daemon thread that ends this rank and every process it started
    (its process group) once the launcher is gone. On Linux the parent-death signal already ends the
    rank itself; this also covers platforms without prctl."""
    try:
        launcher = int(os.environ.get(_ENV_LAUNCHER_PID, ""))
    except ValueError:
        return
    if _INITIALIZED.get("watching") or os.getppid() != launcher:
        return  # not started by pdx launch directly (or it is gone already: the guard process acts)
    _INITIALIZED["watching"] = True

    def watch():
        while os.getppid() == launcher:
            time.sleep(1.0)
        if os.getpgrp() == os.getpid():  # pdx launch made this rank a group leader: the group is the rank's
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="pdx-launcher-watchdog", daemon=True).start()


def _exit_at_once(previous):
    """An uncaught exception ends this rank immediately: jax.distributed's exit-time
    shutdown barrier would otherwise wait for the other ranks, hiding the crash."""

    def hook(kind, value, tb):
        previous(kind, value, tb)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)

    return hook


def _wait_for_coordinator(addr: str, deadline: float, **fmt) -> None:
    host, port = addr.rsplit(":", 1)
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
            return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise TimeoutError(_INIT_TIMEOUT_MSG.format(addr=addr, cause=e, **fmt)) from None
            time.sleep(0.2)


# -- the launcher ---------------------------------------------------------------------------
#
# The launcher owns its job. Each rank is the leader of its own session and process group, so
# `os.killpg` reaches the rank and everything it started. A rank's exit is seen with
# `waitid(WNOWAIT)`, which leaves it unreaped (a zombie) until the launcher has ended its group: the
# group id cannot be reused by an unrelated process meanwhile. Three things end the ranks when the
# launcher dies without cleaning up (SIGKILL, OOM): on Linux each rank carries a parent-death signal
# (prctl PR_SET_PDEATHSIG, SIGKILL); a guard process in its own session holds a pipe from the launcher
# and, when it reads EOF without the launcher's "done", ends every rank group (children included); and
# `init()` starts a thread in each rank that ends the rank's group once its parent is gone (the
# portable fallback where prctl does not exist).

_GUARD = r"""
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
grace, groups = float(sys.argv[1]), []
for line in sys.stdin:
    if line.strip() == "done":
        sys.exit(0)
    if line.strip().isdigit():
        groups.append(int(line))
for sig in (signal.SIGTERM, signal.SIGKILL):
    for g in groups:
        try:
            os.killpg(g, sig)
        except OSError:
            pass
    end = time.monotonic() + grace
    while sig == signal.SIGTERM and time.monotonic() < end:
        live = 0
        for g in groups:
            try:
                os.killpg(g, 0)
                live += 1
            except OSError:
                pass
        if not live:
            break
        time.sleep(0.05)
"""

_TAIL_LINES = 20
_CPU_STEP_S = 0.02  # CPU seconds per sample (2 clock ticks) that count as progress
_SAMPLE_S = 0.25  # the shortest interval between CPU samples (a /proc scan)


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `pdx launch`."""
    parser.description = ("Start N processes of SCRIPT on this node (rank = node_rank * nproc_per_node + local rank), "
                          "each joining one jax.distributed job through pdx.parallel.init(). The first rank to fail "
                          "ends the job; a rank that makes no progress for --timeout seconds ends it too.")
    parser.add_argument("--nproc_per_node", type=int, default=1, help="processes on this node (default 1)")
    parser.add_argument("--nnodes", type=int, default=1, help="nodes in the job (default 1)")
    parser.add_argument("--node_rank", type=int, default=0, help="this node's index, 0..nnodes-1")
    parser.add_argument("--master", default=None,
                        help="HOST:PORT of the coordinator (rank 0's node); default 127.0.0.1 and a free port (one node only)")
    parser.add_argument("--log_dir", default="log", help="directory for workerlog.<rank> files (default ./log)")
    parser.add_argument("--devices_per_proc", type=int, default=None,
                        help="CPU only: host devices each process exposes (sets XLA_FLAGS)")
    parser.add_argument("--grace_s", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL when stopping ranks")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="collective timeout: a rank that writes no output and uses no CPU for this many seconds "
                             "(e.g. blocked in a collective its peers never join) ends the job; 0 turns it off "
                             "(default 1800)")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    parser.set_defaults(func=_launch)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _usage(msg: str) -> int:
    print(f"pdx launch: {msg}", file=sys.stderr)
    return 2


def _say(msg: str) -> None:
    try:
        print(msg, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # the terminal went away (SIGHUP): the log files still hold everything
        pass


def _tail(path: str, lines: int = _TAIL_LINES) -> str:
    """The last `lines` lines of a log (reads at most its last 256 KiB)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 262144))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _parent_death_preexec(parent: int):
    """A preexec_fn asking Linux to SIGKILL the child when the launcher dies (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigkill = 1, int(signal.SIGKILL)

    def preexec():  # runs in the child between fork and exec: nothing here may take a lock
        prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before the signal was armed
            os._exit(1)

    return preexec


def _group_members(groups) -> dict | None:
    """{pgid: [(pid, cpu_seconds)]} of the live (non-zombie) processes in `groups`; None without /proc."""
    try:
        pids = os.listdir("/proc")
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    wanted, found = set(groups), {g: [] for g in groups}
    for name in pids:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pgrp = int(fields[2])
        if pgrp in wanted and fields[0] not in (b"Z", b"X"):
            found[pgrp].append((int(name), (int(fields[11]) + int(fields[12])) / tick))
    return found


def _describe(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by signal {-code} ({name})"
    return f"exited with code {code}"


class _Rank:
    """One rank: its process (a group leader), its log, and what the launcher saw of it."""

    def __init__(self, rank: int, proc: subprocess.Popen, log_path: str):
        self.rank, self.proc, self.log_path = rank, proc, log_path
        self.code = None  # exit status as Popen.returncode spells it, once it exited
        self.exited_at = None
        self.last_progress = time.monotonic()
        self.cpu = 0.0

    def watch_exit(self, events: list, lock: threading.Lock) -> None:
        """Wait for the rank to exit without reaping it (its pid stays reserved as the group id)."""
        try:
            if hasattr(os, "waitid"):
                info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOWAIT)
                code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            else:  # pragma: no cover - platforms without waitid
                code = self.proc.wait()
        except ChildProcessError:
            code = self.proc.wait()
        with lock:
            self.code, self.exited_at = code, time.monotonic()
            events.append(self)

    def pump(self, log, echo: bool) -> None:
        """Copy the rank's output to its log (and the console for rank 0); output counts as progress."""
        fd = self.proc.stdout.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.last_progress = time.monotonic()
            if log is not None:
                try:
                    log.write(chunk)
                    log.flush()
                except OSError:  # disk full: keep draining so the rank never blocks on a full pipe
                    log = None
            if echo:
                try:
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
                except (OSError, ValueError):
                    echo = False
        if log is not None:
            try:
                log.close()
            except OSError:
                pass


def _launch(args: argparse.Namespace) -> int:
    if args.nproc_per_node < 1:
        return _usage(f"--nproc_per_node must be >= 1; got {args.nproc_per_node}")
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        return _usage(f"--node_rank must be in [0, --nnodes={args.nnodes}); got {args.node_rank}")
    if args.master is None and args.nnodes > 1:
        return _usage("--master HOST:PORT is required with --nnodes > 1 (the address of node 0)")
    if args.master is not None and (":" not in args.master or not args.master.rsplit(":", 1)[1].isdigit()):
        return _usage(f"--master must be HOST:PORT; got {args.master!r}")
    if not (args.timeout >= 0 and args.timeout < float("inf")):
        return _usage(f"--timeout must be a number of seconds >= 0 (0 turns it off); got {args.timeout}")
    if not (args.grace_s >= 0 and args.grace_s < 3600):
        return _usage(f"--grace_s must be in [0, 3600) seconds; got {args.grace_s}")
    if not os.path.isfile(args.script):
        return _usage(f"script {args.script!r} not found")
    master = args.master or f"127.0.0.1:{_free_port()}"
    world = args.nnodes * args.nproc_per_node
    os.makedirs(args.log_dir, exist_ok=True)

    received = []  # signals sent to the launcher; the handler only records (no locks in handlers)
    handled = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, lambda sig, _frame: received.append(sig)) for s in handled}
    launcher = os.getpid()
    guard = subprocess.Popen([sys.executable, "-I", "-c", _GUARD, str(args.grace_s)], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, start_new_session=True)
    ranks, logs = [], []
    try:
        # Every rank is forked before any thread starts: the preexec_fn then runs in a single-threaded parent.
        for local in range(args.nproc_per_node):
            rank = args.node_rank * args.nproc_per_node + local
            env = dict(os.environ, **{_ENV_COORDINATOR: master, _ENV_NUM_PROCESSES: str(world),
                                      _ENV_PROCESS_ID: str(rank), _ENV_LOCAL_RANK: str(local),
                                      _ENV_LAUNCHER_PID: str(launcher), _ENV_TIMEOUT: repr(float(args.timeout)),
                                      "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(world),
                                      "PYTHONUNBUFFERED": "1"})
            if args.devices_per_proc:
                env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                                    f" --xla_force_host_platform_device_count={args.devices_per_proc}").strip()
            log_path = os.path.join(args.log_dir, f"workerlog.{rank}")
            logs.append(open(log_path, "wb"))  # noqa: SIM115 - the rank's pump thread closes it
            proc = subprocess.Popen([sys.executable, args.script, *args.script_args], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                    preexec_fn=_parent_death_preexec(launcher))  # noqa: PLW1509 - no thread yet
            ranks.append(_Rank(rank, proc, log_path))
            try:
                guard.stdin.write(f"{proc.pid}\n".encode())
                guard.stdin.flush()
            except OSError:  # the guard is gone: the parent-death signal and init()'s watchdog remain
                pass
            if received:
                break
        return _supervise(args, ranks, logs, received)
    finally:
        _stop(ranks, args.grace_s)
        for r in ranks:
            try:
                r.proc.wait(timeout=10)  # reap only now: until here each pid held its group id
            except subprocess.TimeoutExpired:  # stuck in the kernel (D state) even after SIGKILL
                _say(f"pdx launch: rank {r.rank} (pid {r.proc.pid}) did not exit after SIGKILL")
        try:
            guard.stdin.write(b"done\n")
            guard.stdin.close()
            guard.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for s, h in previous.items():
            signal.signal(s, h)


def _supervise(args, ranks: list, logs: list, received: list) -> int:
    events, lock = [], threading.Lock()
    pumps = []
    for r, log in zip(ranks, logs):
        threading.Thread(target=r.watch_exit, args=(events, lock), daemon=True).start()
        pump = threading.Thread(target=r.pump, args=(log, r.rank == 0), daemon=True)
        pump.start()
        pumps.append(pump)
    failed, reason, next_sample = None, None, 0.0
    while not received:
        with lock:
            done = list(events)
        failures = [r for r in done if r.code != 0]
        if failures:
            failed = failures[0]  # events are in exit order: the first to fail, not the lowest rank
            reason = _describe(failed.code)
            break
        if len(done) == len(ranks):
            break
        now = time.monotonic()
        if args.timeout and now >= next_sample:
            next_sample = now + min(5.0, max(_SAMPLE_S, args.timeout / 20))
            stalled = _stalled(ranks, args.timeout, now)
            if stalled is not None:
                failed = stalled
                reason = (f"made no progress (no output, no CPU time) for {args.timeout:g} s: hung, e.g. in a "
                          f"collective a peer never joined (--timeout {args.timeout:g}; 0 turns it off)")
                break
        time.sleep(0.05)
    if received:
        sig = signal.Signals(received[0]).name
        _say(f"pdx launch: got {sig}; stopping every rank (SIGTERM, SIGKILL after --grace_s {args.grace_s:g} s)")
        _stop(ranks, args.grace_s, first=signal.SIGINT if received[0] == signal.SIGINT else signal.SIGTERM)
        _join(pumps)
        return 1
    if failed is None:
        _stop(ranks, args.grace_s)  # ends what the ranks left running (their children)
        _join(pumps)
        return 0
    with lock:  # those that failed on their own after the first, before the launcher stopped them
        later = [f"rank {r.rank} {_describe(r.code)}" for r in events if r is not failed and r.code != 0]
        others = [r.rank for r in ranks if r.code is None and r is not failed]
    # a hung rank's last lines are those before the launcher stopped it; an exited rank's, once drained
    tail = _tail(failed.log_path) if failed.code is None else None
    _stop(ranks, args.grace_s)
    _join(pumps)
    if tail is None:
        tail = _tail(failed.log_path)
    stopped = f"stopped ranks {', '.join(map(str, others))}" if others else "no other rank was running"
    after = f" Failed after it, before being stopped: {'; '.join(later)}." if later else ""
    _say(f"pdx launch: rank {failed.rank} {reason} (the first rank to fail); {stopped}.{after} "
         f"Last {_TAIL_LINES} lines of {failed.log_path}:\n{tail}")
    return 1


def _stalled(ranks: list, timeout: float, now: float):
    """The running rank idle (no output, no CPU in its process group) the longest past `timeout`."""
    live = [r for r in ranks if r.code is None]
    members = _group_members([r.proc.pid for r in live])
    worst = None
    for r in live:
        if members is not None:
            cpu = sum(c for _, c in members.get(r.proc.pid, ()))
            if cpu - r.cpu >= _CPU_STEP_S:  # per sample: a trickle of background ticks is not progress
                r.last_progress = now
            r.cpu = cpu
        if now - r.last_progress > timeout and (worst is None or r.last_progress < worst.last_progress):
            worst = r
    return worst


def _stop(ranks: list, grace_s: float, first=signal.SIGTERM) -> None:
    """End every rank's process group (the rank and its children): `first`, then SIGKILL after grace_s."""
    groups = [r.proc.pid for r in ranks if r.proc.returncode is None]  # unreaped: the group id is still ours
    if not groups:
        return
    for sig in (first, signal.SIGKILL):
        for g in groups:
            try:
                os.killpg(g, sig)
            except OSError:
                pass
        deadline = time.monotonic() + (grace_s if sig != signal.SIGKILL else 5.0)
        while time.monotonic() < deadline:
            members = _group_members(groups)
            if members is None:  # no /proc: the leaders' exit is all we can see
                if all(r.code is not None or r.proc.poll() is not None for r in ranks):
                    break
            elif not any(members.values()):
                return
            time.sleep(0.1)


def _join(pumps: list) -> None:
    end = time.monotonic() + 2.0
    for p in pumps:
        p.join(timeout=max(0.0, end - time.monotonic()))
