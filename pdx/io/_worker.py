"""What a dataset can ask while it is being loaded: which worker, which sample's RNG.

Both answers live in process- and thread-local state that the DataLoader's
batch loader sets around each `dataset[i]` call, so datasets and transforms
stay plain callables with Paddle's signatures.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info", "sample_rng"]


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """Describes the DataLoader worker process running the current code.

    Attributes:
      id: this worker's index in `[0, num_workers)`.
      num_workers: how many workers the DataLoader started.
      seed: the DataLoader's seed (the same in every worker; per-sample
        randomness comes from `sample_rng()`).
      dataset: this worker's copy of the dataset while samples load; None
        inside `worker_init_fn`, which grain runs before it unpickles the
        dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_process: dict = {"worker": None}  # (id, num_workers, seed) in a worker process
_local = threading.local()  # the sample being loaded on this thread


def _set_worker(worker_id: int, num_workers: int, seed: int) -> None:
    _process["worker"] = (worker_id, num_workers, seed)


def _worker_ids() -> tuple[int, int, int] | None:
    return _process["worker"]


def get_worker_info() -> WorkerInfo | None:
    """Worker details inside a DataLoader worker process, None in the main process.

    Paddle's `paddle.io.get_worker_info`. Use it in an IterableDataset to give
    each worker its own part of the stream.

    Returns:
      A `WorkerInfo(id, num_workers, seed, dataset)`, or None outside workers.

    Example:
      >>> get_worker_info() is None   # in the main process
      True
    """
    ids = _process["worker"]
    if ids is None:
        return None
    return WorkerInfo(id=ids[0], num_workers=ids[1], seed=ids[2], dataset=getattr(_local, "dataset", None))


class _Progress:
    """What each worker is loading, in a shared-memory table the main process reads.

    One int64 row (epoch, batch, sample index) per worker: when a worker dies
    (segfault, out of memory, os._exit) it cannot report anything, so it
    writes its row before each sample and the main process reads the row of
    the dead worker.
    """

    def __init__(self, num_workers: int):
        from multiprocessing import shared_memory

        self._shm = shared_memory.SharedMemory(create=True, size=max(1, num_workers) * 3 * 8)
        self.name = self._shm.name
        self.table = np.ndarray((num_workers, 3), np.int64, buffer=self._shm.buf)
        self.table[:] = -1

    def last(self, worker_id: int) -> tuple[int, int, int] | None:
        row = tuple(int(v) for v in self.table[worker_id])
        return None if row[2] < 0 else row

    def close(self) -> None:
        self.table = None
        self._shm.close()
        self._shm.unlink()


def _attach_progress(name: str) -> None:
    from multiprocessing import shared_memory

    # The main process creates and unlinks the block. A spawned worker shares
    # the main process's resource tracker, so attaching re-registers the same
    # name (a no-op) and needs no unregister.
    shm = shared_memory.SharedMemory(name=name)
    _process["progress"] = (shm, np.ndarray((_process["worker"][1], 3), np.int64, buffer=shm.buf))


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
            progress[1][_process["worker"][0]] = (self.epoch, self.batch, int(index))

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
