"""`pdx serve` over real HTTP on loopback: a uvicorn server in a subprocess
(started with the `pdx serve` command) or in a thread, an exported artifact,
and the numpy forward pass of the same weights as the reference."""

import concurrent.futures
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

import numpy as np
import pytest

import pdx
from pdx.export import Client, ServerError, create_app, export, load
from pdx.jit import InputSpec

LIMIT = 1_000_000  # --max-body-bytes of the subprocess server
URL_RE = re.compile(r"listening on (http://\S+)")


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(model):
    """`pdx serve` in a subprocess on a free loopback port; stopped with SIGTERM."""
    path, _ = model
    log = open(path.parent / "serve.log", "w+")
    cmd = [sys.executable, "-m", "pdx.cli", "serve", str(path), "--port", "0", "--max-batch-size", "16",
           "--batch-timeout-ms", "2", "--max-queue", "1024", "--max-body-bytes", str(LIMIT),
           "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        url = _wait_for_url(proc, log)
        assert url.startswith("http://127.0.0.1:"), url  # loopback unless --host says otherwise
        client = Client(url)
        client.wait_ready(timeout=120)
        yield url, client
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.seek(0)
        output = log.read()
        log.close()
    assert code == 0, f"pdx serve exited with {code}:\n{output}"


def _wait_for_url(proc, log, timeout=120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        match = URL_RE.search(text)
        if match:
            return match.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"pdx serve exited with {proc.returncode}:\n{text}")
        time.sleep(0.05)
    raise TimeoutError("pdx serve did not print its address")


def _post(url, body: bytes, content_type="application/json", name="mlp", headers=()):
    """One raw POST with http.client; returns (status, parsed JSON or raw bytes)."""
    import http.client
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request("POST", f"/v1/models/{name}:predict", body=body,
                     headers={"Content-Type": content_type, **dict(headers)})
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    if response.getheader("content-type", "").startswith("application/json"):
        return response.status, json.loads(data)
    return response.status, data


def _metric(text: str, name: str, **labels) -> float:
    """Value of one sample in Prometheus text, parsed by prometheus_client (an independent parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise KeyError(f"{name} {labels} not in metrics")


# --------------------------------------------------------------------------- subprocess server


def test_2000_requests_at_concurrency_32(server, model, rng):
    url, client = server
    _, reference = model
    xs = [rng.standard_normal((int(rng.integers(1, 4)), 16)).astype(np.float32) for _ in range(2000)]

    def one(x):
        start = time.perf_counter()
        y = client.predict("mlp", x)
        return time.perf_counter() - start, y

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        results = list(pool.map(one, xs))
    latencies = np.array([t for t, _ in results]) * 1000
    print(f"\n2000 requests, concurrency 32: p50 {np.percentile(latencies, 50):.2f} ms, "
          f"p99 {np.percentile(latencies, 99):.2f} ms")
    for x, (_, y) in zip(xs, results):
        assert y.dtype == np.float32 and y.shape == (x.shape[0], 4)
        np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-5)

    text = client.metrics()
    assert _metric(text, "pdx_serve_requests_total", code="200") >= 2000
    assert not any(f'code="{c}"' in text for c in ("500", "503", "504"))
    batches = _metric(text, "pdx_serve_batch_size_count")
    single_row = _metric(text, "pdx_serve_batch_size_bucket", le="1.0")
    rows = _metric(text, "pdx_serve_batch_size_sum")
    assert batches < 2000 and single_row < batches, "no batch of more than one request was formed"
    assert rows >= sum(x.shape[0] for x in xs)
    assert _metric(text, "pdx_serve_request_latency_seconds_count") >= 2000
    assert _metric(text, "pdx_serve_queue_depth") == 0


def test_binary_npy_and_npz_bodies(server, model, rng):
    url, client = server
    _, reference = model
    x = rng.standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_allclose(client.predict("mlp", x, binary=True), reference(x), rtol=1e-5, atol=1e-5)

    buf = io.BytesIO()
    np.savez(buf, x=x)
    status, data = _post(url, buf.getvalue(), "application/x-npz", headers={"Accept": "application/x-npy"})
    assert status == 200
    np.testing.assert_allclose(np.load(io.BytesIO(data)), reference(x), rtol=1e-5, atol=1e-5)

    buf = io.BytesIO()
    np.save(buf, x.astype(">f4"))  # big-endian float32 is still float32
    status, data = _post(url, buf.getvalue(), "application/x-npy", headers={"Accept": "application/x-npy"})
    assert status == 200
    np.testing.assert_allclose(np.load(io.BytesIO(data)), reference(x), rtol=1e-5, atol=1e-5)

    buf = io.BytesIO()
    np.save(buf, x.astype(np.float64))
    status, body = _post(url, buf.getvalue(), "application/x-npy")
    assert status == 400 and "float64" in body["error"] and "float32" in body["error"]
    # a header that promises more data than the body holds
    status, body = _post(url, buf.getvalue()[:-8], "application/x-npy")
    assert status == 400 and "data bytes" in body["error"]


@pytest.mark.parametrize("body, fragment", [
    (b'{"inputs": {"x": [[1.0, 2.0', "malformed JSON"),
    (b"not json at all", "malformed JSON"),
    (b'{"inputs": {"x": [[1, 2], [3]]}}', "rectangular"),
    (b'{"inputs": {"x": [["a", "b"]]}}', "numbers"),
    (b'{"input": []}', '"inputs"'),
    (b'[1, 2, 3]', '"inputs"'),
    (b'{"inputs": {"y": [[0.0]]}}', "unknown"),
    (b'\xff\xfe{"inputs": 1}', "malformed JSON"),
])
def test_malformed_json_is_400(server, body, fragment):
    url, client = server
    status, answer = _post(url, body)
    assert status == 400 and fragment in answer["error"]


def test_wrong_shape_is_400_with_the_value_error_text(server, model):
    url, client = server
    path, _ = model
    bad = np.zeros((2, 5), np.float32)
    with pytest.raises(ValueError) as local:
        load(path).check_inputs(bad)
    status, answer = _post(url, json.dumps({"inputs": {"x": bad.tolist()}}).encode())
    assert status == 400 and answer["error"] == str(local.value)
    with pytest.raises(ValueError, match=re.escape(str(local.value))):
        client.predict("mlp", bad)


def test_body_at_limit_accepted_and_one_byte_more_is_413(server, model):
    url, _ = server
    _, reference = model
    x = np.ones((2, 16), np.float32)
    payload = json.dumps({"inputs": {"x": x.tolist()}}).encode()
    at_limit = payload + b" " * (LIMIT - len(payload))  # trailing whitespace is valid JSON
    status, answer = _post(url, at_limit)
    assert status == 200
    np.testing.assert_allclose(answer["outputs"]["output"], reference(x), rtol=1e-5, atol=1e-5)
    status, answer = _post(url, at_limit + b" ")
    assert status == 413 and str(LIMIT) in answer["error"]


def test_413_is_sent_while_the_body_is_still_streaming(server):
    """A chunked body without Content-Length: the server answers 413 once limit+1
    bytes arrived, while the client has not finished (or even ended) the body."""
    url, _ = server
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b" " * (LIMIT + 1)
        sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")  # no terminating 0-chunk
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]

    # A declared Content-Length over the limit is refused before any body byte is sent.
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (10 * LIMIT))
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_deep_json_is_400_and_the_server_stays_healthy(server, model):
    url, client = server
    _, reference = model
    for deep in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1" + b"}" * 100_000):
        status, answer = _post(url, deep)
        assert status == 400 and "depth" in answer["error"]
    assert client.live() and client.ready()
    # brackets inside strings are not nesting
    x = np.ones((1, 16), np.float32)
    status, answer = _post(url, json.dumps({"inputs": {"x": x.tolist()}, "note": "[" * 1000}).encode())
    assert status == 200
    np.testing.assert_allclose(client.predict("mlp", x), reference(x), rtol=1e-5, atol=1e-5)


def test_metadata_unknown_model_and_health(server):
    url, client = server
    meta = client.metadata("mlp")
    assert meta["inputs"] == [{"name": "x", "shape": [None, 16], "dtype": "float32"}]
    assert meta["outputs"] == ["output"] and meta["output_dtypes"] == ["float32"] and meta["batching"]
    with pytest.raises(ValueError, match="no model named 'resnet'"):
        client.predict("resnet", np.ones((1, 16), np.float32))
    status, answer = _post(url, b"x", content_type="text/plain")
    assert status == 415 and "application/x-npy" in answer["error"]


# --------------------------------------------------------------------------- in-process server, gated model


class _Gated:
    """The loaded predictor, held at a gate so a test decides when it computes."""

    def __init__(self, predictor):
        self.inner = predictor
        self.name, self.input_specs, self.output_names = predictor.name, predictor.input_specs, predictor.output_names
        self.check_inputs = predictor.check_inputs
        self.gate, self.entered = threading.Event(), threading.Event()

    def __call__(self, *arrays):
        self.entered.set()
        assert self.gate.wait(60), "test never opened the gate"
        return self.inner(*arrays)


def _start_in_thread(app):
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # log_config=None: leave the test process's logging alone (no handlers bound to pytest's streams)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_ready_after_warm_up_queue_full_503_and_timeouts_504_408(model):
    path, reference = model
    gated = _Gated(load(path))
    app = create_app(gated, max_batch_size=1, max_queue=1, timeout_s=3.0)
    server, thread, url = _start_in_thread(app)
    try:
        client = Client(url)
        deadline = time.monotonic() + 30
        while not client.live():  # live as soon as HTTP is up, while warm-up is held at the gate
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert gated.entered.wait(30) and not client.ready()
        with pytest.raises(ServerError) as e:
            client.predict("mlp", np.ones((1, 16), np.float32))
        assert e.value.status_code == 503 and "not ready" in e.value.message
        gated.gate.set()
        client.wait_ready(30)

        gated.gate.clear()
        gated.entered.clear()
        errors = {}

        def call(key):
            try:
                Client(url).predict("mlp", np.ones((1, 16), np.float32))
            except ServerError as err:
                errors[key] = err.status_code

        first = threading.Thread(target=call, args=("running",))
        first.start()
        assert gated.entered.wait(30)  # the first request is inside the model
        second = threading.Thread(target=call, args=("queued",))
        second.start()
        while _metric(client.metrics(), "pdx_serve_queue_depth") != 1:
            time.sleep(0.01)
        with pytest.raises(ServerError) as e:  # one running, one waiting: the queue (1) is full
            client.predict("mlp", np.ones((1, 16), np.float32))
        assert e.value.status_code == 503 and "queue full" in e.value.message
        assert client.live()  # the event loop answers while the model thread is busy
        # a body that never finishes arriving is cut off by the same per-request budget
        slow = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=30)
        slow.sendall(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"inputs\": ")
        first.join(30)
        second.join(30)
        assert errors == {"running": 504, "queued": 504}
        with slow:
            assert slow.recv(65536).startswith(b"HTTP/1.1 408")

        gated.gate.set()
        client.wait_ready(30)  # not ready while the held call ran past --timeout-s
        x = np.full((1, 16), 0.5, np.float32)
        np.testing.assert_allclose(client.predict("mlp", x), reference(x), rtol=1e-5, atol=1e-5)
        text = client.metrics()
        assert _metric(text, "pdx_serve_requests_total", code="503") == 2
        assert _metric(text, "pdx_serve_requests_total", code="504") == 2
        assert _metric(text, "pdx_serve_requests_total", code="200") == 1
        assert _metric(text, "pdx_serve_requests_total", code="408") == 1
    finally:
        gated.gate.set()
        server.should_exit = True
        thread.join(30)


# --------------------------------------------------------------------------- the command


def test_serve_refuses_urls_and_missing_paths(capsys):
    from pdx.cli import main

    assert main(["serve", "https://example.com/model"]) == 2
    assert "never loads a model from the network" in capsys.readouterr().err
    assert main(["serve", "/nonexistent/artifact"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(ValueError, match="URL"):
        create_app("http://example.com/model")
    with pytest.raises(ValueError, match="max_queue"):
        create_app(object(), max_queue=0)


def test_serve_exits_1_when_the_artifact_is_corrupt(model, tmp_path):
    path, _ = model
    bad = tmp_path / "mlp"
    bad.mkdir()
    for f in path.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    program = next(f for f in bad.iterdir() if f.name.startswith("program"))
    data = bytearray(program.read_bytes())
    data[len(data) // 2] ^= 0xFF
    program.write_bytes(bytes(data))
    proc = subprocess.run([sys.executable, "-m", "pdx.cli", "serve", str(bad), "--port", "0",
                           "--log-level", "critical"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "cannot load the model" in proc.stderr and "sha256" in proc.stderr.lower()


def test_two_inputs_two_outputs_batched_and_split_back(tmp_path, rng):
    """Six queued requests (1-3 rows each, JSON list, JSON dict and .npz bodies) run as one
    batch while the model is held; each gets back exactly its own rows of both outputs."""
    def f(x, y):
        return x * 2.0 + y, (x - y).sum(axis=1)

    path = export(f, tmp_path / "two", [InputSpec([None, 3], "float32", "x"), InputSpec([None, 3], "float32", "y")],
                  name="two", output_names=["affine", "diff"], differentiable=False)
    gated = _Gated(load(path))
    gated.gate.set()
    server, thread, url = _start_in_thread(create_app(gated, max_batch_size=16, batch_timeout_ms=0))
    try:
        client = Client(url)
        client.wait_ready(60)
        gated.gate.clear()
        gated.entered.clear()
        blocker = threading.Thread(target=client.predict, args=("two", np.ones((1, 3), np.float32),
                                                                np.ones((1, 3), np.float32)))
        blocker.start()
        assert gated.entered.wait(30)

        pairs = [(rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal((n, 3)).astype(np.float32))
                 for n in (1, 3, 2, 1, 2, 3)]

        def call(i):
            x, y = pairs[i]
            if i % 3 == 0:
                return Client(url).predict("two", x, y)
            if i % 3 == 1:
                return Client(url).predict("two", x, y, binary=True)
            status, answer = _post(url, json.dumps({"inputs": {"y": y.tolist(), "x": x.tolist()}}).encode(),
                                   name="two")
            assert status == 200, answer
            return tuple(np.asarray(answer["outputs"][k], np.float32) for k in ("affine", "diff"))

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(call, i) for i in range(6)]
            while _metric(client.metrics(), "pdx_serve_queue_depth") != 6:
                time.sleep(0.01)
            gated.gate.set()
            results = [fut.result(timeout=60) for fut in futures]
        blocker.join(30)
        for (x, y), (affine, diff) in zip(pairs, results):
            np.testing.assert_allclose(affine, x * 2.0 + y, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(diff, (x - y).sum(axis=1), rtol=1e-5, atol=1e-5)
        text = client.metrics()
        assert _metric(text, "pdx_serve_batch_size_bucket", le="8.0") - _metric(
            text, "pdx_serve_batch_size_bucket", le="4.0") == 0
        assert _metric(text, "pdx_serve_batch_size_bucket", le="16.0") - _metric(
            text, "pdx_serve_batch_size_bucket", le="8.0") == 1  # the 12-row batch

        status, answer = _post(url, b"\x93NUMPY", "application/x-npy", name="two")
        assert status == 400 and "application/x-npz" in answer["error"]
        status, answer = _post(url, json.dumps({"inputs": [[[0.0, 0.0, 0.0]]]}).encode(), name="two")
        assert status == 400 and "takes 2 inputs" in answer["error"]
    finally:
        gated.gate.set()
        server.should_exit = True
        thread.join(30)


def test_iree_runtime_serves_the_same_outputs(tmp_path, rng):
    """`runtime="iree"`: the host .vmfb of the same artifact behind the same server, under another name."""
    pdx.seed(3)
    net = pdx.nn.Sequential(pdx.nn.Linear(16, 8), pdx.nn.Tanh())
    net.eval()
    path = export(net, tmp_path / "tiny", [InputSpec([None, 16], "float32", "x")], targets=("xla", "iree-llvm-cpu"),
                  name="tiny", differentiable=False, iree={"batch_split": True})
    w = {k: np.asarray(v) for k, v in net.state_dict().items()}
    server, thread, url = _start_in_thread(create_app(str(path), runtime="iree", max_batch_size=4, name="served"))
    try:
        client = Client(url)
        client.wait_ready(60)
        x = rng.standard_normal((3, 16)).astype(np.float32)
        np.testing.assert_allclose(client.predict("served", x), np.tanh(x @ w["0.weight"] + w["0.bias"]),
                                   rtol=1e-4, atol=1e-5)
        with pytest.raises(ValueError, match="this server serves 'served'"):  # name= replaces the artifact's
            client.predict("tiny", x)
    finally:
        server.should_exit = True
        thread.join(30)
