"""HTTP inference server for exported artifacts (`pdx serve`).

An ASGI app (starlette) that uvicorn runs. One model per server. Requests are
decoded and validated on the event loop, queued, gathered into batches along
the leading (dynamic) dim and run by one worker thread, so the loop keeps
answering health checks and rejecting bad input while the model computes.

    POST /v1/models/{name}:predict   JSON or .npy/.npz body -> outputs
    GET  /v1/models/{name}           input/output names, shapes, dtypes
    GET  /health/live                200 while the process serves HTTP
    GET  /health/ready               200 once the model is loaded and warmed up
    GET  /metrics                    Prometheus text format
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import io
import json
import logging
import math
import re
import signal
import socket
import threading
import time
import zipfile
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["create_app", "serve"]

# uvicorn configures this logger (handlers, --log-level), so server messages appear with its own.
_log = logging.getLogger("uvicorn.error")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_BATCH_SIZE = 32
# 0: a batch is whatever queued while the previous one ran; no added latency at low load.
DEFAULT_BATCH_TIMEOUT_MS = 0.0
DEFAULT_MAX_QUEUE = 256
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_JSON_DEPTH = 64

NPY_TYPE = "application/x-npy"
NPZ_TYPE = "application/x-npz"
JSON_TYPE = "application/json"

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# A JSON string literal (unrolled form: linear time, no catastrophic backtracking).
_JSON_STRING_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET_DELTA = np.zeros(256, np.int8)
_BRACKET_DELTA[[ord("["), ord("{")]] = 1
_BRACKET_DELTA[[ord("]"), ord("}")]] = -1
# Bodies larger than this are decoded on a helper thread, not on the event loop.
_INLINE_DECODE_BYTES = 256 * 1024

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def reject_url(model: Any) -> None:
    """Raise ValueError when `model` is a URL: pdx serve only loads local artifacts."""
    if isinstance(model, str) and _URL_RE.match(model):
        raise ValueError(
            f"pdx serve: model path {model!r} is a URL; pdx never loads a model from the network. "
            "Download the artifact, check it, and pass its local directory.")


class _HTTPError(Exception):
    """An error answered with `status` and a JSON body {"error": message}."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# --------------------------------------------------------------------------- metrics


class _Histogram:
    def __init__(self, buckets: Sequence[float]):
        self.buckets = tuple(buckets)
        self.counts = [0] * len(self.buckets)
        self.total = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.total += 1
        self.sum += value
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1

    def lines(self, metric: str, labels: str) -> list[str]:
        out = [f'{metric}_bucket{{{labels},le="{_fmt(b)}"}} {c}' for b, c in zip(self.buckets, self.counts)]
        out.append(f'{metric}_bucket{{{labels},le="+Inf"}} {self.total}')
        out.append(f"{metric}_sum{{{labels}}} {_fmt(self.sum)}")
        out.append(f"{metric}_count{{{labels}}} {self.total}")
        return out


def _fmt(x: float) -> str:
    return repr(float(x))


def _batch_sizes(max_batch_size: int) -> list[int]:
    """Powers of two up to max_batch_size, and max_batch_size itself."""
    return sorted({2 ** i for i in range(max_batch_size.bit_length())} | {max_batch_size})


