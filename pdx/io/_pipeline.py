"""The grain side of the DataLoader: batch loading, worker setup, one stream of batches.

Imported lazily by `_dataloader` when a loader first produces a batch (grain
takes seconds to import), and by every worker process, where only numpy
runs.

This module is the one place that knows grain's internals. It relies on:
grain's worker arrays arriving in the main process as
`grain._src.python.ipc.shared_memory_array.SharedMemoryArray` (attributes
`shm` and `_unlink_on_del`), which pdx unlinks as soon as a batch arrives
(the mapping stays valid until the array is freed); and on that class's
`_del_thread_pool`, a one-thread pool that unlinks dropped arrays, which
pdx drains when a stream closes, so no segment outlives its stream (tests:
tests/io/test_io_dataloader_workers.py); and on `mp_prefetch` returning
`WithOptionsIterDataset(InterleaveIterDataset(shards))`, each shard a
`ProcessPrefetchIterDataset` whose iterator starts its process from
`_process_ctx`, which pdx points at its fork server (grain hard-codes
'spawn'); and on a worker reading `process_prefetch._PARENT_EXHAUSTED_WAIT_S`
(its sleep between stop checks once it has made its last element) in its
loop, which pdx lowers in its workers.
"""

from __future__ import annotations

import gc
import os
import queue
import shutil
import signal
import tempfile
import threading
import time
import traceback
import weakref
from typing import Any, Callable, NamedTuple

import cloudpickle
import grain
import jax
from grain._src.python.dataset.transformations import process_prefetch
from grain._src.python.ipc.shared_memory_array import SharedMemoryArray

from pdx.io import _worker

__all__ = ["Stream"]

_MAIN_MODULE_HINT = (
    "\nWorkers are started from multiprocessing's 'forkserver': each re-imports the main module. If the main "
    "module is a script, put the code that builds and iterates the DataLoader under "
    "`if __name__ == \"__main__\":`; a worker that crashed on its own (segfault, out of memory, os._exit) "
    "logs its cause above."
)
_ENDLESS = 1 << 50  # stream length when workers persist across epochs
_POLL_S = 0.1  # how often a timed wait checks the worker it waits for
_KILLED_WORKER_WAIT_S = 5.0  # grain notices a killed worker within about a second
_EXHAUSTED_POLL_S = 0.01  # how often a worker with nothing left to load checks whether to stop


class _Options(NamedTuple):
    use_buffer_reader: bool
    prefetch_factor: int
    worker_init_fn: Callable[[int], Any] | None
    seed: int
    timeout: float


def _ensure_grain_flags() -> None:
    # grain reads absl flags when it starts workers; a program that never
    # called absl's app.run has unparsed flags, and reading one raises.
    from absl import flags

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()


def _unlink_received(batch) -> None:
    """Unlink the shared memory behind a batch's arrays now that the main process holds them.

    The arrays stay valid (a name is not a mapping); unlinking here instead of
    in grain's deferred `__del__` means no segment is left for the resource
    tracker to find when the program exits with batches still referenced.
    """
    for leaf in jax.tree_util.tree_leaves(batch):
        if isinstance(leaf, SharedMemoryArray) and leaf.shm is not None and leaf._unlink_on_del:
            leaf.shm.unlink()
            leaf._unlink_on_del = False


def _drain_shm_deletions(collect_cycles: bool) -> None:
    """Wait until grain has unlinked the arrays it dropped (its one-thread pool runs them in order).

    A grain read-ahead thread that stopped keeps its last batch in a
    reference cycle (through its StopIteration's traceback). After a whole
    stream that batch was delivered and unlinked already; after an early
    close it was not, so then cycles are collected first (a full `gc.collect`,
    a fraction of a second in a process that imported JAX).
    """
    if collect_cycles:
        gc.collect()
    pool = SharedMemoryArray._del_thread_pool
    if pool is None:
        return
    try:
        done = pool.apply_async(int)
    except ValueError:  # the pool was stopped (program exit); nothing more will run there
        return
    done.get(timeout=10)


class _Plan:
    """Epoch -> list of index batches; recomputable in any process when the sampler allows."""

    def __init__(self, batch_sampler, fixed: list | None = None):
        self.batch_sampler, self.fixed = batch_sampler, fixed
        self._cache: tuple[int, list] | None = None

    def batches(self, epoch: int) -> list:
        if self.fixed is not None:
            return self.fixed
        if self._cache is None or self._cache[0] != epoch:
            if hasattr(self.batch_sampler, "set_epoch"):
                self.batch_sampler.set_epoch(epoch)
            self._cache = (epoch, [list(b) for b in self.batch_sampler])
        return self._cache[1]

    def __getstate__(self):
        return {"batch_sampler": self.batch_sampler, "fixed": self.fixed, "_cache": None}


