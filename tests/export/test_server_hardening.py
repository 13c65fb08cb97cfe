"""`pdx serve` under hostile or unlucky clients: bodies in other encodings, corrupt
.npz/.npy, clients that vanish mid-body, oversized batches, a hung model, slowloris
connections. Real uvicorn servers on loopback in subprocesses (started with
`pdx.export.serve`, stopped with SIGTERM); the numpy forward pass of the same
weights is the reference. The body decoder is also fuzzed without HTTP."""

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdx._safefile import json_depth
from pdx.export import Client, ServerError
from pdx.export._server_decode import HTTPError, decode_body
from pdx.export._validate import Signature, check_arrays
from pdx.jit import InputSpec

LIMIT = 1_000_000
HEADER_TIMEOUT_S = 1.0
KEEP_ALIVE_S = 1.0
SLOW, HANG = 777.0, 4242.0  # marker values: a row holding one makes the model call slow / hang
URL_RE = re.compile(r"listening on (http://\S+)")

# The served predictor, wrapped so that marker rows make a call slow or never return.
SERVER_SCRIPT = r"""
import json, sys, threading, time
import pdx.export

path, options = sys.argv[1], json.loads(sys.argv[2])
inner = pdx.export.load(path)


class Marked:
    name, input_specs, output_names = inner.name, inner.input_specs, inner.output_names
    check_inputs = staticmethod(inner.check_inputs)

    def __call__(self, x):
        if (x == %r).any():
            time.sleep(1.5)
        if (x == %r).any():
            threading.Event().wait()
        return inner(x)


pdx.export.serve(Marked(), port=0, log_level="warning", **options)
""" % (SLOW, HANG)


# --------------------------------------------------------------------------- helpers


