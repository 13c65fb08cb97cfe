"""DataLoader (Paddle's `paddle.io.DataLoader`) on a grain pipeline.

How a batch is made:

    batch sampler --(epoch e)--> [[i, j, ...], ...]   lists of sample indices
    grain MapDataset.range(positions)                 position p = e * batches_per_epoch + b
      .map(_LoadBatch)      dataset[i] for each index, with sample_rng() seeded
                            by (seed, e, i); then collate_fn  -> numpy batch
      .to_iter_dataset()    read-ahead buffer of prefetch_factor batches
      .mp_prefetch()        num_workers > 0: worker w computes positions
                            w, w + n, ...; grain interleaves them in order
    main process            jax.device_put(batch, places)

Every batch is a pure function of (dataset, sampler, seed, position), so the
stream is the same with 0 or N workers, and the iterator state is just the
position: `{"epoch", "batch", "seed", ...}` (a JSON-able dict). A run
restored from it rebuilds the pipeline at that position and sees exactly
the remaining batches.
"""

from __future__ import annotations

import math
from multiprocessing import util as mp_util
from typing import TYPE_CHECKING, Any, Callable

import jax
import numpy as np

from pdx.device import as_jax_device
from pdx.io import _worker
from pdx.io._collate import default_collate_fn, default_convert_fn
from pdx.io._dataset import IterableDataset
from pdx.io._sampler import BatchSampler, RandomSampler, SequenceSampler

if TYPE_CHECKING:
    from pdx.io._pipeline import Stream

__all__ = ["DataLoader"]

_STATE_VERSION = 1

_seed_draws: dict = {"key": None, "count": 0}

# multiprocessing runs its exit finalizers by descending priority and stops
# its thread pools at 15; a stream must close (dropping grain's read-ahead
# arrays, whose shared memory one of those pools unlinks) before that.
_CLOSE_AT_EXIT_PRIORITY = 20


def _default_seed() -> int:
    """A loader seed derived from pdx's global key without advancing it.

    Building a DataLoader must not change the weights a later layer draws,
    so the seed hashes the current global key with the number of loaders
    built since that key was set (`pdx.seed(n)` starts the count again).
    """
    from pdx._random import get_rng_state

    key = get_rng_state()
    if _seed_draws["key"] is not key:  # a new key object: pdx.seed() or a random op ran since
        _seed_draws["key"], _seed_draws["count"] = key, 0
    words = np.asarray(jax.random.key_data(key)).ravel().tolist()
    seed = np.random.SeedSequence([*words, _seed_draws["count"]]).generate_state(1)[0]
    _seed_draws["count"] += 1
    return int(seed) & 0x7FFFFFFF


