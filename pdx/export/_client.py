"""A small Python client for a `pdx serve` server (standard library HTTP only)."""

from __future__ import annotations

import http.client
import io
import json
import threading
import time
import urllib.parse

import numpy as np

__all__ = ["Client", "ServerError"]

_NPY, _NPZ, _JSON = "application/x-npy", "application/x-npz", "application/json"
# A kept-alive connection the server has since closed fails on first use; such a
# request never reached the model, so it is sent once more on a new connection.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class ServerError(RuntimeError):
    """The server answered with an error status (not a bad-input 4xx, which raises ValueError).

    Attributes:
      status_code: the HTTP status (503 queue full or not ready, 504 timeout, 500 model failure...).
      message: the server's reason.
    """

    def __init__(self, status_code: int, message: str):
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message


class Client:
    """Calls a `pdx serve` server: `Client(url).predict(name, *arrays)`.

    One kept-alive connection per thread, so a Client can be shared by
    threads. Bad input (HTTP 400, 404, 413, 415) raises ValueError with the
    server's message, the same text a local `pdx.export.load(...)` predictor
    raises; other failures raise `ServerError` with `status_code`.

    Args:
      url: the server's base URL, e.g. "http://127.0.0.1:8000".
      timeout: seconds to wait for each response.

    Example:
      >>> import numpy as np, pdx
      >>> client = pdx.export.Client("http://127.0.0.1:8000")  # doctest: +SKIP
      >>> client.wait_ready()  # doctest: +SKIP
      >>> logits = client.predict("lenet", np.zeros((4, 1, 28, 28), "float32"))  # doctest: +SKIP
    """

    def __init__(self, url: str = "http://127.0.0.1:8000", *, timeout: float = 60.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Client: url must look like 'http://127.0.0.1:8000', got {url!r}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._parts = parts
        self._local = threading.local()
        self._output_dtypes: dict[str, list] = {}

    # ---- HTTP

    def _connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            cls = http.client.HTTPSConnection if self._parts.scheme == "https" else http.client.HTTPConnection
            conn = cls(self._parts.hostname, self._parts.port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def _request(self, method: str, path: str, body: bytes | None = None,
                 headers: dict | None = None) -> tuple[int, str, bytes]:
        path = self._parts.path.rstrip("/") + path
        for attempt in (0, 1):
            conn = self._connection(fresh=attempt == 1)
            reused = getattr(conn, "sock", None) is not None
            try:
                conn.request(method, path, body=body, headers=headers or {})
                response = conn.getresponse()
                data = response.read()
            except _STALE:
                self.close()
                if attempt == 0 and reused:
                    continue
                raise
            except BaseException:  # timeouts, refused connections: never reuse a half-used connection
                self.close()
                raise
            if response.getheader("connection", "").lower() == "close":
                conn.close()
            return response.status, response.getheader("content-type", ""), data
        raise AssertionError("unreachable")

    def _raise_for(self, status: int, data: bytes) -> None:
        try:
            message = json.loads(data)["error"]
        except (ValueError, KeyError, TypeError):
            message = data.decode("utf-8", "replace")
        if status in (400, 404, 406, 413, 415):
            raise ValueError(message)
        raise ServerError(status, message)

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- API

    def live(self) -> bool:
        """True when the server answers `/health/live`."""
        try:
            return self._request("GET", "/health/live")[0] == 200
        except OSError:
            return False

    def ready(self) -> bool:
        """True when the model is loaded and warmed up (`/health/ready`)."""
        try:
            return self._request("GET", "/health/ready")[0] == 200
        except OSError:
            return False

    def wait_ready(self, timeout: float = 60.0, interval: float = 0.1) -> None:
        """Poll `/health/ready` until it answers 200; raise TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self.ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Client: {self.url} not ready after {timeout:g} s")
            time.sleep(interval)

    def metadata(self, name: str) -> dict:
        """The model's inputs (name, shape, dtype), output names and batching settings."""
        status, _, data = self._request("GET", f"/v1/models/{urllib.parse.quote(name)}")
        if status != 200:
            self._raise_for(status, data)
        return json.loads(data)

    def metrics(self) -> str:
        """The server's Prometheus metrics text."""
        status, _, data = self._request("GET", "/metrics")
        if status != 200:
            self._raise_for(status, data)
        return data.decode("utf-8")

    def predict(self, name: str, *arrays, binary: bool = False):
        """Run model `name` on `arrays` (one per input, in order) on the server.

        Args:
          name: the served model's name.
          *arrays: numpy arrays (or nested lists) with the model's input dtypes and shapes.
          binary: send `.npy` (one input) or `.npz` (several) and receive `.npz`,
            instead of JSON; exact and faster for large arrays.

        Returns:
          One numpy array, or a tuple of them when the model has several outputs.
        """
        path = f"/v1/models/{urllib.parse.quote(name)}:predict"
        if binary:
            arrays = [np.asarray(a) for a in arrays]
            buf = io.BytesIO()
            if len(arrays) == 1:
                np.save(buf, arrays[0], allow_pickle=False)
                content_type = _NPY
            else:
                np.savez(buf, *arrays)
                content_type = _NPZ
            headers = {"Content-Type": content_type, "Accept": _NPZ}
            status, got_type, data = self._request("POST", path, buf.getvalue(), headers)
        else:
            values = [a.tolist() if hasattr(a, "tolist") else a for a in arrays]
            body = json.dumps({"inputs": values}).encode()
            status, got_type, data = self._request("POST", path, body, {"Content-Type": _JSON})
        if status != 200:
            self._raise_for(status, data)
        if got_type.startswith(_NPZ):
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                outputs = [npz[k] for k in npz.files]
        else:
            dtypes = self._dtypes(name)
            decoded = json.loads(data)["outputs"]
            outputs = [np.asarray(v, dtype=dtypes[i] if i < len(dtypes) else None)
                       for i, v in enumerate(decoded.values())]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _dtypes(self, name: str) -> list:
        # JSON numbers carry no dtype; the server's metadata names the output dtypes.
        if name not in self._output_dtypes:
            self._output_dtypes[name] = list(self.metadata(name).get("output_dtypes", []))
        return self._output_dtypes[name]