class _Metrics:
    """Request, latency, batch and queue metrics; updated only on the event loop thread."""

    def __init__(self, model: str, max_batch_size: int):
        self.model = model
        self.requests: collections.Counter[int] = collections.Counter()
        self.latency = _Histogram(_LATENCY_BUCKETS)
        self.inference = _Histogram(_LATENCY_BUCKETS)
        self.batch_size = _Histogram(_batch_sizes(max_batch_size))

    def render(self, queue_depth: int, ready: bool) -> str:
        labels = f'model="{_escape_label(self.model)}"'
        lines = ["# HELP pdx_serve_requests_total Predict requests answered, by HTTP status code.",
                 "# TYPE pdx_serve_requests_total counter"]
        for code in sorted(self.requests):
            lines.append(f'pdx_serve_requests_total{{{labels},code="{code}"}} {self.requests[code]}')
        lines += ["# HELP pdx_serve_request_latency_seconds Predict request latency in the server, request received to response ready.",
                  "# TYPE pdx_serve_request_latency_seconds histogram"]
        lines += self.latency.lines("pdx_serve_request_latency_seconds", labels)
        lines += ["# HELP pdx_serve_inference_seconds Model execution time per batch.",
                  "# TYPE pdx_serve_inference_seconds histogram"]
        lines += self.inference.lines("pdx_serve_inference_seconds", labels)
        lines += ["# HELP pdx_serve_batch_size Rows per executed batch (before padding).",
                  "# TYPE pdx_serve_batch_size histogram"]
        lines += self.batch_size.lines("pdx_serve_batch_size", labels)
        lines += ["# HELP pdx_serve_queue_depth Requests waiting for a batch.",
                  "# TYPE pdx_serve_queue_depth gauge",
                  f"pdx_serve_queue_depth{{{labels}}} {queue_depth}",
                  "# HELP pdx_serve_ready 1 once the model is loaded and warmed up.",
                  "# TYPE pdx_serve_ready gauge",
                  f"pdx_serve_ready{{{labels}}} {int(ready)}"]
        return "\n".join(lines) + "\n"


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


# --------------------------------------------------------------------------- request decoding


