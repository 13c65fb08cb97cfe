"""`dist.spawn`: start N processes of a function, each a rank of one jax.distributed job on this host."""

from __future__ import annotations

import multiprocessing
import os
import socket

__all__ = ["MultiprocessContext", "spawn"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(func, args, env: dict) -> None:
    os.environ.update(env)
    func(*args)


class MultiprocessContext:
    """The spawned processes; `join()` waits for them and raises if one failed."""

    def __init__(self, processes):
        self.processes = processes

    def join(self, timeout: float | None = None) -> bool:
        for p in self.processes:
            p.join(timeout)
        failed = [(i, p.exitcode) for i, p in enumerate(self.processes) if p.exitcode not in (0, None)]
        if failed:
            for p in self.processes:
                if p.is_alive():
                    p.terminate()
            rank, code = failed[0]
            raise RuntimeError(f"dist.spawn: rank {rank} exited with code {code}; the others were stopped")
        return all(p.exitcode == 0 for p in self.processes)


def spawn(func, args=(), nprocs: int = -1, join: bool = True, daemon: bool = False, **options):
    """Run `func(*args)` in `nprocs` new processes, ranks 0..nprocs-1 of one job (Paddle's `dist.spawn`).

    `func` must be importable (defined at module level) and should call
    `dist.init_parallel_env()` first. Options: `devices_per_proc` (CPU:
    host devices each process exposes; default 1). `nprocs=-1` starts one
    process per local device.

    Example: `dist.spawn(train, args=(cfg,), nprocs=2)`.
    """
    import jax

    if nprocs == -1:
        nprocs = jax.local_device_count()
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"dist.spawn: nprocs must be a positive int or -1; got {nprocs!r}")
    devices = int(options.pop("devices_per_proc", 1))
    if options:
        raise TypeError(f"dist.spawn: unknown options {sorted(options)}; known: devices_per_proc")
    master = f"127.0.0.1:{_free_port()}"
    ctx = multiprocessing.get_context("spawn")
    flags = " ".join(f for f in os.environ.get("XLA_FLAGS", "").split()
                     if not f.startswith("--xla_force_host_platform_device_count"))
    processes = []
    for rank in range(nprocs):
        env = {"PDX_COORDINATOR": master, "PDX_NUM_PROCESSES": str(nprocs), "PDX_PROCESS_ID": str(rank),
               "PDX_LOCAL_RANK": str(rank), "PADDLE_TRAINER_ID": str(rank), "PADDLE_TRAINERS_NUM": str(nprocs),
               "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={devices}".strip()}
        p = ctx.Process(target=_entry, args=(func, tuple(args), env), daemon=daemon)
        p.start()
        processes.append(p)
    context = MultiprocessContext(processes)
    if join:
        context.join()
    return context
