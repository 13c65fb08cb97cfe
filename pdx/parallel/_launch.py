"""`pdx launch` and `pdx.parallel.init`: multi-process jobs on jax.distributed.

The launcher starts `--nproc_per_node` copies of a script on this node, each
with its rank in the environment, writes each rank's output to
`<log_dir>/workerlog.<rank>` (rank 0 is echoed to the console too), and
watches them: the first rank that exits non-zero stops the others, and the
launcher exits 1 naming that rank and showing the end of its log.

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
import collections
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
    ranks, so the launcher sees the crash and stops the job.

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
                                   initialization_timeout=max(1, int(deadline - time.monotonic())))
    finally:
        watchdog.cancel()
    sys.excepthook = _exit_at_once(sys.excepthook)
    _INITIALIZED["done"] = True
    return jax.process_index(), jax.process_count()


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


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `pdx launch`."""
    parser.description = ("Start N processes of SCRIPT on this node (rank = node_rank * nproc_per_node + local rank), "
                          "each joining one jax.distributed job through pdx.parallel.init().")
    parser.add_argument("--nproc_per_node", type=int, default=1, help="processes on this node (default 1)")
    parser.add_argument("--nnodes", type=int, default=1, help="nodes in the job (default 1)")
    parser.add_argument("--node_rank", type=int, default=0, help="this node's index, 0..nnodes-1")
    parser.add_argument("--master", default=None,
                        help="HOST:PORT of the coordinator (rank 0's node); default 127.0.0.1 and a free port (one node only)")
    parser.add_argument("--log_dir", default="log", help="directory for workerlog.<rank> files (default ./log)")
    parser.add_argument("--devices_per_proc", type=int, default=None,
                        help="CPU only: host devices each process exposes (sets XLA_FLAGS)")
    parser.add_argument("--grace_s", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL when stopping ranks")
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


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(collections.deque(f, maxlen=lines))
    except OSError:
        return ""


def _pump(src, log, echo: bool) -> None:
    for line in iter(src.readline, b""):
        log.write(line)
        log.flush()
        if echo:
            sys.stdout.buffer.write(line)
            sys.stdout.flush()


def _launch(args: argparse.Namespace) -> int:
    if args.nproc_per_node < 1:
        return _usage(f"--nproc_per_node must be >= 1; got {args.nproc_per_node}")
    if args.nnodes < 1 or not 0 <= args.node_rank < args.nnodes:
        return _usage(f"--node_rank must be in [0, --nnodes={args.nnodes}); got {args.node_rank}")
    if args.master is None and args.nnodes > 1:
        return _usage("--master HOST:PORT is required with --nnodes > 1 (the address of node 0)")
    if args.master is not None and (":" not in args.master or not args.master.rsplit(":", 1)[1].isdigit()):
        return _usage(f"--master must be HOST:PORT; got {args.master!r}")
    if not os.path.isfile(args.script):
        return _usage(f"script {args.script!r} not found")
    master = args.master or f"127.0.0.1:{_free_port()}"
    world = args.nnodes * args.nproc_per_node
    os.makedirs(args.log_dir, exist_ok=True)

    procs, pumps, logs = {}, [], []
    for local in range(args.nproc_per_node):
        rank = args.node_rank * args.nproc_per_node + local
        env = dict(os.environ, **{_ENV_COORDINATOR: master, _ENV_NUM_PROCESSES: str(world),
                                  _ENV_PROCESS_ID: str(rank), _ENV_LOCAL_RANK: str(local),
                                  "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(world),
                                  "PYTHONUNBUFFERED": "1"})
        if args.devices_per_proc:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                                f" --xla_force_host_platform_device_count={args.devices_per_proc}").strip()
        log = open(os.path.join(args.log_dir, f"workerlog.{rank}"), "wb")
        logs.append(log)
        proc = subprocess.Popen([sys.executable, args.script, *args.script_args], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        procs[rank] = proc
        pump = threading.Thread(target=_pump, args=(proc.stdout, log, rank == 0), daemon=True)
        pump.start()
        pumps.append(pump)

    def stop_all(*_):
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + args.grace_s
        for p in procs.values():
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    previous = {s: signal.signal(s, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
                for s in (signal.SIGTERM,)}
    failed = None
    try:
        while True:
            codes = {r: p.poll() for r, p in procs.items()}
            bad = [(r, c) for r, c in codes.items() if c not in (None, 0)]
            if bad:
                failed = bad[0]
                break
            if all(c == 0 for c in codes.values()):
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        failed = ("launcher", "interrupted")
    finally:
        stop_all()
        for pump in pumps:
            pump.join(timeout=2)
        for log in logs:
            log.close()
        for s, h in previous.items():
            signal.signal(s, h)
    if failed is None:
        return 0
    rank, code = failed
    if rank == "launcher":
        print("pdx launch: interrupted; all ranks stopped", file=sys.stderr)
        return 1
    log_path = os.path.join(args.log_dir, f"workerlog.{rank}")
    print(f"pdx launch: rank {rank} exited with code {code}; stopped the other ranks. "
          f"Last lines of {log_path}:\n{_tail(log_path)}", file=sys.stderr)
    return 1
