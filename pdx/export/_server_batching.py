"""Dynamic batching of `pdx serve`: a queue, a batcher on the event loop, one model worker thread.

    submit(arrays) -> queue (503 when full)
    batcher loop: take the oldest job, gather queued jobs of equal trailing shapes up to
                  max_batch_size rows (waiting at most batch_timeout for more)
    execute:      concatenate along dim 0, cut into chunks of at most max_batch_size rows,
                  pad each chunk with zero rows to a warm-up size (batch_sizes), run each chunk
                  on the worker thread, concatenate, split back per job

Every executed shape is a warm-up shape, however many rows a request has: the
runtime compiles nothing after warm-up and its executable cache stays bounded.
The worker is a daemon thread that records how long its current call has run,
so a hung model call shows on `/health/ready` and cannot keep the process from
exiting.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import queue
import threading
import time
from typing import Any, Callable

import numpy as np

from pdx.export._server_decode import HTTPError
from pdx.export._server_metrics import Metrics, batch_sizes

__all__ = ["Batcher", "DaemonPool", "ModelWorker", "settle_future"]

_log = logging.getLogger("uvicorn.error")


class ModelWorker:
    """Runs model calls one at a time on a daemon thread; `busy_for()` says how long the current one has run.

    A daemon thread (not a ThreadPoolExecutor, whose threads the interpreter joins
    at exit): a model call that never returns cannot keep the server from stopping.

    Example:
      >>> import asyncio
      >>> async def add(worker):
      ...     return await worker.run(sum, [1, 2])
      >>> worker = ModelWorker()
      >>> asyncio.run(add(worker))
      3
      >>> worker.stop()
    """

    def __init__(self, name: str = "pdx-serve-model"):
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._busy_since: float | None = None
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def run(self, fn: Callable, *args) -> asyncio.Future:
        """`fn(*args)` on the worker thread, as a future of the running event loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._calls.put((fn, args, loop, future))
        return future

    def busy_for(self) -> float:
        """Seconds the current call has been running (0.0 when idle)."""
        since = self._busy_since
        return 0.0 if since is None else time.monotonic() - since

    def stop(self) -> None:
        """Let the thread end after its current call (it is not waited for)."""
        self._calls.put(None)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            fn, args, loop, future = item
            self._busy_since = time.monotonic()
            try:
                result, error = fn(*args), None
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting request
                result, error = None, e
            finally:
                self._busy_since = None
            with contextlib.suppress(RuntimeError):  # the loop closed while the call ran
                loop.call_soon_threadsafe(settle_future, future, result, error)


class DaemonPool:
    """Runs calls on `threads` daemon threads; each call's result is a future of the calling event loop.

    For tokenizing, rendering chat templates and decoding large bodies off the
    event loop. Unlike `asyncio.to_thread` / `run_in_executor(None, ...)`, whose
    threads the interpreter joins at exit, a call that never returns cannot keep
    the server from stopping, and the loop never waits for one: the awaiting
    request may give up (timeout, shutdown) and the thread finishes on its own.

    Example:
      >>> import asyncio
      >>> pool = DaemonPool(2)
      >>> async def twice():
      ...     return await asyncio.gather(pool.run(len, "ab"), pool.run(len, "abc"))
      >>> asyncio.run(twice())
      [2, 3]
      >>> pool.stop()
    """

    def __init__(self, threads: int = 2, name: str = "pdx-serve-text"):
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"DaemonPool: threads must be an int >= 1, got {threads!r}")
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._serve, name=f"{name}-{i}", daemon=True)
                         for i in range(threads)]
        for t in self._threads:
            t.start()

    def run(self, fn: Callable, *args) -> asyncio.Future:
        """`fn(*args)` on a pool thread, as a future of the running event loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._calls.put((fn, args, loop, future))
        return future

    def stop(self) -> None:
        """Let the threads end after their current calls (they are not waited for)."""
        for _ in self._threads:
            self._calls.put(None)

    def _serve(self) -> None:
        while (item := self._calls.get()) is not None:
            fn, args, loop, future = item
            if future.cancelled():  # its request gave up while this call was queued
                continue
            try:
                result, error = fn(*args), None
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting request
                result, error = None, e
            with contextlib.suppress(RuntimeError):  # the loop closed while the call ran
                loop.call_soon_threadsafe(settle_future, future, result, error)


def settle_future(future: asyncio.Future, result, error) -> None:
    """Give `future` its result or error unless it is done (the caller may have given up)."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


@dataclasses.dataclass(eq=False)
class _Job:
    arrays: list
    rows: int
    key: Any  # jobs with equal keys can be concatenated; None = run alone, at its own shapes
    future: asyncio.Future


