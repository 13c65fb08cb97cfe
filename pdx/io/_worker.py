"""What a dataset can ask while it is being loaded: which worker, which sample's RNG.

Both answers live in process- and thread-local state that the DataLoader's
batch loader sets around each `dataset[i]` call, so datasets and transforms
stay plain callables with Paddle's signatures.

Worker seeding follows Paddle's rule. Each epoch has a base seed, a function
of (loader seed, epoch); when worker `w` starts loading an epoch it seeds
Python's `random` with `base + w`, numpy's global generator with Paddle's
`_generate_states(base, w)` words and pdx's global generator with
`base + w`. Workers re-import the main module, so without this a
script that calls `np.random.seed(0)` at module level would see the same
"random" draws in every worker and every epoch.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from typing import Any, Callable

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info", "sample_rng"]

_MASK32 = 0xFFFFFFFF


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """Describes the DataLoader worker process running the current code.

    Attributes:
      id: this worker's index in `[0, num_workers)`.
      num_workers: how many workers the DataLoader started.
      seed: the base seed of the epoch being loaded (Paddle's meaning): the
        same in every worker of an epoch, different each epoch, a function of
        the DataLoader's seed. The worker's `random`, numpy and pdx
        generators were seeded from it and `id` (see the module docstring).
      dataset: this worker's copy of the dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


# In a worker process: "worker" = (id, num_workers, loader seed); "epoch" and
# "base_seed" of the epoch the generators were seeded for; "init_fn" the
# user's worker_init_fn, run once, after the first seeding.
_process: dict = {"worker": None, "epoch": None, "base_seed": None, "init_fn": None, "init_done": False}
_local = threading.local()  # the sample being loaded on this thread


def _set_worker(worker_id: int, num_workers: int, seed: int, init_fn: Callable[[int], Any] | None = None) -> None:
    _process.update(worker=(worker_id, num_workers, seed), epoch=None, base_seed=None, init_fn=init_fn,
                    init_done=False)


def _worker_ids() -> tuple[int, int, int] | None:
    return _process["worker"]


def _base_seed(seed: int, epoch: int) -> int:
    """The base seed of `epoch` for a loader seeded with `seed` (62 bits)."""
    return int(np.random.SeedSequence([int(seed), int(epoch)]).generate_state(1, np.uint64)[0]) >> 2


def _numpy_seed_words(base_seed: int, worker_id: int) -> np.ndarray:
    """Paddle's `_generate_states(base_seed, worker_id)`: numpy's SeedSequence hash of these four words."""
    return np.random.SeedSequence([worker_id, base_seed & _MASK32, base_seed >> 32, 0]).generate_state(4)


def _seed_generators(base_seed: int, worker_id: int) -> None:
    from pdx._random import seed_lazily

    random.seed(base_seed + worker_id)
    np.random.seed(_numpy_seed_words(base_seed, worker_id))
    seed_lazily(base_seed + worker_id)  # no key now: that would start a JAX backend in every worker


def _start_epoch(epoch: int, dataset) -> None:
    """In a worker: seed the generators when `epoch` begins there; the first time, run worker_init_fn."""
    if _process["worker"] is None or _process["epoch"] == epoch:
        return
    worker_id = _process["worker"][0]
    base = _base_seed(_process["worker"][2], epoch)
    _seed_generators(base, worker_id)
    _process.update(epoch=epoch, base_seed=base)
    if not _process["init_done"]:
        _process["init_done"] = True
        init_fn = _process["init_fn"]
        if init_fn is not None:
            _local.dataset = dataset
            try:
                init_fn(worker_id)
            except Exception as e:  # noqa: BLE001  (re-raised naming the worker)
                raise RuntimeError(f"DataLoader worker {worker_id} (pid {os.getpid()}) failed in "
                                   f"worker_init_fn({worker_id}): {type(e).__name__}: {e}") from e


def get_worker_info() -> WorkerInfo | None:
    """Worker details inside a DataLoader worker process, None in the main process.

    Paddle's `paddle.io.get_worker_info`. Use it in an IterableDataset to give
    each worker its own part of the stream, or in `worker_init_fn`.

    Returns:
      A `WorkerInfo(id, num_workers, seed, dataset)`, or None outside workers.

    Example:
      >>> get_worker_info() is None   # in the main process
      True
    """
    ids = _process["worker"]
    if ids is None:
        return None
    return WorkerInfo(id=ids[0], num_workers=ids[1], seed=_process["base_seed"],
                      dataset=getattr(_local, "dataset", None))


# What a worker process imports before it runs user code: grain (and with it
# JAX, no backend started), pdx's core and pdx.io, and the image transforms
# (numpy and Pillow, 30 ms a worker would spend importing them again). The fork
# server imports them once; every worker is a fork of that server.
_SERVER_PRELOAD = ["pdx.io._pipeline", "pdx.vision.transforms", "pdx.io._frozen_heap"]  # the last freezes the heap


def _worker_context():
    """multiprocessing's 'forkserver' context ('spawn' where there is none), its server started if not running.

    Workers are forks of one server process that has imported only
    `_SERVER_PRELOAD` and never started a JAX backend (so forking it is safe,
    unlike forking a process that runs XLA). A worker then starts in a
    fraction of a second instead of importing JAX itself. Starting the
    server returns at once; its imports overlap whatever the main process
    does until the first worker is needed. The server lives until the
    program exits.

    Example:
      >>> _worker_context().get_start_method()
      'forkserver'
    """
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        return multiprocessing.get_context("spawn")
    from multiprocessing import forkserver

    ctx = multiprocessing.get_context("forkserver")
    server = forkserver._forkserver
    with server._lock:
        # The main module is left out (multiprocessing's default preload
        # list names it): it may start JAX at import, and then the server must not
        # fork. Each worker imports it, as a spawned one would.
        if server._forkserver_pid is None:
            ctx.set_forkserver_preload(_SERVER_PRELOAD)
    forkserver.ensure_running()
    return ctx


# Columns of the progress table: the sample a worker is loading, and when and
# as which process it started.
_EPOCH, _BATCH, _INDEX, _PID, _STARTED_NS = range(5)


class _Progress:
    """What each worker is loading, in a shared-memory table the main process reads.

    One int64 row (epoch, batch, sample index, pid, start time) per worker.
    A worker writes its pid and `time.monotonic_ns()` (a system-wide clock)
    when it starts, so the main process can tell start-up from a hung
    `dataset[i]` and stop the right process; and it writes (epoch, batch,
    index) before each sample, so when it dies (segfault, out of memory,
    os._exit) without a word the main process can say what it was loading.
    """

    def __init__(self, num_workers: int):
        from multiprocessing import shared_memory

        self._shm = shared_memory.SharedMemory(create=True, size=max(1, num_workers) * 5 * 8)
        self.name = self._shm.name
        self.table = np.ndarray((num_workers, 5), np.int64, buffer=self._shm.buf)
        self.table[:] = -1

    def last(self, worker_id: int) -> tuple[int, int, int] | None:
        row = tuple(int(v) for v in self.table[worker_id, :_PID])
        return None if row[_INDEX] < 0 else row

    def started(self, worker_id: int) -> tuple[int, int] | None:
        """(pid, start time in monotonic ns) once the worker has started, else None."""
        pid, started_ns = (int(v) for v in self.table[worker_id, _PID:])
        return None if pid < 0 else (pid, started_ns)

    def close(self) -> None:
        self.table = None
        self._shm.close()
        self._shm.unlink()


def _attach_progress(name: str) -> None:
    from multiprocessing import shared_memory

    # The main process creates and unlinks the block. A worker shares the
    # main process's resource tracker, so attaching re-registers the same
    # name (a no-op) and needs no unregister.
    worker_id, num_workers, _ = _process["worker"]
    shm = shared_memory.SharedMemory(name=name)
    table = np.ndarray((num_workers, 5), np.int64, buffer=shm.buf)
    table[worker_id, _STARTED_NS] = time.monotonic_ns()
    table[worker_id, _PID] = os.getpid()  # written last: a pid means the row is complete
    _process["progress"] = (shm, table)


class _SampleScope:
    """Makes (seed, epoch, index) the current sample on this thread while loading it."""

    __slots__ = ("seed", "epoch", "batch", "dataset")

    def __init__(self, seed: int, epoch: int, dataset, batch: int = -1):
        self.seed, self.epoch, self.dataset, self.batch = seed, epoch, dataset, batch

    def enter(self, index: int) -> None:
        _local.dataset = self.dataset
        _local.key = (self.seed, self.epoch, int(index))
        _local.rng = None
        progress = _process.get("progress")
        if progress is not None:
            progress[1][_process["worker"][0], :_PID] = (self.epoch, self.batch, int(index))

    @staticmethod
    def leave() -> None:
        _local.key = None
        _local.rng = None


def sample_rng() -> np.random.Generator:
    """The numpy Generator of the sample being loaded.

    Inside a DataLoader (any worker, or the main process with
    `num_workers=0`) it is seeded by (loader seed, epoch, sample index), so
    random transforms give the same result for a seed whatever the number of
    workers, and a resumed run redraws exactly what the original drew. Several
    calls while loading one sample share one stream. Outside a DataLoader it is
    a fresh Generator seeded from numpy's global generator, so
    `np.random.seed` still makes direct calls reproducible.

    Returns:
      A `numpy.random.Generator`.

    Example:
      >>> import numpy as np
      >>> isinstance(sample_rng(), np.random.Generator)
      True
    """
    key = getattr(_local, "key", None)
    if key is None:
        return np.random.default_rng(np.random.randint(0, 2**31 - 1))
    if _local.rng is None:
        _local.rng = np.random.default_rng(key)
    return _local.rng