async def _read_body(request, limit: int) -> bytes:
    """The request body, refusing (413) as soon as more than `limit` bytes are declared or arrive."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise _HTTPError(400, f"bad Content-Length header {declared!r}")
        if int(declared) > limit:
            raise _HTTPError(413, f"request body of {int(declared)} bytes exceeds the limit of {limit} bytes "
                                  "(--max-body-bytes); send fewer rows per request")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _HTTPError(413, f"request body exceeds the limit of {limit} bytes (--max-body-bytes); "
                                  "send fewer rows per request")
        chunks.append(chunk)
    return b"".join(chunks)


def json_depth(body: bytes) -> int:
    """Deepest nesting of [ and { in a JSON text, without parsing it (brackets in strings ignored)."""
    if b'"' in body:
        body = _JSON_STRING_RE.sub(b'""', body)
    delta = _BRACKET_DELTA[np.frombuffer(body, np.uint8)]
    steps = delta[delta != 0]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def _decode_json(body: bytes, specs, max_depth: int) -> list:
    depth = json_depth(body)
    if depth > max_depth:
        raise _HTTPError(400, f"JSON nesting depth {depth} exceeds the limit of {max_depth}; "
                              "inputs are nested lists as deep as their rank")
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, bad UTF-8, int digit limit
        raise _HTTPError(400, f"malformed JSON body: {e}") from None
    if not isinstance(payload, dict) or "inputs" not in payload:
        raise _HTTPError(400, 'JSON body must be an object {"inputs": {name: nested list, ...}} '
                              'or {"inputs": [value for each input, in order]}')
    inputs = payload["inputs"]
    names = [s.name for s in specs]
    if isinstance(inputs, dict):
        unknown = sorted(set(inputs) - set(names))
        missing = [n for n in names if n not in inputs]
        if unknown or missing:
            raise _HTTPError(400, f"inputs {sorted(inputs)} do not match the model's inputs {names} "
                                  f"(missing {missing}, unknown {unknown})")
        values = [inputs[n] for n in names]
    elif isinstance(inputs, list):
        if len(inputs) != len(specs):
            raise _HTTPError(400, f'"inputs" is a list of {len(inputs)} values but the model takes '
                                  f"{len(specs)} inputs {names}; a list holds one value per input, in order "
                                  f'(for one input: {{"inputs": [x]}}), or use {{"inputs": {{name: x}}}}')
        values = inputs
    else:
        raise _HTTPError(400, f'"inputs" must be an object or a list, got {type(inputs).__name__}')
    return values  # nested lists: predictor.check_inputs converts them to the declared dtypes


def decode_npy(data: bytes, label: str = "body") -> np.ndarray:
    """A `.npy` payload as an array, checking the header against the data size (no pickles)."""
    fp = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
    except (ValueError, SyntaxError, EOFError) as e:
        raise _HTTPError(400, f"{label}: not a valid .npy payload ({e})") from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise _HTTPError(400, f"{label}: .npy dtype {dtype} is not a numeric dtype")
    count = math.prod(shape)
    if len(data) - fp.tell() != count * dtype.itemsize:
        raise _HTTPError(400, f"{label}: .npy header declares shape {shape} of {dtype} "
                              f"({count * dtype.itemsize} bytes) but {len(data) - fp.tell()} data bytes follow")
    arr = np.frombuffer(data, dtype, count, offset=fp.tell()).reshape(shape, order="F" if fortran else "C")
    # big-endian data: convert, so a float32 model does not refuse '>f4' as another dtype
    return arr if dtype.isnative else arr.astype(dtype.newbyteorder("="))


def _decode_npz(data: bytes, specs, limit: int) -> list:
    names = [s.name for s in specs]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = zf.infolist()
            expanded = sum(m.file_size for m in members)
            if expanded > limit:  # a small compressed body must not expand without bound
                raise _HTTPError(413, f".npz expands to {expanded} bytes, over the limit of {limit} bytes "
                                      "(--max-body-bytes)")
            keys = [m.filename[:-4] if m.filename.endswith(".npy") else m.filename for m in members]
            if sorted(keys) == sorted(names):
                order = [keys.index(n) for n in names]
            elif sorted(keys) == [f"arr_{i}" for i in range(len(specs))]:
                order = [keys.index(f"arr_{i}") for i in range(len(specs))]
            else:
                raise _HTTPError(400, f".npz holds {sorted(keys)} but the model's inputs are {names}; "
                                      "name the arrays after the inputs (np.savez(f, **{name: array}))")
            return [decode_npy(zf.read(members[i]), label=keys[i]) for i in order]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError, ValueError) as e:
        raise _HTTPError(400, f"not a valid .npz payload ({e})") from None


def _decode(body: bytes, content_type: str, specs, max_body_bytes: int, max_depth: int) -> list:
    if content_type in ("", JSON_TYPE):
        return _decode_json(body, specs, max_depth)
    if content_type == NPY_TYPE:
        if len(specs) != 1:
            raise _HTTPError(400, f"a .npy body carries one array but the model takes {len(specs)} inputs "
                                  f"{[s.name for s in specs]}; send {NPZ_TYPE} (np.savez with one array per input)")
        return [decode_npy(body)]
    if content_type == NPZ_TYPE:
        return _decode_npz(body, specs, max_body_bytes)
    raise _HTTPError(415, f"unsupported Content-Type {content_type!r}; use {JSON_TYPE}, {NPY_TYPE} or {NPZ_TYPE}")


def _encode(outputs: Sequence[np.ndarray], names: Sequence[str], model: str, accept: str):
    from starlette.responses import Response

    if NPZ_TYPE in accept:
        buf = io.BytesIO()
        np.savez(buf, **dict(zip(names, outputs)))
        return Response(buf.getvalue(), media_type=NPZ_TYPE)
    if NPY_TYPE in accept:
        if len(outputs) != 1:
            raise _HTTPError(406, f"the model has {len(outputs)} outputs {list(names)}; ask for {NPZ_TYPE}")
        buf = io.BytesIO()
        np.save(buf, outputs[0], allow_pickle=False)
        return Response(buf.getvalue(), media_type=NPY_TYPE)
    # allow_nan: a model may legitimately output inf/nan; they are written as Python's json
    # writes them (Infinity, NaN). Clients that need strict JSON ask for .npy/.npz.
    body = json.dumps({"model_name": model, "outputs": {n: o.tolist() for n, o in zip(names, outputs)}},
                      allow_nan=True, separators=(",", ":"))
    return Response(body, media_type=JSON_TYPE)


# --------------------------------------------------------------------------- batching


@dataclasses.dataclass(eq=False)
class _Job:
    arrays: list
    rows: int
    key: Any  # jobs with equal keys can be concatenated; None = run alone
    future: asyncio.Future


class _Batcher:
    """Queues jobs, concatenates compatible ones along dim 0 and runs them on one worker thread.

    Batches are padded with zero rows up to a power of two (or max_batch_size)
    so the runtime compiles a handful of batch shapes, all during warm-up. A
    request with more rows than max_batch_size runs alone, at its own size.
    This assumes the model treats rows independently, which batched inference
    needs anyway; a model whose outputs do not keep the batch dim is detected
    and from then on run one request at a time.
    """

    def __init__(self, run: Callable, executor, metrics: _Metrics, *, batching: bool,
                 max_batch_size: int, batch_timeout_s: float, max_queue: int):
        self._run_model = run
        self._executor = executor
        self._metrics = metrics
        self.batching = batching and max_batch_size > 1
        self.max_batch_size = max_batch_size
        self._timeout = batch_timeout_s
        self.max_queue = max_queue
        self.queue: collections.deque[_Job] = collections.deque()
        self._added = asyncio.Event()
        self._task: asyncio.Task | None = None

    def buckets(self) -> list[int]:
        """Batch sizes the runtime sees (all compiled during warm-up)."""
        return _batch_sizes(self.max_batch_size) if self.batching else [1]

    def _bucket(self, rows: int) -> int:
        return next((b for b in self.buckets() if b >= rows), rows)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        while self.queue:
            job = self.queue.popleft()
            if not job.future.done():
                job.future.set_exception(_HTTPError(503, "server is shutting down"))

    def submit(self, arrays: list) -> _Job:
        if len(self.queue) >= self.max_queue:
            raise _HTTPError(503, f"queue full ({self.max_queue} requests waiting, --max-queue); retry later")
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
            if first.key is not None:
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
                await self._execute(batch, loop)

    def _take(self, key, max_rows: int) -> _Job | None:
        for i, job in enumerate(self.queue):
            if job.key == key and job.rows <= max_rows:
                del self.queue[i]
                return job
        return None

    async def _execute(self, batch: list[_Job], loop) -> None:
        start = time.perf_counter()
        try:
            if len(batch) == 1 and batch[0].key is None:
                inputs, padded = batch[0].arrays, None
            else:
                padded = self._bucket(sum(j.rows for j in batch))
                inputs = [_concat_pad([j.arrays[i] for j in batch], padded) for i in range(len(batch[0].arrays))]
            outputs = await loop.run_in_executor(self._executor, self._run_model, inputs)
        except Exception as e:  # the model failed: every request in the batch gets the reason
            _log.exception("model execution failed")
            for job in batch:
                if not job.future.done():
                    job.future.set_exception(_HTTPError(500, f"model execution failed: {type(e).__name__}: {e}"))
            return
        self._metrics.inference.observe(time.perf_counter() - start)
        self._metrics.batch_size.observe(sum(j.rows for j in batch))
        if padded is None:
            _resolve(batch[0], outputs)
            return
        if any(o.ndim == 0 or o.shape[0] != padded for o in outputs):
            _log.warning("model outputs %s do not keep the batch dim %d; batching disabled",
                         [o.shape for o in outputs], padded)
            self.batching = False
            for job in batch:  # rerun each request on its own, unpadded
                await self._execute([dataclasses.replace(job, key=None)], loop)
            return
        offset = 0
        for job in batch:
            _resolve(job, [o[offset:offset + job.rows] for o in outputs])
            offset += job.rows


def _concat_pad(arrays: list, rows: int) -> np.ndarray:
    have = sum(a.shape[0] for a in arrays)
    if rows > have:
        arrays = arrays + [np.zeros((rows - have,) + arrays[0].shape[1:], arrays[0].dtype)]
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=0)


def _resolve(job: _Job, outputs) -> None:
    if not job.future.done():
        job.future.set_result(outputs)


# --------------------------------------------------------------------------- the app


class _Service:
    """The model, its batcher and the server's state, shared by the route handlers."""

    def __init__(self, model, *, name, runtime, max_batch_size, batch_timeout_ms, max_queue,
                 max_body_bytes, timeout_s, max_json_depth, on_load_error):
        self.source = model
        self.name = name
        self.runtime = runtime
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_ms / 1000.0
        self.max_queue = max_queue
        self.max_body_bytes = max_body_bytes
        self.timeout_s = timeout_s
        self.max_json_depth = max_json_depth
        self.on_load_error = on_load_error
        self.predictor = None
        self.output_dtypes: list[str] = []
        self.ready = False
        self.load_error: str | None = None
        self.batcher: _Batcher | None = None
        self.metrics = _Metrics(name or "", max_batch_size)
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pdx-serve-model")
        self._startup: asyncio.Task | None = None

    # ---- lifecycle

    async def start(self) -> None:
        self._startup = asyncio.get_running_loop().create_task(self._load_and_warm_up())

    async def stop(self) -> None:
        if self._startup is not None and not self._startup.done():
            self._startup.cancel()
        if self.batcher is not None:
            await self.batcher.stop()
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def _load_and_warm_up(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            if isinstance(self.source, (str, bytes)) or hasattr(self.source, "__fspath__"):
                from pdx.export import load

                self.predictor = await loop.run_in_executor(self.executor, lambda: load(self.source, runtime=self.runtime))
            else:
                self.predictor = self.source
            self.name = self.name or self.predictor.name
            self.metrics.model = self.name
            specs = tuple(self.predictor.input_specs)
            batching = all(len(s.shape) >= 1 and s.shape[0] is None for s in specs)
            self.batcher = _Batcher(self._run, self.executor, self.metrics, batching=batching,
                                    max_batch_size=self.max_batch_size, batch_timeout_s=self.batch_timeout_s,
                                    max_queue=self.max_queue)
            started = time.perf_counter()
            await self._warm_up(specs, loop)
            _log.info("model %r ready: %d input(s), batching %s, warm-up %.2fs over batch sizes %s",
                      self.name, len(specs), "on" if self.batcher.batching else "off",
                      time.perf_counter() - started, self.batcher.buckets())
            self.batcher.start()
            self.ready = True
        except asyncio.CancelledError:
            raise
        except Exception as e:  # reported on /health/ready and to the caller's hook
            self.load_error = f"{type(e).__name__}: {e}"
            _log.error("pdx serve: cannot load the model: %s", self.load_error)
            if self.on_load_error is not None:
                self.on_load_error(self.load_error)

    async def _warm_up(self, specs, loop) -> None:
        """Run every batch size the batcher will use once (compiles them), turning batching
        off if the model refuses batches or does not keep the batch dim in its outputs."""
        for rows in self.batcher.buckets():
            try:
                outputs = await loop.run_in_executor(self.executor, self._run, _warm_up_inputs(specs, rows))
            except ValueError as e:  # e.g. an IREE module specialized to one batch size
                if rows == 1:
                    raise
                _log.warning("the model refuses batch size %d (%s); batching off", rows, e)
                self.batcher.batching = False
                return
            self.output_dtypes = [o.dtype.name for o in outputs]
            if self.batcher.batching and any(o.ndim == 0 or o.shape[0] != rows for o in outputs):
                _log.warning("model outputs %s do not keep the batch dim; batching off", [o.shape for o in outputs])
                self.batcher.batching = False
                return

    def _run(self, inputs: list) -> list:
        out = self.predictor(*inputs)
        out = out if isinstance(out, (tuple, list)) else (out,)
        return [np.asarray(o) for o in out]

    def output_names(self) -> list[str]:
        return list(getattr(self.predictor, "output_names", ()) or ())

    # ---- handlers

    async def predict(self, request):
        started = time.perf_counter()
        try:
            response = await self._predict(request)
        except _HTTPError as e:
            response = _error(e.status, e.message)
        except Exception as e:  # a server bug: answer 500 with the reason, keep serving
            _log.exception("predict failed")
            response = _error(500, f"internal error: {type(e).__name__}: {e}")
        self.metrics.requests[response.status_code] += 1
        self.metrics.latency.observe(time.perf_counter() - started)
        return response

    async def _predict(self, request):
        name = request.path_params["name"]
        if not self.ready:
            raise _HTTPError(503, "model is not ready yet" if self.load_error is None
                             else f"model failed to load: {self.load_error}")
        if name != self.name:
            raise _HTTPError(404, f"no model named {name!r}; this server serves {self.name!r}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s  # one budget: body upload, queueing and inference
        try:
            body = await asyncio.wait_for(_read_body(request, self.max_body_bytes), self.timeout_s)
        except asyncio.TimeoutError:
            raise _HTTPError(408, f"request body not received within {self.timeout_s:g} s (--timeout-s)") from None
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        specs = tuple(self.predictor.input_specs)

        def decode() -> list:
            return self._validate(_decode(body, content_type, specs, self.max_body_bytes, self.max_json_depth))

        if len(body) <= _INLINE_DECODE_BYTES:
            arrays = decode()
        else:
            arrays = await loop.run_in_executor(None, decode)
        job = self.batcher.submit(arrays)
        try:
            outputs = await asyncio.wait_for(job.future, max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            self.batcher.discard(job)
            raise _HTTPError(504, f"no result within {self.timeout_s:g} s (--timeout-s)") from None
        names = self.output_names()
        if len(names) != len(outputs):
            names = [f"output_{i}" for i in range(len(outputs))]
        return _encode(outputs, names, self.name, request.headers.get("accept", ""))

    def _validate(self, arrays: list) -> list:
        try:
            return list(self.predictor.check_inputs(*arrays))
        except ValueError as e:
            raise _HTTPError(400, str(e)) from None

    async def metadata(self, request):
        name = request.path_params["name"]
        if not self.ready:
            return _error(503, "model is not ready yet")
        if name != self.name:
            return _error(404, f"no model named {name!r}; this server serves {self.name!r}")
        from starlette.responses import JSONResponse

        specs = [{"name": s.name, "shape": list(s.shape), "dtype": np.dtype(s.dtype).name}
                 for s in self.predictor.input_specs]
        return JSONResponse({"name": self.name, "inputs": specs, "outputs": self.output_names(),
                             "output_dtypes": self.output_dtypes,
                             "batching": self.batcher.batching, "max_batch_size": self.max_batch_size})

    async def live(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "live"})

    async def ready_check(self, request):
        from starlette.responses import JSONResponse

        if self.ready:
            return JSONResponse({"status": "ready", "model": self.name})
        if self.load_error is not None:
            return _error(503, f"model failed to load: {self.load_error}")
        return _error(503, "loading and warming up the model")

    async def metrics_text(self, request):
        from starlette.responses import PlainTextResponse

        depth = len(self.batcher.queue) if self.batcher is not None else 0
        return PlainTextResponse(self.metrics.render(depth, self.ready),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")


def _error(status: int, message: str):
    from starlette.responses import JSONResponse

    return JSONResponse({"error": message}, status_code=status)


def _warm_up_inputs(specs, rows: int) -> list:
    arrays = []
    for s in specs:
        shape = tuple((rows if d == 0 else 1) if n is None else n for d, n in enumerate(s.shape))
        arrays.append(np.zeros(shape, np.dtype(s.dtype)))
    return arrays


def create_app(model, *, name: str | None = None, runtime: str = "xla",
               max_batch_size: int = DEFAULT_MAX_BATCH_SIZE, batch_timeout_ms: float = DEFAULT_BATCH_TIMEOUT_MS,
               max_queue: int = DEFAULT_MAX_QUEUE, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
               timeout_s: float = DEFAULT_TIMEOUT_S, max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
               on_load_error: Callable[[str], None] | None = None):
    """An ASGI app (starlette) serving one exported model over HTTP.

    The model loads and warms up in the background once the server starts;
    `/health/ready` answers 200 only after that. Requests queue and are run in
    batches along the leading dim when every input's leading dim is dynamic
    (`None` in its InputSpec); otherwise one at a time.

    Args:
      model: an artifact directory (loaded with `pdx.export.load(model, runtime=runtime)`)
        or an already loaded predictor. URLs are refused.
      name: the name in `/v1/models/{name}:predict`; default: the artifact's name.
      runtime: "xla" or "iree", for a directory.
      max_batch_size: most rows per executed batch; 1 turns batching off.
      batch_timeout_ms: how long the first request of a batch waits for more; 0 takes
        what queued while the previous batch ran (no added latency when idle).
      max_queue: most requests waiting; more are answered 503.
      max_body_bytes: largest request body (413 beyond, checked while reading).
      timeout_s: per-request limit from arrival to answer: a body not received by then
        is answered 408, a result not computed by then 504.
      max_json_depth: deepest JSON nesting accepted (400 beyond, checked before parsing).
      on_load_error: called with the reason if the model fails to load.

    Returns:
      A starlette application; run it with uvicorn (or use `serve`).

    Example:
      >>> import pdx
      >>> app = pdx.export.create_app("out/lenet", max_batch_size=16)  # doctest: +SKIP
      >>> import uvicorn; uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    reject_url(model)
    for arg, value, low in (("max_batch_size", max_batch_size, 1), ("max_queue", max_queue, 1),
                            ("max_body_bytes", max_body_bytes, 1), ("max_json_depth", max_json_depth, 1)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"create_app: {arg} must be an int >= {low}, got {value!r}")
    for arg, value, positive in (("batch_timeout_ms", batch_timeout_ms, False), ("timeout_s", timeout_s, True)):
        if not isinstance(value, (int, float)) or not (value > 0 if positive else value >= 0) or math.isinf(value):
            raise ValueError(f"create_app: {arg} must be a finite number {'>' if positive else '>='} 0, "
                             f"got {value!r}")
    if runtime not in ("xla", "iree"):
        raise ValueError(f"create_app: runtime must be 'xla' or 'iree', got {runtime!r}")
    service = _Service(model, name=name, runtime=runtime, max_batch_size=max_batch_size,
                       batch_timeout_ms=batch_timeout_ms, max_queue=max_queue, max_body_bytes=max_body_bytes,
                       timeout_s=timeout_s, max_json_depth=max_json_depth, on_load_error=on_load_error)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        await service.start()
        try:
            yield
        finally:
            await service.stop()

    routes = [
        Route("/v1/models/{name}:predict", service.predict, methods=["POST"]),
        Route("/v1/models/{name}", service.metadata, methods=["GET"]),
        Route("/health/live", service.live, methods=["GET"]),
        Route("/health/ready", service.ready_check, methods=["GET"]),
        Route("/metrics", service.metrics_text, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.service = service
    return app


@contextlib.contextmanager
def _stop_quietly():
    """Ctrl-C / SIGTERM end the server with exit code 0, not a KeyboardInterrupt traceback.

    uvicorn shuts down gracefully on these signals, then re-raises them to the
    handler that was installed before it started; that handler is this no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stops = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in stops}
    for s in stops:
        signal.signal(s, lambda signum, frame: None)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def serve(model, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, log_level: str = "info",
          ready_message: bool = True, **options) -> None:
    """Serve an exported artifact over HTTP until interrupted (the `pdx serve` command).

    Binds 127.0.0.1 unless told otherwise: the server has no authentication.
    Port 0 picks a free port; the address is printed once the socket is bound.

    Args:
      model: artifact directory or loaded predictor (see `create_app`).
      host: interface to bind; "0.0.0.0" exposes the server to the network.
      port: TCP port (0 = any free port).
      log_level: uvicorn's log level ("info", "warning", ...).
      ready_message: print "pdx serve: listening on http://HOST:PORT" when bound.
      **options: `create_app` keyword arguments (name, runtime, max_batch_size, ...).

    Raises:
      ValueError: on a URL or bad option. RuntimeError: when the model fails to load.

    Example:
      >>> import pdx
      >>> pdx.export.serve("out/lenet", port=8000, max_batch_size=16)  # doctest: +SKIP
    """
    import uvicorn

    failure: list[str] = []
    server: uvicorn.Server | None = None

    def on_load_error(reason: str) -> None:
        failure.append(reason)
        if server is not None:
            server.should_exit = True

    app = create_app(model, on_load_error=on_load_error, **options)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ValueError(f"pdx serve: cannot bind {host}:{port} ({e.strerror}); pick another --port") from None
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    if ready_message:
        where = f"[{host}]" if family == socket.AF_INET6 else host
        print(f"pdx serve: listening on http://{where}:{bound_port}", flush=True)
    try:
        with _stop_quietly():
            server.run(sockets=[sock])
    finally:
        sock.close()
    if failure:
        raise RuntimeError(f"pdx serve: cannot load the model: {failure[0]}")