class Batcher:
    """Queues jobs, concatenates compatible ones along dim 0 and runs them in warm-up-sized chunks.

    With `batching` (every input's leading dim dynamic, rows independent, as
    batched inference assumes) each executed batch has a size from
    `buckets()`: requests are gathered up to `max_batch_size` rows, a request
    with more rows is cut into chunks, and each chunk is padded with zero rows.
    A model whose outputs turn out not to keep the batch dim is detected and
    from then on run one request at a time, at the request's own shapes.
    """

    def __init__(self, run: Callable, worker: ModelWorker, metrics: Metrics, *, batching: bool,
                 max_batch_size: int, batch_timeout_s: float, max_queue: int):
        self._run_model = run
        self._worker = worker
        self._metrics = metrics
        self.batching = batching
        self.max_batch_size = max_batch_size
        self._timeout = batch_timeout_s
        self.max_queue = max_queue
        self.queue: collections.deque[_Job] = collections.deque()
        self._running: list[_Job] = []
        self._added = asyncio.Event()
        self._task: asyncio.Task | None = None

    def buckets(self) -> list[int]:
        """Batch sizes the runtime sees (all compiled during warm-up)."""
        return batch_sizes(self.max_batch_size) if self.batching else [1]

    def _bucket(self, rows: int) -> int:
        return next(b for b in self.buckets() if b >= rows)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.abort("server is shutting down")

    def abort(self, message: str) -> None:
        """Answer every queued and running job 503 `message` (the model call itself cannot be stopped)."""
        for job in [*self.queue, *self._running]:
            if not job.future.done():
                job.future.set_exception(HTTPError(503, message))
        self.queue.clear()

    def submit(self, arrays: list) -> _Job:
        if len(self.queue) >= self.max_queue:
            raise HTTPError(503, f"queue full ({self.max_queue} requests waiting, --max-queue); retry later")
        rows = {a.shape[0] if a.ndim else None for a in arrays}
        key = None
        if self.batching and len(rows) == 1 and None not in rows:
            key = tuple((a.shape[1:], a.dtype.str) for a in arrays)
        job = _Job(arrays, rows.pop() if len(rows) == 1 else 0, key, asyncio.get_running_loop().create_future())
        self.queue.append(job)
        self._added.set()
        return job

    def discard(self, job: _Job) -> None:
        with contextlib.suppress(ValueError):
            self.queue.remove(job)

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self.queue:
                self._added.clear()
                await self._added.wait()
            first = self.queue.popleft()
            batch, rows = [first], first.rows
            if first.key is not None and self.batching:
                deadline = loop.time() + self._timeout
                while rows < self.max_batch_size:
                    self._added.clear()
                    job = self._take(first.key, self.max_batch_size - rows)
                    if job is not None:
                        batch.append(job)
                        rows += job.rows
                        continue
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._added.wait(), remaining)
            batch = [j for j in batch if not j.future.done()]  # timed out while queued
            if batch:
                await self._execute(batch)

    def _take(self, key, max_rows: int) -> _Job | None:
        for i, job in enumerate(self.queue):
            if job.key == key and job.rows <= max_rows:
                del self.queue[i]
                return job
        return None

    async def _call(self, inputs: list, rows: int) -> list:
        start = time.perf_counter()
        outputs = await self._worker.run(self._run_model, inputs)
        self._metrics.inference.observe(time.perf_counter() - start)
        self._metrics.batch_size.observe(rows)
        return outputs

    async def _execute(self, batch: list[_Job]) -> None:
        self._running = batch
        try:
            await self._execute_running(batch)
        finally:
            self._running = []

    async def _execute_running(self, batch: list[_Job]) -> None:
        if self.batching and batch[0].key is not None:
            try:
                outputs = await self._run_chunked(batch)
            except Exception as e:  # the model failed: every request in the batch gets the reason
                _fail(batch, e)
                return
            if outputs is _ABANDONED:
                return
            if outputs is not None:
                offset = 0
                for job in batch:
                    _resolve(job, [o[offset:offset + job.rows] for o in outputs])
                    offset += job.rows
                return
        for job in batch:  # one request at a time, at its own shapes
            try:
                _resolve(job, await self._call(job.arrays, job.rows))
            except Exception as e:
                _fail([job], e)

    async def _run_chunked(self, batch: list[_Job]) -> list | None:
        """The batch's outputs, run in chunks of warm-up sizes; None when batching had to be turned off,
        `_ABANDONED` when every request of the batch timed out or left (checked between chunks)."""
        n_inputs = len(batch[0].arrays)
        inputs = [batch[0].arrays[i] if len(batch) == 1 else np.concatenate([j.arrays[i] for j in batch])
                  for i in range(n_inputs)]
        total = inputs[0].shape[0]
        pieces = []
        for start in range(0, total, self.max_batch_size):
            if all(j.future.done() for j in batch):  # every request timed out or left: stop computing for them
                _log.debug("dropping a batch of %d rows after %d: no request waits for it", total, start)
                return _ABANDONED
            rows = min(self.max_batch_size, total - start)
            padded = self._bucket(rows)
            chunk = [_pad(a[start:start + rows], padded) for a in inputs]
            outputs = await self._call(chunk, rows)
            if any(o.ndim == 0 or o.shape[0] != padded for o in outputs):
                _log.warning("model outputs %s do not keep the batch dim %d; batching disabled",
                             [o.shape for o in outputs], padded)
                self.batching = False
                return None
            pieces.append([o[:rows] for o in outputs])
        return pieces[0] if len(pieces) == 1 else [np.concatenate(p) for p in zip(*pieces)]


_ABANDONED = object()  # _run_chunked's answer when no request of the batch is waiting any more


def _pad(array: np.ndarray, rows: int) -> np.ndarray:
    have = array.shape[0]
    if rows == have:
        return array
    return np.concatenate([array, np.zeros((rows - have,) + array.shape[1:], array.dtype)])


def _fail(batch: list[_Job], error: Exception) -> None:
    _log.exception("model execution failed", exc_info=error)
    for job in batch:
        if not job.future.done():
            job.future.set_exception(HTTPError(500, f"model execution failed: {type(error).__name__}: {error}"))


def _resolve(job: _Job, outputs) -> None:
    if not job.future.done():
        job.future.set_result(outputs)
