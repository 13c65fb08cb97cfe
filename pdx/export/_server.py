"""HTTP inference server for exported artifacts (`pdx serve`).

An ASGI app (starlette) that uvicorn runs. One model per server. Requests are
decoded and validated on the event loop (`_server_decode`), queued, gathered
into batches along the leading (dynamic) dim and run by one worker thread
(`_server_batching`), so the loop keeps answering health checks and rejecting
bad input while the model computes. `serve` runs the app on uvicorn with a
header timeout (`_server_http`) and a bounded graceful shutdown.

    POST /v1/models/{name}:predict   JSON or .npy/.npz body -> outputs
    GET  /v1/models/{name}           input/output names, shapes, dtypes
    GET  /health/live                200 while the process serves HTTP
    GET  /health/ready               200 once warmed up, while no model call is stuck
    GET  /metrics                    Prometheus text format
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import signal
import socket
import threading
import time
from typing import Any, Callable

import numpy as np

from pdx.export._server_batching import Batcher, DaemonPool, ModelWorker
from pdx.export._server_decode import ClientDisconnected, HTTPError, decode_body, encode, read_body
from pdx.export._server_metrics import Metrics

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
DEFAULT_MAX_REQUEST_ROWS = 4096
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_KEEP_ALIVE_S = 5.0
# On SIGTERM: how long requests in flight may take to finish before they are cancelled.
DEFAULT_GRACEFUL_TIMEOUT_S = 5.0

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
# Bodies larger than this are decoded on a helper thread, not on the event loop.
_INLINE_DECODE_BYTES = 256 * 1024


def reject_url(model: Any) -> None:
    """Raise ValueError when `model` is a URL: pdx serve only loads local artifacts."""
    if isinstance(model, str) and _URL_RE.match(model):
        raise ValueError(
            f"pdx serve: model path {model!r} is a URL; pdx never loads a model from the network. "
            "Download the artifact, check it, and pass its local directory.")


class _Service:
    """The model, its batcher and the server's state, shared by the route handlers."""

    def __init__(self, model, *, name, runtime, max_batch_size, batch_timeout_ms, max_queue,
                 max_body_bytes, timeout_s, max_json_depth, on_load_error, max_request_rows=DEFAULT_MAX_REQUEST_ROWS):
        self.source = model
        self.name = name
        self.runtime = runtime
        self.max_batch_size = max_batch_size
        self.batch_timeout_s = batch_timeout_ms / 1000.0
        self.max_queue = max_queue
        self.max_body_bytes = max_body_bytes
        self.timeout_s = timeout_s
        self.max_json_depth = max_json_depth
        self.max_request_rows = max_request_rows
        self.on_load_error = on_load_error
        self.predictor = None
        self.output_dtypes: list[str] = []
        self.warmed_up = False
        self.draining = False
        self.load_error: str | None = None
        self.batcher: Batcher | None = None
        self.metrics = Metrics(name or "", max_batch_size)
        self.worker: ModelWorker | None = None
        # large bodies are decoded (and texts tokenized) here, one at a time: memory stays bounded by one
        # request's budget, and a stuck decode never holds up the exit (daemon thread)
        self.decoder: DaemonPool | None = None
        self._startup: asyncio.Task | None = None

    # ---- lifecycle

    async def start(self) -> None:
        self.worker = ModelWorker()
        self.decoder = DaemonPool(1, name="pdx-serve-decode")
        self._startup = asyncio.get_running_loop().create_task(self._load_and_warm_up())

    async def stop(self) -> None:
        if self._startup is not None and not self._startup.done():
            self._startup.cancel()
        if self.batcher is not None:
            await self.batcher.stop()
        if self.worker is not None:
            self.worker.stop()  # a daemon thread: a hung model call does not hold up the exit
        if self.decoder is not None:
            self.decoder.stop()

    def begin_drain(self, grace_s: float) -> None:
        """Shutdown began: report not ready, and answer 503 to requests still waiting on the model
        shortly before `grace_s` runs out (uvicorn would cancel them, answering 500)."""
        self.draining = True

        def abort() -> None:
            if self.batcher is not None:
                self.batcher.abort(f"server is shutting down; the model did not answer within "
                                   f"--graceful-timeout-s {grace_s:g} s")

        asyncio.get_running_loop().call_later(grace_s - min(0.5, grace_s / 2), abort)

    async def _load_and_warm_up(self) -> None:
        try:
            if isinstance(self.source, (str, bytes)) or hasattr(self.source, "__fspath__"):
                from pdx.export import load

                self.predictor = await self.worker.run(lambda: load(self.source, runtime=self.runtime))
            else:
                self.predictor = self.source
            self.name = self.name or self.predictor.name
            self.metrics.model = self.name
            specs = tuple(self.predictor.input_specs)
            batching = all(len(s.shape) >= 1 and s.shape[0] is None for s in specs)
            self.batcher = Batcher(self._run, self.worker, self.metrics, batching=batching,
                                   max_batch_size=self.max_batch_size, batch_timeout_s=self.batch_timeout_s,
                                   max_queue=self.max_queue)
            started = time.perf_counter()
            await self._warm_up(specs)
            _log.info("model %r ready: %d input(s), batching %s, warm-up %.2fs over batch sizes %s",
                      self.name, len(specs), "on" if self.batcher.batching else "off",
                      time.perf_counter() - started, self.batcher.buckets())
            self.batcher.start()
            self.warmed_up = True
        except asyncio.CancelledError:
            raise
        except Exception as e:  # reported on /health/ready and to the caller's hook
            self.load_error = f"{type(e).__name__}: {e}"
            _log.error("pdx serve: cannot load the model: %s", self.load_error)
            if self.on_load_error is not None:
                self.on_load_error(self.load_error)

    async def _warm_up(self, specs) -> None:
        """Run every batch size the batcher will use once (compiles them), turning batching
        off if the model refuses batches or does not keep the batch dim in its outputs."""
        for rows in self.batcher.buckets():
            try:
                outputs = await self.worker.run(self._run, _warm_up_inputs(specs, rows))
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

    def not_ready(self) -> str | None:
        """Why `/health/ready` answers 503, or None when it answers 200."""
        if self.load_error is not None:
            return f"model failed to load: {self.load_error}"
        if self.draining:
            return "shutting down"
        if not self.warmed_up:
            return "loading and warming up the model"
        busy = self.worker.busy_for()
        if busy > self.timeout_s:
            return (f"the model worker has been running one call for {busy:.1f} s, over --timeout-s "
                    f"{self.timeout_s:g} s; requests wait until it returns")
        return None

    # ---- handlers

    async def predict(self, request):
        started = time.perf_counter()
        try:
            response = await self._predict(request)
        except HTTPError as e:
            response = _error(e.status, e.message)
        except ClientDisconnected as e:  # nobody to answer: counted apart from answered requests
            self.metrics.client_disconnects += 1
            _log.debug("predict: %s", e)
            return _error(400, str(e))
        except Exception as e:  # a server bug: answer 500 with the reason, keep serving
            _log.exception("predict failed")
            response = _error(500, f"internal error: {type(e).__name__}: {e}")
        self.metrics.requests[response.status_code] += 1
        self.metrics.latency.observe(time.perf_counter() - started)
        return response

    async def _predict(self, request):
        name = request.path_params["name"]
        if not self.warmed_up:
            raise HTTPError(503, "model is not ready yet" if self.load_error is None
                            else f"model failed to load: {self.load_error}")
        if name != self.name:
            raise HTTPError(404, f"no model named {name!r}; this server serves {self.name!r}")
        reason = self.not_ready()
        if reason is not None:
            raise HTTPError(503, reason)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s  # one budget: body upload, queueing and inference
        try:
            body = await asyncio.wait_for(read_body(request, self.max_body_bytes), self.timeout_s)
        except asyncio.TimeoutError:
            raise HTTPError(408, f"request body not received within {self.timeout_s:g} s (--timeout-s)") from None
        content_type = request.headers.get("content-type", "")

        def decode() -> list:
            return decode_body(body, content_type, self.predictor.input_specs, self.predictor.check_inputs,
                               max_body_bytes=self.max_body_bytes, max_json_depth=self.max_json_depth)

        if len(body) <= _INLINE_DECODE_BYTES:
            arrays = decode()
        else:
            decoding = self.decoder.run(decode)
            try:
                arrays = await asyncio.wait_for(decoding, max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                raise HTTPError(504, f"the body was not decoded within {self.timeout_s:g} s (--timeout-s)") from None
        rows = max((a.shape[0] for a in arrays if a.ndim), default=1)
        if rows > self.max_request_rows:
            raise HTTPError(413, f"the request has {rows} rows, over the limit of {self.max_request_rows} rows per "
                                 "request (--max-request-rows); send fewer per request")
        job = self.batcher.submit(arrays)
        try:
            outputs = await asyncio.wait_for(job.future, max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            self.batcher.discard(job)
            raise HTTPError(504, f"no result within {self.timeout_s:g} s (--timeout-s)") from None
        names = self.output_names()
        if len(names) != len(outputs):
            names = [f"output_{i}" for i in range(len(outputs))]
        return encode(outputs, names, self.name, request.headers.get("accept", ""))

    async def metadata(self, request):
        name = request.path_params["name"]
        if not self.warmed_up:
            return _error(503, "model is not ready yet")
        if name != self.name:
            return _error(404, f"no model named {name!r}; this server serves {self.name!r}")
        from starlette.responses import JSONResponse

        specs = [{"name": s.name, "shape": list(s.shape), "dtype": np.dtype(s.dtype).name}
                 for s in self.predictor.input_specs]
        return JSONResponse({"name": self.name, "inputs": specs, "outputs": self.output_names(),
                             "output_dtypes": self.output_dtypes, "batching": self.batcher.batching,
                             "batch_sizes": self.batcher.buckets(), "max_batch_size": self.max_batch_size})

    async def live(self, request):
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "live"})

    async def ready_check(self, request):
        from starlette.responses import JSONResponse

        reason = self.not_ready()
        if reason is not None:
            return _error(503, reason)
        return JSONResponse({"status": "ready", "model": self.name})

    async def metrics_text(self, request):
        from starlette.responses import PlainTextResponse

        depth = len(self.batcher.queue) if self.batcher is not None else 0
        return PlainTextResponse(self.metrics.render(depth, self.not_ready() is None),
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
               on_load_error: Callable[[str], None] | None = None, max_request_rows: int = DEFAULT_MAX_REQUEST_ROWS):
    """An ASGI app (starlette) serving one exported model over HTTP.

    The model loads and warms up in the background once the server starts;
    `/health/ready` answers 200 only after that, and 503 again while a model
    call has run longer than `timeout_s`. Requests queue and are run in
    batches along the leading dim when every input's leading dim is dynamic
    (`None` in its InputSpec); otherwise one at a time.

    Args:
      model: an artifact directory (loaded with `pdx.export.load(model, runtime=runtime)`)
        or an already loaded predictor. URLs are refused.
      name: the name in `/v1/models/{name}:predict`; default: the artifact's name.
      runtime: "xla" or "iree", for a directory.
      max_batch_size: most rows per executed batch (larger requests run in chunks);
        1 runs one row per model call.
      batch_timeout_ms: how long the first request of a batch waits for more; 0 takes
        what queued while the previous batch ran (no added latency when idle).
      max_queue: most requests waiting; more are answered 503.
      max_body_bytes: largest request body (413 beyond, checked while reading).
      timeout_s: per-request limit from arrival to answer: a body not received by then
        is answered 408, a result not computed by then 504. A model call running
        longer marks the server not ready.
      max_json_depth: deepest JSON nesting accepted (400 beyond, checked before parsing).
      max_request_rows: most rows (leading-dim entries, or texts) per request (413 beyond, checked
        before the request is queued); a request that times out stops computing at its next chunk.
      on_load_error: called with the reason if the model fails to load.

    Returns:
      A starlette application; run it with `serve`, or with uvicorn directly
      (then without `serve`'s header timeout).

    Example:
      >>> import pdx
      >>> app = pdx.export.create_app("out/lenet", max_batch_size=16)  # doctest: +SKIP
      >>> import uvicorn; uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    from starlette.applications import Starlette
    from starlette.routing import Route

    reject_url(model)
    for arg, value, low in (("max_batch_size", max_batch_size, 1), ("max_queue", max_queue, 1),
                            ("max_body_bytes", max_body_bytes, 1), ("max_json_depth", max_json_depth, 1),
                            ("max_request_rows", max_request_rows, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"create_app: {arg} must be an int >= {low}, got {value!r}")
    _check_seconds("create_app", batch_timeout_ms=(batch_timeout_ms, False), timeout_s=(timeout_s, True))
    if runtime not in ("xla", "iree"):
        raise ValueError(f"create_app: runtime must be 'xla' or 'iree', got {runtime!r}")
    service = _Service(model, name=name, runtime=runtime, max_batch_size=max_batch_size,
                       batch_timeout_ms=batch_timeout_ms, max_queue=max_queue, max_body_bytes=max_body_bytes,
                       timeout_s=timeout_s, max_json_depth=max_json_depth, on_load_error=on_load_error,
                       max_request_rows=max_request_rows)

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


def _check_seconds(fn: str, **values) -> None:
    for arg, (value, positive) in values.items():
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or math.isinf(value)
                or not (value > 0 if positive else value >= 0)):
            raise ValueError(f"{fn}: {arg} must be a finite number {'>' if positive else '>='} 0, got {value!r}")


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
          ready_message: bool = True, header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
          keep_alive_s: float = DEFAULT_KEEP_ALIVE_S, graceful_timeout_s: float = DEFAULT_GRACEFUL_TIMEOUT_S,
          **options) -> None:
    """Serve an exported artifact over HTTP until interrupted (the `pdx serve` command).

    Binds 127.0.0.1 unless told otherwise: the server has no authentication.
    Port 0 picks a free port; the address is printed once the socket is bound.
    SIGTERM / Ctrl-C stop accepting connections, let requests in flight finish
    for up to `graceful_timeout_s`, then exit (also when a model call hangs).

    Args:
      model: artifact directory or loaded predictor (see `create_app`).
      host: interface to bind; "0.0.0.0" exposes the server to the network.
      port: TCP port (0 = any free port).
      log_level: uvicorn's log level ("info", "warning", ...).
      ready_message: print "pdx serve: listening on http://HOST:PORT" when bound.
      header_timeout_s: a connection must send a complete request head within this
        many seconds of opening (of its previous response: keep_alive_s more); else it is closed.
      keep_alive_s: an idle kept-alive connection is closed after this many seconds.
      graceful_timeout_s: on shutdown, the most time requests in flight get to finish.
      **options: `create_app` keyword arguments (name, runtime, max_batch_size, ...).

    Raises:
      ValueError: on a URL or bad option. RuntimeError: when the model fails to load.

    Example:
      >>> import pdx
      >>> pdx.export.serve("out/lenet", port=8000, max_batch_size=16)  # doctest: +SKIP
    """
    _check_seconds("serve", header_timeout_s=(header_timeout_s, True), keep_alive_s=(keep_alive_s, True),
                   graceful_timeout_s=(graceful_timeout_s, False))
    failure: list[str] = []
    server = None

    def on_load_error(reason: str) -> None:
        failure.append(reason)
        if server is not None:
            server.should_exit = True

    app = create_app(model, on_load_error=on_load_error, **options)

    def made(uvicorn_server):
        nonlocal server
        server = uvicorn_server

    run_app(app, host=host, port=port, log_level=log_level, ready_message=ready_message,
            header_timeout_s=header_timeout_s, keep_alive_s=keep_alive_s, graceful_timeout_s=graceful_timeout_s,
            on_server=made)
    if failure:
        raise RuntimeError(f"pdx serve: cannot load the model: {failure[0]}")


def run_app(app, *, host: str, port: int, log_level: str, ready_message: bool, header_timeout_s: float,
            keep_alive_s: float, graceful_timeout_s: float, on_server=None) -> None:
    """Bind host:port and run `app` (whose `app.state.service` has `begin_drain`) on uvicorn until stopped.

    The connection limits and the draining shutdown of `serve`; shared by `pdx serve` and `pdx serve --llm`.
    `on_server(uvicorn_server)` is called before it starts.
    """
    import uvicorn

    from pdx.export._server_http import draining_server, header_timeout_protocol

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ValueError(f"pdx serve: cannot bind {host}:{port} ({e.strerror}); pick another --port") from None
    bound_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on",
                            http=header_timeout_protocol(header_timeout_s, keep_alive_s), timeout_keep_alive=keep_alive_s,
                            timeout_graceful_shutdown=graceful_timeout_s)
    server = draining_server(config, on_shutdown=lambda: app.state.service.begin_drain(graceful_timeout_s))
    if on_server is not None:
        on_server(server)
    if ready_message:
        where = f"[{host}]" if family == socket.AF_INET6 else host
        print(f"pdx serve: listening on http://{where}:{bound_port}", flush=True)
    try:
        with _stop_quietly():
            server.run(sockets=[sock])
    finally:
        sock.close()