class DataLoader:
    """Iterate a dataset in batches, loaded by worker processes (Paddle's `paddle.io.DataLoader`).

    Batches come out as `jax.Array`s placed on `places` (default: the default
    device), in the structure the collate function built (Paddle's default
    collate returns tuples/lists of samples as lists).

    Args:
      dataset: a map-style `Dataset` (anything with `__getitem__`/`__len__`)
        or an `IterableDataset`. Its samples must be numpy-only: workers never
        touch jax.
      feed_list: accepted and ignored (static-graph feeding; pdx has none).
      places: where batches go: None (default device), a `jax.Device`, a
        Paddle place (`pdx.CPUPlace()`, `pdx.CUDAPlace(0)`, 'gpu:0', or a
        one-element list of them), or a `jax.sharding.Sharding` (e.g. a NamedSharding over a data axis). With
        a sharding over several processes' devices, each process's batch
        (its `DistributedBatchSampler` shard) becomes its part of one global
        array (`jax.make_array_from_process_local_data`).
      return_list: accepted; batches always come out as Python structures.
      batch_sampler: yields lists of indices; excludes batch_size, shuffle,
        drop_last.
      batch_size: samples per batch; None disables batching (each sample is
        yielded on its own, converted but not stacked).
      shuffle: reshuffle the sample order every epoch.
      drop_last: drop the last, short batch.
      collate_fn: list of samples -> batch (numpy); default
        `default_collate_fn` (Paddle's stacking rules).
      num_workers: worker processes (0: load in the main process). Workers
        are forks of a fork server that this loader starts if none runs
        yet; it imports grain, JAX (no backend) and pdx's core once, so the
        first loader's workers wait a few seconds for it and later ones
        start at once. Each worker imports the main module as a spawned one
        would: datasets and transforms must be picklable, and a script must
        build and iterate the loader under `if __name__ == "__main__":`.
      use_buffer_reader: with num_workers=0, read ahead in a background thread.
      prefetch_factor: batches each worker (or the reader thread) keeps ready.
      use_shared_memory: accepted; grain always moves large arrays through
        shared memory.
      timeout: seconds to wait for a batch from the workers (Paddle's
        meaning); 0 (default) waits forever. A worker that stays silent
        longer (a hung `dataset[i]`) is stopped, the other workers are shut
        down and a RuntimeError names the worker, its pid and the sample it
        was loading. The clock starts when a worker process has started:
        starting it (the fork server's imports) is not counted. With num_workers=0
        nothing runs in parallel to time, so it does not apply.
      worker_init_fn: called as `worker_init_fn(worker_id)` in each worker,
        after the worker's generators are seeded and before it loads its
        first sample (`get_worker_info()` works inside).
      persistent_workers: keep the workers (and their read-ahead) alive from
        one epoch into the next instead of restarting them. Needs a sampler
        whose order is a function of (seed, epoch) (the default samplers);
        otherwise workers restart each epoch.
      seed: keyword-only, pdx addition. Seeds the shuffle order (epoch e uses
        `RandomState(seed + e)`) and `pdx.io.sample_rng()` in transforms.
        Default: derived from pdx's global key (without advancing it), so
        `pdx.seed(n)` before building the loader makes the whole data stream
        reproducible and building a loader does not change later weights.

    Worker seeding (Paddle's rule): when worker `w` starts loading epoch
    `e`, it seeds Python's `random`, numpy's global generator and pdx's
    global generator from the epoch's base seed (a function of (seed, e),
    `get_worker_info().seed`) and `w`. So `np.random.rand()` in
    `__getitem__` differs between workers and epochs, and the same `seed`
    replays the same draws. With `persistent_workers=True` the reseeding
    happens at each epoch's first batch, without running `worker_init_fn`
    again. The main process (num_workers=0) is never reseeded. Draws from
    these global generators depend on the number of workers and are not
    replayed exactly by a mid-epoch resume; `pdx.io.sample_rng()` is.

    Iterator state: `it = iter(loader)`; `state = it.get_state()` is a
    JSON-able dict giving the position of the next batch; in a new process
    build the same loader and call `it = iter(loader); it.set_state(state)`
    (or `loader.set_state_dict(state)` before `iter(loader)`) and the
    remaining batches are exactly the ones the original run would have seen.
    `loader.state_dict()` is the state of the most recent iterator. The
    position counts epochs: each `iter(loader)` starts the next epoch.

    Example:
      >>> import numpy as np
      >>> from pdx.io import TensorDataset
      >>> ds = TensorDataset([np.arange(10, dtype=np.float32).reshape(5, 2), np.arange(5)])
      >>> loader = DataLoader(ds, batch_size=2, shuffle=False)
      >>> [tuple(y.tolist()) for x, y in loader]
      [(0, 1), (2, 3), (4,)]
    """

    def __init__(self, dataset, feed_list=None, places=None, return_list: bool = True, batch_sampler=None,
                 batch_size: int | None = 1, shuffle: bool = False, drop_last: bool = False,
                 collate_fn: Callable | None = None, num_workers: int = 0, use_buffer_reader: bool = True,
                 prefetch_factor: int = 2, use_shared_memory: bool = True, timeout: float = 0,
                 worker_init_fn: Callable[[int], Any] | None = None, persistent_workers: bool = False,
                 *, seed: int | None = None):
        del feed_list, return_list, use_shared_memory  # documented as accepted and ignored
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"DataLoader(num_workers) must be an int >= 0; got num_workers={num_workers!r}.")
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ValueError(f"DataLoader(prefetch_factor) must be an int >= 1; got prefetch_factor={prefetch_factor!r}.")
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0):
            raise ValueError(f"DataLoader(batch_size) must be a positive int or None; got batch_size={batch_size!r}.")
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise ValueError(f"DataLoader(seed) must be a non-negative int or None; got seed={seed!r}.")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0 \
                or math.isinf(timeout):
            raise ValueError(f"DataLoader(timeout) must be a finite number of seconds >= 0 (0 waits forever); "
                             f"got timeout={timeout!r}.")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader(worker_init_fn) must be callable; got {type(worker_init_fn).__name__}.")
        self.dataset = dataset
        self.places = as_jax_device(places)
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.use_buffer_reader = use_buffer_reader
        self.worker_init_fn = worker_init_fn
        self.timeout = float(timeout)
        self.persistent_workers = bool(persistent_workers)
        self.seed = _default_seed() if seed is None else seed
        self.is_iterable = isinstance(dataset, IterableDataset)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.auto_collate = batch_sampler is not None or batch_size is not None
        self.collate_fn = collate_fn or (default_collate_fn if self.auto_collate else default_convert_fn)
        self._own_random_sampler = None  # the sampler shuffle=True built, re-seeded by set_state_dict

        if self.is_iterable:
            if batch_sampler is not None or shuffle:
                raise ValueError("DataLoader: an IterableDataset has no indices, so batch_sampler= and shuffle=True "
                                 "do not apply; shuffle inside the dataset's __iter__ instead.")
            self.batch_sampler = None
        elif batch_sampler is not None:
            if batch_size != 1 or shuffle or drop_last:
                raise ValueError("DataLoader(batch_sampler=...) decides batching and order; leave batch_size=1, "
                                 f"shuffle=False, drop_last=False (got batch_size={batch_size}, shuffle={shuffle}, "
                                 f"drop_last={drop_last}).")
            self.batch_sampler = batch_sampler
        elif not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(f"DataLoader(dataset) needs a map-style dataset (__getitem__ and __len__) or an "
                            f"IterableDataset; got {type(dataset).__name__}.")
        else:
            sampler = RandomSampler(dataset, generator=self.seed) if shuffle else SequenceSampler(dataset)
            self._own_random_sampler = sampler if shuffle else None
            self.batch_sampler = BatchSampler(sampler=sampler, batch_size=batch_size or 1,
                                              drop_last=drop_last if batch_size else False)
        if num_workers > 0:  # workers fork from a server that imports JAX and grain once; start it now
            _worker._worker_context()
        self._next = {"epoch": 0, "batch": 0}
        self._last_iter: _DataLoaderIter | None = None
        # The running stream. Its grain threads keep it alive on their own, so a
        # finalizer closes it (stopping the workers) when the loader is dropped
        # or the program exits.
        self._holder: list = [None]
        mp_util.Finalize(self, _close_held, args=(self._holder,), exitpriority=_CLOSE_AT_EXIT_PRIORITY)

    @property
    def _stream(self) -> Stream | None:
        return self._holder[0]

    @_stream.setter
    def _stream(self, stream: Stream | None) -> None:
        self._holder[0] = stream

    def __len__(self) -> int:
        if self.is_iterable:
            raise TypeError("len(DataLoader) is unknown for an IterableDataset.")
        return len(self.batch_sampler)

    def __iter__(self) -> _DataLoaderIter:
        start = self._next
        self._next = {"epoch": start["epoch"] + 1, "batch": 0}
        it = _DataLoaderIter(self, start["epoch"], start["batch"])
        self._last_iter = it
        return it

    def __call__(self):
        """Paddle's `loader()` form: same as `iter(loader)`."""
        return iter(self)

    def state_dict(self) -> dict:
        """JSON-able position of the most recent iterator (or of the next epoch if none ran)."""
        if self._last_iter is not None:
            return self._last_iter.get_state()
        return self._state(self._next["epoch"], self._next["batch"])

    def set_state_dict(self, state: dict) -> None:
        """Make the next `iter(loader)` resume at `state` (from `state_dict()`/`get_state()`)."""
        self._check_state(state)
        self.seed = int(state["seed"])
        if self._own_random_sampler is not None:
            self._own_random_sampler.generator = self.seed
        if self._stream is not None:  # it was built for the old position and seed
            self._stream.close()
            self._stream = None
        self._next = {"epoch": int(state["epoch"]), "batch": int(state["batch"])}
        self._last_iter = None

    def _state(self, epoch: int, batch: int) -> dict:
        return {"version": _STATE_VERSION, "epoch": int(epoch), "batch": int(batch), "seed": int(self.seed),
                "num_workers": self.num_workers, "batches_per_epoch": None if self.is_iterable else len(self)}

    def _check_state(self, state) -> None:
        if not isinstance(state, dict) or state.get("version") != _STATE_VERSION:
            raise ValueError(f"DataLoader state must be a dict from get_state()/state_dict() with version "
                             f"{_STATE_VERSION}; got {state!r}.")
        expected = None if self.is_iterable else len(self)
        if state.get("batches_per_epoch") != expected:
            raise ValueError(f"DataLoader state is for a loader with {state.get('batches_per_epoch')} batches per "
                             f"epoch, this loader has {expected}; rebuild it with the same dataset, batch_size and "
                             "drop_last before restoring.")

    def _place(self, batch):
        places = self.places
        if isinstance(places, jax.sharding.Sharding) and not places.is_fully_addressable:
            # multi-process: this process holds its DistributedBatchSampler
            # shard; together the processes' shards form one global batch
            def put(x):
                return jax.make_array_from_process_local_data(places, x)
        else:
            def put(x):
                return jax.device_put(x, places)

        return jax.tree_util.tree_map(
            lambda x: put(x) if isinstance(x, np.ndarray) and x.dtype != object else x, batch)