class _Server:
    """`pdx.export.serve` in a subprocess, its log, and its address."""

    def __init__(self, path, log_path, **options):
        self.log = open(log_path, "w+")
        # every compile logged, none served from a persistent cache: the count is exact
        env = dict(os.environ, PYTHONUNBUFFERED="1", JAX_LOG_COMPILES="1", JAX_ENABLE_COMPILATION_CACHE="false")
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER_SCRIPT, str(path), json.dumps(options)],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 120
        while not (match := URL_RE.search(self.text())):
            assert self.proc.poll() is None, f"server exited with {self.proc.returncode}:\n{self.text()}"
            assert time.monotonic() < deadline, "server did not print its address"
            time.sleep(0.05)
        self.url = match.group(1)
        self.host, self.port = "127.0.0.1", int(self.url.rsplit(":", 1)[1])
        self.client = Client(self.url)
        self.client.wait_ready(120)

    def text(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024

    def compiles(self) -> int:
        return self.text().count("Finished XLA compilation")

    def stop(self, timeout=30.0) -> tuple[int, float]:
        """SIGTERM; returns (exit code, seconds to exit)."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        elapsed = time.monotonic() - started
        self.client.close()
        self.output = self.text()
        self.log.close()
        return code, elapsed


@pytest.fixture(scope="module")
def server(model, tmp_path_factory):
    path, _ = model
    srv = _Server(path, tmp_path_factory.mktemp("logs") / "serve.log", max_batch_size=16, max_body_bytes=LIMIT,
                  timeout_s=10.0, header_timeout_s=HEADER_TIMEOUT_S, keep_alive_s=KEEP_ALIVE_S,
                  graceful_timeout_s=3.0)
    yield srv
    if srv.proc.poll() is None:
        code, _ = srv.stop()
        assert code == 0


def _post(srv, body: bytes, content_type="application/json", headers=()):
    import http.client

    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=60)
    try:
        conn.request("POST", "/v1/models/mlp:predict", body=body, headers={"Content-Type": content_type, **dict(headers)})
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    return response.status, json.loads(data) if response.getheader("content-type", "").startswith(
        "application/json") else data


def _metric(text: str, name: str, **labels) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise KeyError(f"{name} {labels} not in metrics")


def _npy(array=None, header=None, data=None) -> bytes:
    buf = io.BytesIO()
    if header is None:
        np.save(buf, array, allow_pickle=False)
        return buf.getvalue()
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def _npz(members: dict, compression=zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, array in members.items():
            zf.writestr(name + ".npy", _npy(array))
    return buf.getvalue()


def _encrypted_flag(body: bytes) -> bytes:
    data = bytearray(body)
    for sig, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(sig) + offset
        data[at] |= 0x1
    return bytes(data)


def _bad_deflate(array) -> bytes:
    data = bytearray(_npz({"x": array}, zipfile.ZIP_DEFLATED))
    start = data.index(b"PK\x03\x04") + 30 + len("x.npy")
    data[start:start + 8] = b"\xff" * 8  # reserved block type 3: zlib.error
    return bytes(data)


def _deep_json(depth: int, x) -> str:
    """A valid request whose extra field nests `depth` levels between two U+2200 strings: in UTF-16/32
    that character holds a 0x22 byte, so a scan of the raw bytes sees the brackets inside a string."""
    return '{"a": "\u2200", "note": %s, "c": "\u2200", "inputs": {"x": %s}}' % (
        "[" * depth + "]" * depth, json.dumps(x.tolist()))


def _crafted_bodies(x) -> list[tuple[str, bytes, str, str]]:
    """(case, body, content type, regex found in the 400 message)."""
    cases = []
    for depth in (500, 900):
        text = _deep_json(depth, x)
        for enc in ("utf-16-le", "utf-16", "utf-32", "utf-16-be"):
            # undeclared: read as UTF-8, so refused as not UTF-8 or (NULs between ASCII) as too deep
            cases.append((f"{enc} {depth} deep", text.encode(enc), "application/json", "UTF-8|depth"))
        cases.append((f"declared utf-16 {depth} deep", text.encode("utf-16"), "application/json; charset=utf-16",
                      "depth"))
        cases.append((f"utf-8 {depth} deep", text.encode(), "application/json", "depth"))
    f4 = np.ones((2, 16), np.float32)
    npy_header = {"descr": "<f4", "fortran_order": False}
    cases += [
        ("bad deflate", _bad_deflate(f4), "application/x-npz", "npz"),
        ("bzip2 member", _npz({"x": f4}, zipfile.ZIP_BZIP2), "application/x-npz", "compression method 12"),
        ("lzma member", _npz({"x": f4}, zipfile.ZIP_LZMA), "application/x-npz", "compression method 14"),
        ("encrypted flag", _encrypted_flag(_npz({"x": f4})), "application/x-npz", "encrypted"),
        ("truncated npz", _npz({"x": f4})[:-30], "application/x-npz", "npz"),
        ("garbage after a local header", _npz({"x": f4})[:10] + b"garbage", "application/x-npz", "npz"),
        ("shape (True, 16)", _npy(header=dict(npy_header, shape=(True, 16)), data=f4[:1].tobytes()),
         "application/x-npy", "shape"),
        ("negative dims", _npy(header=dict(npy_header, shape=(-1, -16)), data=f4[:1].tobytes()),
         "application/x-npy", "shape"),
        ("float dims", _npy(header=dict(npy_header, shape=(1.0, 16)), data=f4[:1].tobytes()),
         "application/x-npy", "npy"),
        ("huge dims", _npy(header=dict(npy_header, shape=(2 ** 40, 2 ** 40)), data=f4.tobytes()),
         "application/x-npy", "data bytes"),
        ("fortran_order 1", _npy(header=dict(npy_header, fortran_order=1, shape=(1, 16)), data=f4[:1].tobytes()),
         "application/x-npy", "npy"),
        ("object dtype", _npy(header={"descr": "|O", "fortran_order": False, "shape": (1, 16)}, data=b"\x80" * 64),
         "application/x-npy", "numeric"),
        ("structured dtype", _npy(header={"descr": [("a", "<f4")], "fortran_order": False, "shape": (1, 16)},
                                  data=f4[:1].tobytes()), "application/x-npy", "numeric"),
        ("complex dtype", _npy(np.ones((1, 16), np.complex64)), "application/x-npy", "numeric"),
        ("header not a dict", b"\x93NUMPY\x01\x00\x10\x00" + b"[1, 2, 3]      \n", "application/x-npy", "npy"),
        ("version 3.0", b"\x93NUMPY\x03\x00" + _npy(f4)[8:], "application/x-npy", "version"),
        ("npz member with shape (True, 16)", _npz_raw({"x.npy": _npy(header=dict(npy_header, shape=(True, 16)),
                                                                    data=f4[:1].tobytes())}),
         "application/x-npz", "shape"),
    ]
    return cases


def _npz_raw(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


# --------------------------------------------------------------------------- the decoder, without HTTP

SPECS = (InputSpec([None, 16], "float32", "x"),)
SIG = Signature([{"name": "x", "dtype": "float32", "shape": ["batch", 16]}])


def _check(*arrays):
    return check_arrays(SIG, arrays, fn="mlp", convert=True)


def _decode(body: bytes, content_type: str):
    return decode_body(body, content_type, SPECS, _check, max_body_bytes=LIMIT, max_json_depth=64)


def _reference_depth(text: str) -> int:
    depth = best = 0
    in_str = escape = False
    for ch in text:
        if in_str:
            escape, in_str = (False, True) if escape else (ch == "\\", ch != '"')
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            best = max(best, depth)
        elif ch in "]}":
            depth -= 1
    return best


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='[]{}"\\ a1,:\n', max_size=60))
def test_json_depth_matches_a_character_loop(text):
    assert json_depth(text) == _reference_depth(text)


def test_crafted_bodies_are_400_without_http():
    x = np.ones((1, 16), np.float32)
    for case, body, content_type, fragment in _crafted_bodies(x):
        with pytest.raises(HTTPError) as e:
            _decode(body, content_type)
        assert e.value.status == 400 and re.search(fragment, e.value.message), (case, e.value.message)
    text = '{"inputs": {"x": %s}}' % json.dumps(x.tolist())
    for content_type, body in (("application/json; charset=utf-16", text.encode("utf-16")),
                               ("application/json; charset=UTF-32LE", text.encode("utf-32-le")),
                               ("application/json", b"\xef\xbb\xbf" + text.encode())):  # UTF-8 BOM
        np.testing.assert_array_equal(_decode(body, content_type)[0], x)
    with pytest.raises(HTTPError) as e:
        _decode(text.encode("latin-1"), "application/json; charset=latin-1")
    assert e.value.status == 415 and "UTF-8" in e.value.message


def _valid_bodies():
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    return [(b'{"inputs": {"x": %s}}' % json.dumps(x.tolist()).encode(), "application/json"),
            (_npy(x), "application/x-npy"), (_npy(x.astype(">f4")), "application/x-npy"),
            (_npz({"x": x}), "application/x-npz"), (_npz({"x": x}, zipfile.ZIP_DEFLATED), "application/x-npz")]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_decoder_fuzz_answers_arrays_or_400(data):
    """Random bytes, and valid bodies with bytes flipped, cut or inserted: arrays or a 4xx, nothing else."""
    kind = data.draw(st.sampled_from(["random", "mutated"]))
    if kind == "random":
        body = data.draw(st.binary(max_size=300))
        content_type = data.draw(st.sampled_from(["application/json", "application/x-npy", "application/x-npz",
                                                  "application/json; charset=utf-16"]))
    else:
        body, content_type = data.draw(st.sampled_from(_valid_bodies()))
        body = bytearray(body)
        for _ in range(data.draw(st.integers(1, 6))):
            at = data.draw(st.integers(0, len(body) - 1))
            op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
            if op == "flip":
                body[at] = data.draw(st.integers(0, 255))
            elif op == "cut":
                del body[at:at + data.draw(st.integers(1, 64))]
            else:
                body[at:at] = data.draw(st.binary(min_size=1, max_size=16))
            if not body:
                body = bytearray(b"\x00")
        body = bytes(body)
    try:
        arrays = _decode(body, content_type)
    except HTTPError as e:
        assert e.status in (400, 413), (e.status, e.message)
        return
    assert len(arrays) == 1 and arrays[0].dtype == np.float32 and arrays[0].ndim == 2 and arrays[0].shape[1] == 16


def test_batcher_runs_only_warm_up_sizes_and_survives_batching_turning_off():
    """Without HTTP: a rowwise model sees only batch_sizes(max) rows per call, however big the
    requests; a model that reduces over rows turns batching off, and requests queued with
    batch keys before that still run (alone, at their own shapes)."""
    import asyncio

    from pdx.export._server_batching import Batcher, ModelWorker
    from pdx.export._server_metrics import Metrics, batch_sizes

    async def run(fn, jobs, max_batch_size):
        seen = []

        def model(inputs):
            seen.append(inputs[0].shape[0])
            return fn(inputs[0])

        worker = ModelWorker()
        batcher = Batcher(model, worker, Metrics("m", max_batch_size), batching=True,
                          max_batch_size=max_batch_size, batch_timeout_s=0.0, max_queue=64)
        submitted = [batcher.submit([x]) for x in jobs]  # all queued before the loop starts
        batcher.start()
        try:
            outputs = await asyncio.wait_for(asyncio.gather(*(j.future for j in submitted)), 30)
        finally:
            await batcher.stop()
            worker.stop()
        return [o[0] for o in outputs], seen, batcher.batching

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (1, 40, 3, 7, 2, 19)]
    outputs, seen, batching = asyncio.run(run(lambda x: [x * 2.0], xs, 8))
    assert batching and set(seen) <= set(batch_sizes(8)), seen
    for x, y in zip(xs, outputs):
        np.testing.assert_array_equal(y, x * 2.0)

    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    outputs, seen, batching = asyncio.run(run(lambda x: [x.sum(axis=0, keepdims=True)], xs, 2))
    assert not batching
    for x, y in zip(xs, outputs):
        np.testing.assert_allclose(y, x.sum(axis=0, keepdims=True), rtol=1e-6)


# --------------------------------------------------------------------------- over HTTP


def test_crafted_bodies_are_400_over_http(server, model):
    _, reference = model
    x = np.full((1, 16), 0.25, np.float32)
    for case, body, content_type, fragment in _crafted_bodies(x):
        status, answer = _post(server, body, content_type)
        assert status == 400 and re.search(fragment, answer["error"]), (case, status, answer)
    # the same request as UTF-16 with its charset declared, shallow: honoured
    status, answer = _post(server, _deep_json(3, x).encode("utf-16"), "application/json; charset=utf-16")
    assert status == 200
    np.testing.assert_allclose(answer["outputs"]["output"], reference(x), rtol=1e-5, atol=1e-5)
    text = server.client.metrics()
    assert 'code="500"' not in text and "Traceback" not in server.text()


def test_client_disconnects_are_not_5xx(server):
    before = _metric(server.client.metrics(), "pdx_serve_client_disconnects_total")
    for _ in range(20):
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 1000\r\n\r\n{\"inputs\": [[")
            time.sleep(0.02)
    deadline = time.monotonic() + 10
    while _metric(text := server.client.metrics(), "pdx_serve_client_disconnects_total") < before + 20:
        assert time.monotonic() < deadline, text
        time.sleep(0.05)
    assert _metric(text, "pdx_serve_client_disconnects_total") == before + 20
    assert 'code="500"' not in text
    assert "Traceback" not in server.text() and "ClientDisconnect" not in server.text()
    assert server.client.ready()


def test_oversize_batches_run_in_warm_up_chunks(server, model, rng):
    """150 distinct row counts over max_batch_size=16: no compile after warm-up, bounded RSS."""
    _, reference = model
    client = server.client
    for rows in (300, 301, 302):  # the first big bodies settle the allocator
        client.predict("mlp", np.ones((rows, 16), np.float32), binary=True)
    compiles, rss = server.compiles(), server.rss_mb()
    assert compiles > 0, "JAX_LOG_COMPILES logged no warm-up compile; the count below would prove nothing"
    for rows in range(17, 167):
        x = rng.standard_normal((rows, 16)).astype(np.float32)
        y = client.predict("mlp", x, binary=True)
        np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-5)
    growth = server.rss_mb() - rss
    print(f"\n150 oversize batch sizes: RSS {rss:.0f} -> {rss + growth:.0f} MB, "
          f"{server.compiles() - compiles} compiles after warm-up")
    assert server.compiles() == compiles
    assert growth < 50, f"RSS grew {growth:.0f} MB"
    text = client.metrics()
    assert _metric(text, "pdx_serve_batch_size_bucket", le="16.0") == _metric(text, "pdx_serve_batch_size_count")


def test_slow_and_idle_connections_are_closed_after_the_header_timeout(server):
    from pdx.export import _server_http
    from uvicorn.protocols.http.h11_impl import H11Protocol

    for cls, names in _server_http.UVICORN_NAMES:  # the uvicorn internals pdx serve relies on
        for name in names:
            assert callable(getattr(cls, name, None)), (cls, name)
    assert _server_http.UVICORN_NAMES[0][0] is H11Protocol

    def closed_after(send) -> float:
        with socket.create_connection((server.host, server.port), timeout=10) as sock:
            started = time.monotonic()
            send(sock)
            sock.settimeout(0.25)
            while True:
                try:
                    if sock.recv(1024) == b"":
                        return time.monotonic() - started
                except ConnectionResetError:
                    return time.monotonic() - started
                except socket.timeout:
                    assert time.monotonic() - started < 10, "the server never closed the connection"
                    send_more = getattr(send, "more", None)
                    if send_more:
                        send_more(sock)

    def partial_head(sock):
        sock.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n")

    def trickle(sock):
        sock.sendall(b"GET /health/live HTTP/1.1\r\n")

    def answered_then_trickle(sock):
        sock.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        trickle(sock)

    trickle.more = answered_then_trickle.more = lambda sock: sock.sendall(b"X")  # a byte every 0.25 s
    times = [closed_after(f) for f in (partial_head, trickle, lambda sock: None)]
    after_response = closed_after(answered_then_trickle)
    print(f"\nslow connections closed after {', '.join(f'{t:.2f}' for t in times)} s "
          f"(header timeout {HEADER_TIMEOUT_S} s), after a response {after_response:.2f} s "
          f"(keep-alive {KEEP_ALIVE_S} s + header timeout)")
    assert all(HEADER_TIMEOUT_S * 0.8 < t < HEADER_TIMEOUT_S + 2 for t in times), times
    assert (KEEP_ALIVE_S + HEADER_TIMEOUT_S) * 0.8 < after_response < KEEP_ALIVE_S + HEADER_TIMEOUT_S + 2

    # a kept-alive connection that answers within the timeout keeps working across requests
    with Client(server.url) as client:
        for _ in range(3):
            assert client.live()
            time.sleep(HEADER_TIMEOUT_S / 3)


def test_sigterm_drains_requests_in_flight_and_exits_despite_a_hung_call(server, model):
    """Runs last on the shared server: SIGTERM while a slow call computes and a call that will hang
    waits behind it. The slow one is answered, the hung one gets 503 before the grace period ends."""
    _, reference = model
    slow, hang = np.full((2, 16), SLOW, np.float32), np.full((1, 16), HANG, np.float32)
    result = {}

    def call(key, x):
        try:
            result[key] = Client(server.url).predict("mlp", x, binary=True)
        except ServerError as e:
            result[key] = (e.status_code, e.message)

    threads = [threading.Thread(target=call, args=("slow", slow)), threading.Thread(target=call, args=("hang", hang))]
    threads[0].start()
    time.sleep(0.3)  # the slow request is inside its 1.5 s model call; the other queues behind it
    threads[1].start()
    time.sleep(0.2)
    code, elapsed = server.stop()
    for t in threads:
        t.join(30)
    print(f"\nSIGTERM with a slow and a hung request in flight: exit {code} after {elapsed:.2f} s")
    assert code == 0 and elapsed < 10
    np.testing.assert_allclose(result["slow"], reference(slow), rtol=1e-5, atol=1e-5)
    assert result["hang"][0] == 503 and "shutting down" in result["hang"][1], result["hang"]
    assert "Traceback" not in server.output and "Exception in ASGI" not in server.output, server.output


def test_hung_model_call_marks_not_ready_and_sigterm_still_exits(model, tmp_path):
    path, reference = model
    srv = _Server(path, tmp_path / "hung.log", max_batch_size=4, timeout_s=2.0, graceful_timeout_s=5.0)
    try:
        client = srv.client
        hung = {}

        def call():
            try:
                client.predict("mlp", np.full((1, 16), HANG, np.float32))
            except ServerError as e:
                hung["status"] = e.status_code

        thread = threading.Thread(target=call)
        thread.start()
        thread.join(10)
        assert hung == {"status": 504}
        deadline = time.monotonic() + 10
        while client.ready():
            assert time.monotonic() < deadline, "ready stayed 200 while the model call hung"
            time.sleep(0.1)
        assert _metric(client.metrics(), "pdx_serve_ready") == 0
        with pytest.raises(ServerError) as e:
            Client(srv.url).predict("mlp", np.ones((1, 16), np.float32))
        assert e.value.status_code == 503 and "running one call" in e.value.message
    finally:
        code, elapsed = srv.stop()
    print(f"\nSIGTERM with a hung model call: exit {code} after {elapsed:.2f} s")
    assert code == 0 and elapsed < 10
    assert "Traceback" not in srv.output, srv.output


# --------------------------------------------------------------------------- raw strings (--tokenizer)


class _Classifier:
    """An artifact-like predictor over (batch, 8) token ids: a table lookup (NaN past the table, as an
    unchecked gather gives), 0.1 s per call when a row starts with SLOW_ID; counts its calls."""

    SLOW_ID, VOCAB = 5, 300
    name, output_names = "cls", ("logits",)
    input_specs = (InputSpec([None, 8], "int32", "ids"),)

    def __init__(self):
        self.table = np.random.default_rng(0).standard_normal((self.VOCAB, 4)).astype(np.float32)
        self.calls = 0

    def check_inputs(self, ids):
        ids = np.asarray(ids)
        if ids.ndim != 2 or ids.shape[1] != 8 or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"ids must be (batch, 8) integers, got {ids.shape} {ids.dtype}")
        return [ids.astype(np.int32)]

    def __call__(self, ids):
        self.calls += 1
        if (ids[:, 0] == self.SLOW_ID).any():
            time.sleep(0.1)
        inside = (ids >= 0) & (ids < self.VOCAB)
        rows = self.table[np.clip(ids, 0, self.VOCAB - 1)].sum(1)
        return np.where(inside.all(1, keepdims=True), rows, np.nan).astype(np.float32)


def test_raw_strings_are_budgeted_ids_checked_and_abandoned_batches_stop():
    import httpx
    import uvicorn

    from pdx import text
    from pdx.export import create_app
    from pdx.export._text import TextPredictor

    tok = text.train_bpe(text.bundled_corpus()[:20], vocab_size=_Classifier.VOCAB)
    tok._backend.enable_padding(length=8, pad_id=3, pad_token="<pad>")
    tok._backend.enable_truncation(8)
    model = _Classifier()
    with pytest.raises(ValueError, match="320 ids but the model's vocabulary has 300"):
        TextPredictor(model, text.train_bpe(text.bundled_corpus()[:20], vocab_size=320), vocab_size=300)
    app = create_app(TextPredictor(model, tok, max_texts=1000, max_text_bytes=4096), max_batch_size=16,
                     max_body_bytes=32 << 20, timeout_s=1.0, max_request_rows=5000)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/models/cls:predict"
    try:
        Client(url.split("/v1/")[0]).wait_ready(60)
        with httpx.Client(timeout=30) as client:
            ok = client.post(url, json={"inputs": [["a short text", "another"]]})
            assert ok.status_code == 200 and np.isfinite(ok.json()["outputs"]["logits"]).all(), ok.text

            def post(raw: bytes):
                return client.post(url, content=raw, headers={"content-type": "application/json"})

            start = time.perf_counter()
            huge = post(json.dumps({"inputs": [["x" * (10 << 20)]]}).encode())  # 10 MiB: refused untokenized
            many = post(b'{"inputs": [[' + b",".join([b'""'] * 1_000_000) + b"]]}")  # a million empty strings
            took = time.perf_counter() - start
            assert huge.status_code == 413 and "4096 bytes" in huge.json()["error"], huge.text
            assert many.status_code == 413 and "1000000 rows" in many.json()["error"], many.text
            assert took < 5.0, took
            for ids, needle in (([[1] * 7 + [300]], "token id 300"), ([[1] * 7 + [-2]], "token id -2")):
                r = client.post(url, json={"inputs": [ids]})
                assert r.status_code == 400 and needle in r.json()["error"] and "300" in r.json()["error"], r.text
            r = post(b'{"inputs": [["fine", "\\ud800"]]}')
            assert r.status_code == 400 and "Unicode" in r.json()["error"], r.text

            # 960 slow rows: 504 after timeout_s, and the worker stops at its next chunk (not 60 chunks later)
            calls = model.calls
            start = time.perf_counter()
            slow = client.post(url, json={"inputs": [[[_Classifier.SLOW_ID] * 8] * 960]})
            assert slow.status_code == 504, slow.text
            small = client.post(url, json={"inputs": [["quick"]]})
            waited = time.perf_counter() - start
            assert small.status_code == 200 and waited < 2.5, (small.status_code, waited)
            assert model.calls - calls < 30, model.calls - calls
    finally:
        server.should_exit = True
        thread.join(10)