def _where() -> str:
    ids = _worker._worker_ids()
    return "main process (num_workers=0)" if ids is None else f"worker {ids[0]} (pid {os.getpid()})"


class _DatasetFiles:
    """The files the streams pickle their datasets into, reused from stream to stream.

    Writing 25 MiB into a new file faults in fresh page-cache pages (70 ms on a
    2-core VM); rewriting a file of that size reuses them (5-15 ms). A file goes back
    to the pool when the stream that wrote it closes; the directory (mode 0700: this
    user only) goes at exit. One pool per process (`_files()`).
    """

    def __init__(self):
        self._directory = tempfile.mkdtemp(prefix="pdx-dataset-")
        weakref.finalize(self, shutil.rmtree, self._directory, True)
        self._free: list[str] = []
        self._count = 0
        self._lock = threading.Lock()

    def take(self) -> str:
        with self._lock:
            if self._free:
                return self._free.pop()
            self._count += 1
            return os.path.join(self._directory, f"dataset{self._count}.pkl")

    def give(self, path: str) -> None:
        with self._lock:
            self._free.append(path)


_FILES: list[_DatasetFiles] = []


def _aligned(n: int) -> int:
    """n rounded up to a 64-byte boundary (where a dataset file's sections start)."""
    return -(-n // 64) * 64


def _files() -> _DatasetFiles:
    """This process's dataset files (made on first use)."""
    if not _FILES:
        _FILES.append(_DatasetFiles())
    return _FILES[0]


class _PickledOnce:
    """A value (the dataset and its sampler) that pickles once per stream, into a file every
    worker of the stream maps.

    grain pickles the whole pipeline for each worker, and multiprocessing pickles
    those bytes once more into its pipe, all in the main process before a worker
    runs: about 0.15 s per worker for a 25 MiB image array. Here the main process
    writes the dataset once per stream and the workers map the file: its large
    contiguous arrays (pickle protocol 5's out-of-band buffers) are written raw after
    the pickle and come back as copy-on-write views of the mapping, so a worker
    neither reads nor copies them before it touches them. Each stream (an epoch, or
    one run of persistent workers) writes the file afresh, so a dataset changed
    between epochs reaches the next epoch's workers, as before. The file returns to
    `files` (by default a pool of its own) when this object goes (the stream
    closed); a worker's mapping outlives it.

    File layout: the pickle's length (8 bytes, little-endian), the pickle of
    (stream, [(offset, size) of each buffer]), then each buffer at a 64-byte boundary.

    Example:
      >>> import pickle
      >>> shipped = _PickledOnce([1, 2])  # the file lives as long as this object
      >>> pickle.loads(pickle.dumps(shipped)).value
      [1, 2]
    """

    def __init__(self, value, files: _DatasetFiles | None = None):
        self.value = value
        self._files = files
        self._path = None
        self._lock = threading.Lock()  # grain starts the workers from several threads

    def __getstate__(self):
        with self._lock:
            if self._path is None:
                files = self._files or _DatasetFiles()
                path = files.take()
                buffers = []
                stream = cloudpickle.dumps(self.value, protocol=5, buffer_callback=buffers.append)
                raws = [b.raw() for b in buffers]
                placed, end = [], 0
                for raw in raws:  # offsets relative to the first buffer, each 64-byte aligned
                    placed.append((end, raw.nbytes))
                    end += _aligned(raw.nbytes)
                header = cloudpickle.dumps((stream, placed), protocol=5)
                start = _aligned(8 + len(header))
                # Rewritten in place ("r+b", no truncation first): the file keeps its pages.
                with open(path, "r+b" if os.path.exists(path) else "wb") as f:
                    f.write(len(header).to_bytes(8, "little"))
                    f.write(header)
                    for (offset, _), raw in zip(placed, raws):
                        f.seek(start + offset)
                        f.write(raw)
                    f.truncate(start + end)
                weakref.finalize(self, files.give, path)
                self._path = path
        return {"path": self._path}

    def __setstate__(self, state):
        import mmap
        import pickle

        with open(state["path"], "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            stream, placed = pickle.loads(f.read(size))
            start = _aligned(8 + size)
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if placed else None
        view = memoryview(mapped) if placed else None
        self.value = pickle.loads(stream, buffers=[view[start + o:start + o + n] for o, n in placed])
        self._path, self._lock = None, threading.Lock()


class _LoadBatch:
    """position -> collated numpy batch; runs in the workers (numpy only)."""

    def __init__(self, dataset, plan: _Plan, collate_fn, seed: int, batches_per_epoch: int, auto_collate: bool,
                 files: _DatasetFiles | None = None):
        self.dataset, self.plan, self.collate_fn = dataset, plan, collate_fn
        self.seed, self.batches_per_epoch, self.auto_collate = seed, batches_per_epoch, auto_collate
        self._shipped = _PickledOnce((dataset, plan), files)  # the sampler may hold the dataset too

    def __getstate__(self):
        return dict(self.__dict__, dataset=None, plan=None)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.dataset, self.plan = self._shipped.value

    def __call__(self, position: int):
        epoch, b = divmod(int(position), self.batches_per_epoch)
        _worker._start_epoch(epoch, self.dataset)
        indices = self.plan.batches(epoch)[b]
        scope = _worker._SampleScope(self.seed, epoch, self.dataset, b)
        samples = []
        for index in indices:
            scope.enter(index)
            try:
                samples.append(self.dataset[index])
            except Exception as e:  # noqa: BLE001  (re-raised naming the worker and sample)
                raise RuntimeError(
                    f"DataLoader {_where()} failed loading sample index {index} (epoch {epoch}, batch {b}): "
                    f"{type(e).__name__}: {e}\n--- dataset traceback ---\n{traceback.format_exc()}") from e
            finally:
                scope.leave()
        if not self.auto_collate:
            return self.collate_fn(samples[0])
        try:
            return self.collate_fn(samples)
        except Exception as e:  # noqa: BLE001
            raise RuntimeError(f"DataLoader {_where()} failed collating batch {b} of epoch {epoch} "
                               f"(sample indices {indices}): {type(e).__name__}: {e}") from e


class _WorkerInit:
    """grain's worker_init_fn: records who the worker is.

    The user's `worker_init_fn` runs later, at the worker's first batch,
    right after the generators are seeded (Paddle's order) and once the
    dataset has been unpickled, so `get_worker_info().dataset` is set and no
    module imported while unpickling can re-seed numpy after pdx did.
    """

    def __init__(self, user_fn: Callable[[int], Any] | None, seed: int, progress_name: str):
        self.user_fn, self.seed, self.progress_name = user_fn, seed, progress_name

    def __call__(self, worker_id: int, num_workers: int) -> None:
        _worker._set_worker(worker_id, num_workers, self.seed, self.user_fn)
        _worker._attach_progress(self.progress_name)
        # A worker that made its last batch sleeps this long between checks
        # for the stop signal (grain: 0.5 s); closing a stream at the end of
        # each epoch waits for it.
        process_prefetch._PARENT_EXHAUSTED_WAIT_S = _EXHAUSTED_POLL_S


class _IterableSource(grain.IterDataset):
    """A user IterableDataset as a grain source: each worker iterates its own copy."""

    def __init__(self, dataset, batch_size, drop_last, collate_fn, seed, epoch):
        super().__init__()
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.collate_fn, self.seed, self.epoch = collate_fn, seed, epoch

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        # grain hands each worker the slice (w, None, n); Paddle semantics are
        # that every worker runs the whole iterable and splits it itself
        # via get_worker_info(), so the slice only tells us who we are.
        del sl, sequential_slice

    def __iter__(self):
        return _IterableSourceIterator(self)


class _IterableSourceIterator(grain.DatasetIterator):
    def __init__(self, source: _IterableSource):
        super().__init__()
        self._source = source
        _worker._start_epoch(source.epoch, source.dataset)
        self._it = iter(source.dataset)
        self._count = 0  # samples this worker drew
        self._batches = 0
        ids = _worker._worker_ids()
        # interleaved sample numbers keep workers' per-sample RNG streams apart
        self._worker, self._num_workers = (0, 1) if ids is None else ids[:2]

    def __next__(self):
        src = self._source
        scope = _worker._SampleScope(src.seed, src.epoch, src.dataset, self._batches)
        samples = []
        while src.batch_size is None and not samples or src.batch_size is not None and len(samples) < src.batch_size:
            number = self._count * self._num_workers + self._worker
            scope.enter(number)
            try:
                samples.append(next(self._it))
            except StopIteration:
                break
            except Exception as e:  # noqa: BLE001
                raise RuntimeError(f"DataLoader {_where()} failed reading sample {self._count} of its copy of the "
                                   f"iterable dataset (sample number {number}): {type(e).__name__}: {e}\n"
                                   f"{traceback.format_exc()}") from e
            finally:
                scope.leave()
            self._count += 1
        if not samples or (src.drop_last and src.batch_size is not None and len(samples) < src.batch_size):
            raise StopIteration
        self._batches += 1
        return src.collate_fn(samples[0]) if src.batch_size is None else src.collate_fn(samples)

    def get_state(self):
        return {"count": self._count}

    def set_state(self, state):
        raise NotImplementedError("pdx replays an iterable dataset from its start instead of setting a state.")


class _ForkServerPrefetch(process_prefetch.ProcessPrefetchIterDataset):
    """grain's one-worker prefetch, its process forked from pdx's fork server instead of spawned."""

    def __iter__(self):
        it = super().__iter__()
        it._process_ctx = _worker._worker_context()  # read when the process starts, at the first next()
        return it


def _fork_workers(ds):
    """Make the worker processes of `ds.mp_prefetch(...)` forks of the fork server."""
    interleave = ds.parents[0] if ds.parents else None
    if not isinstance(interleave, grain.experimental.InterleaveIterDataset) or not all(
            type(s) is process_prefetch.ProcessPrefetchIterDataset for s in interleave._datasets):
        return ds  # another layout (free-threaded Python: threads): leave grain's own start method
    interleave._datasets = [_ForkServerPrefetch(s.parents[0], s._buffer_size, s._worker_init_fn)
                            for s in interleave._datasets]
    return ds


class _Waiter:
    """Runs `next(it)` on a helper thread, so the main thread can stop waiting for a hung worker.

    The thread is a daemon: if a wait is abandoned it must not hold up exit.
    """

    def __init__(self, it):
        self._it = it
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._results: queue.SimpleQueue = queue.SimpleQueue()
        self.pending = False
        threading.Thread(target=self._run, daemon=True, name="pdx-dataloader-wait").start()

    def _run(self) -> None:
        while self._requests.get():
            try:
                self._results.put((True, next(self._it)))
            except BaseException as e:  # noqa: BLE001  (handed to the waiting thread)
                self._results.put((False, e))

    def ask(self) -> None:
        if not self.pending:
            self.pending = True
            self._requests.put(True)

    def answer(self, wait_s: float):
        """The next batch; raises what `next` raised, or queue.Empty after `wait_s`."""
        ok, value = self._results.get(timeout=wait_s)
        self.pending = False
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        self._requests.put(False)


class _WorkerTimedOut(Exception):
    """Raised inside `Stream.next` after the hung worker was stopped; re-raised as RuntimeError."""


class Stream:
    """One grain pipeline producing batches from a position onwards."""

    def __init__(self, loader, epoch: int, batch: int):
        _ensure_grain_flags()
        self.num_workers = loader.num_workers
        # no reference to the loader: its finalizer must be able to run
        self._options = _Options(loader.use_buffer_reader, loader.prefetch_factor, loader.worker_init_fn,
                                 loader.seed, loader.timeout)
        self._plan, self._bpe, self._progress, self._waiter = None, None, None, None
        self._ran_out = False  # every batch the workers made was delivered
        if loader.is_iterable:
            self._init_iterable(loader, epoch)
            self.position = 0
            for _ in range(batch):  # iterable datasets are replayed up to the saved position
                self.next()
            return
        bpe = len(loader)
        if bpe == 0:
            raise ValueError("DataLoader: the batch sampler yields no batches (dataset smaller than batch_size "
                             "with drop_last=True?).")
        sampler = loader.batch_sampler
        if getattr(sampler, "epoch_deterministic", False):
            plan, self.persistent = _Plan(sampler), loader.persistent_workers
        else:
            # The order may depend on hidden RNG state: draw it here, once,
            # and ship the list; such a stream ends with its epoch.
            plan, self.persistent = _Plan(sampler, fixed=[list(b) for b in sampler]), False
            if len(plan.fixed) != bpe:
                raise ValueError(f"DataLoader: len(batch_sampler)={bpe} but it yielded {len(plan.fixed)} batches.")
        self.start = epoch * bpe + batch
        self.position = self.start
        self.stop = _ENDLESS if self.persistent else (epoch + 1) * bpe
        self._plan, self._bpe = plan, bpe
        load = _LoadBatch(loader.dataset, plan, loader.collate_fn, loader.seed, bpe, loader.auto_collate, _files())
        ds = grain.MapDataset.range(self.start, self.stop).map(load)
        self._it = self._build(ds.to_iter_dataset(self._read_options()))

    def _init_iterable(self, loader, epoch):
        self.persistent, self.start, self.stop = False, 0, _ENDLESS  # ends when the workers' copies run out
        src = _IterableSource(loader.dataset, loader.batch_size, loader.drop_last, loader.collate_fn,
                              loader.seed, epoch)
        self._it = self._build(src)

    def _read_options(self) -> grain.ReadOptions:
        if self.num_workers == 0 and not self._options.use_buffer_reader:
            return grain.ReadOptions(num_threads=0, prefetch_buffer_size=0)
        return grain.ReadOptions(num_threads=1, prefetch_buffer_size=self._options.prefetch_factor)

    def _build(self, ds):
        if self.num_workers == 0:
            return iter(ds)
        opts = self._options
        options = grain.MultiprocessingOptions(num_workers=self.num_workers, per_worker_buffer_size=opts.prefetch_factor)
        self._progress = _worker._Progress(self.num_workers)
        ds = _fork_workers(ds.mp_prefetch(
            options, worker_init_fn=_WorkerInit(opts.worker_init_fn, opts.seed, self._progress.name)))
        it = iter(ds)
        if opts.timeout > 0:
            self._waiter = _Waiter(it)
        return it

    def _worker_of(self, position: int) -> int:
        return (position - self.start) % self.num_workers

    def _next_within_timeout(self):
        """`next(self._it)`, giving up when the worker owing the batch has been silent for `timeout` s.

        The clock starts when the batch is asked for or when that worker
        process started, whichever is later: starting a worker (the fork
        server's imports included) is not counted, a hung `dataset[i]` is.
        """
        waiter, progress, timeout_ns = self._waiter, self._progress, int(self._options.timeout * 1e9)
        asked_ns = time.monotonic_ns()
        waiter.ask()
        while True:
            try:
                return waiter.answer(_POLL_S)
            except queue.Empty:
                pass
            worker = self._worker_of(self.position)
            started = progress.started(worker)
            if started is None or time.monotonic_ns() - max(asked_ns, started[1]) <= timeout_ns:
                continue
            pid, last = started[0], progress.last(worker)
            self._stop_hung_worker(pid)
            loading = (f"while loading sample index {last[2]} (epoch {last[0]}, batch {last[1]})" if last
                       else f"before loading any sample, producing {self._describe(self.position)}")
            raise _WorkerTimedOut(
                f"DataLoader worker {worker} (pid {pid}) timed out {loading}: no batch within "
                f"timeout={self._options.timeout} s. The workers were stopped. If loading a batch can take longer, "
                "pass a larger DataLoader(timeout=...) (0 waits forever).")

    def _stop_hung_worker(self, pid: int) -> None:
        import multiprocessing

        if pid in {p.pid for p in multiprocessing.active_children()}:  # our own child, still running
            os.kill(pid, signal.SIGKILL)
        try:  # grain reports the killed worker; let the helper thread finish before the stream closes
            self._waiter.answer(_KILLED_WORKER_WAIT_S)
        except Exception:  # noqa: BLE001, S110  (the error that stands is the timeout)
            pass

    def next(self):
        try:
            batch = next(self._it) if self._waiter is None else self._next_within_timeout()
        except StopIteration:
            self._ran_out = True
            raise
        except _WorkerTimedOut as e:
            self.close()
            raise RuntimeError(str(e)) from None
        except Exception as e:
            message = str(e)
            if message.startswith("DataLoader "):  # already names the worker and sample
                self.close()
                raise RuntimeError(message) from None
            if self.num_workers == 0:
                where = f"the main process failed producing {self._describe(self.position)}"
            else:
                worker = self._worker_of(self.position)
                last = self._progress.last(worker) if self._progress is not None else None
                where = f"worker {worker} failed " + (
                    f"while loading sample index {last[2]} (epoch {last[0]}, batch {last[1]})" if last
                    else f"before loading any sample, producing {self._describe(self.position)}")
            self.close()
            hint = _MAIN_MODULE_HINT if "terminated unexpectedly" in message else ""
            raise RuntimeError(f"DataLoader {where}: {type(e).__name__}: {e}{hint}") from e
        self.position += 1
        self._ran_out = self.position >= self.stop
        _unlink_received(batch)
        return batch

    def _describe(self, position: int) -> str:
        if self._plan is None:
            return f"batch {position} of the iterable dataset"
        epoch, b = divmod(position, self._bpe)
        return f"batch {b} of epoch {epoch} (sample indices {self._plan.batches(epoch)[b]})"

    def close(self):
        it, self._it = self._it, None
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.stop()
        if it is not None and hasattr(it, "close"):
            it.close()  # stops the workers before their progress table goes away
            if self.num_workers > 0:  # arrays still in grain's read-ahead buffers
                _drain_shm_deletions(collect_cycles=not self._ran_out)
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.close()