def _close_held(holder: list) -> None:
    if holder[0] is not None:
        holder[0].close()
        holder[0] = None


class _DataLoaderIter:
    """Iterator over one epoch of a DataLoader, with a JSON-able state."""

    def __init__(self, loader: DataLoader, epoch: int, batch: int):
        self._loader = loader
        self._epoch, self._batch = epoch, batch
        self._bpe = None if loader.is_iterable else len(loader)
        self._stream: Stream | None = None
        self._done = False

    def __iter__(self):
        return self

    def __len__(self) -> int:
        if self._bpe is None:
            raise TypeError("len() of a DataLoader iterator is unknown for an IterableDataset.")
        return self._bpe

    def _get_stream(self) -> Stream:
        if self._stream is None:
            loader = self._loader
            shared = loader._stream
            if shared is not None and shared.persistent and shared._it is not None and not loader.is_iterable \
                    and shared.position == self._epoch * self._bpe + self._batch:
                self._stream = shared
            else:
                if shared is not None:
                    shared.close()
                from pdx.io._pipeline import Stream  # grain loads on first use

                self._stream = loader._stream = Stream(loader, self._epoch, self._batch)
        return self._stream

    def __next__(self):
        if self._done or (self._bpe is not None and self._batch >= self._bpe):
            self._finish()
            raise StopIteration
        try:
            batch = self._get_stream().next()
        except StopIteration:
            self._finish()
            raise
        except Exception:
            self.close()  # the stream closed itself; this epoch ends with the error
            raise
        self._batch += 1
        return self._loader._place(batch)

    def _finish(self):
        if not self._done:
            self._done = True
            if self._stream is not None and not self._stream.persistent:
                self._stream.close()
                if self._loader._stream is self._stream:
                    self._loader._stream = None

    def get_state(self) -> dict:
        """JSON-able position of the next batch this iterator would yield.

        After the last batch of an epoch it points at batch 0 of the next one.
        """
        if self._bpe is not None and self._batch >= self._bpe:
            return self._loader._state(self._epoch + 1, 0)
        if self._done:  # an iterable dataset ran out
            return self._loader._state(self._epoch + 1, 0)
        return self._loader._state(self._epoch, self._batch)

    def set_state(self, state: dict) -> None:
        """Jump to the position in `state` (from `get_state()`, possibly of another process)."""
        loader = self._loader
        loader.set_state_dict(state)
        if self._stream is not None and self._stream is not loader._stream:
            self._stream.close()
        self._stream = None
        self._epoch, self._batch, self._done = int(state["epoch"]), int(state["batch"]), False
        loader._next = {"epoch": self._epoch + 1, "batch": 0}
        loader._last_iter = self

    def close(self) -> None:
        """Stop this iterator's workers now (they also stop at the end of the epoch)."""
        self._done = True
        if self._stream is not None:
            self._stream.close()
            if self._loader._stream is self._stream:
                self._loader._stream = None
