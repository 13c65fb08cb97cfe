"""`pdx serve` throughput and latency, next to calling the predictor directly.

Exports a model from pdx.vision.models with a dynamic batch dim, starts the
real `pdx serve` command in a subprocess on loopback, with dynamic batching
(--max-batch-size 32; --batch-timeout-ms 0 and 2) and without it
(--max-batch-size 1), and sends single-image requests from client threads
(pdx.export.Client, one kept-alive connection per thread), as JSON and as
.npy. Prints images/s and the p50/p99 request latency seen by the client.
A last row sends requests larger than --max-batch-size (33 to 96 images, each
size once) to the batching server: they run in chunks of warm-up batch sizes, so
the server compiles nothing new; the row prints the server's RSS before/after.
The reference rows call the loaded predictor in this process with no HTTP at
all: one image per call (what a server without batching can at best do) and
32 images per call (the batched upper bound).

Models: lenet (1x28x28; so cheap that HTTP dominates) and mobilenet_v2
(3x32x32, 10 classes; the case batching is for: on CPU one call of 32 images
costs far less than 32 calls of one).

Client threads and server share the machine, so on a small CPU the numbers
include the client's own cost; compare rows with each other, not with another
machine.

Usage:
  python benchmarks/serve.py                    # LeNet, ~1 min on an idle 2-core CPU
  python benchmarks/serve.py --model mobilenet_v2 --requests 320 --concurrency 32
  python benchmarks/serve.py --requests 500 --concurrency 1,8,32
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np


def _lenet():
    from pdx.vision.models import LeNet

    return LeNet()


def _mobilenet_v2():
    from pdx.vision.models import mobilenet_v2

    return mobilenet_v2(num_classes=10)


# name -> (factory, input shape without the batch dim)
MODELS = {"lenet": (_lenet, (1, 28, 28)), "mobilenet_v2": (_mobilenet_v2, (3, 32, 32))}


def _start(path: str, max_batch_size: int, batch_timeout_ms: float, log) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "pdx.cli", "serve", path, "--port", "0", "--log-level", "warning",
           "--max-batch-size", str(max_batch_size), "--batch-timeout-ms", str(batch_timeout_ms), "--max-queue", "4096"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        log.seek(0)
        match = re.search(r"listening on (http://\S+)", log.read())
        if match:
            return proc, match.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    raise RuntimeError(f"pdx serve did not start:\n{log.read()}")


def _load(client, name: str, images: np.ndarray, concurrency: int, binary: bool) -> tuple[float, float, float]:
    def one(i):
        start = time.perf_counter()
        client.predict(name, images[i:i + 1], binary=binary)
        return time.perf_counter() - start

    for i in range(min(8, len(images))):  # first requests, outside the timing
        one(i)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        latencies = np.array(list(pool.map(one, range(len(images))))) * 1e3
    elapsed = time.perf_counter() - start
    return len(images) / elapsed, float(np.percentile(latencies, 50)), float(np.percentile(latencies, 99))


def _oversize(client, name: str, images: np.ndarray, pid: int) -> tuple[float, float, float, float]:
    """Requests of 33..96 rows, each size once: (images/s, p50 ms, RSS MB before, RSS MB after)."""
    sizes = [n for n in range(33, 97) if n <= len(images)]
    rss_before = _rss_mb(pid)
    latencies, start = [], time.perf_counter()
    for n in sizes:
        t = time.perf_counter()
        client.predict(name, images[:n], binary=True)
        latencies.append((time.perf_counter() - t) * 1e3)
    per_s = sum(sizes) / (time.perf_counter() - start)
    return per_s, float(np.percentile(latencies, 50)), rss_before, _rss_mb(pid)


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024


def _direct(predictor, images: np.ndarray, batch: int) -> tuple[float, float]:
    for _ in range(3):
        predictor(images[:batch])
    times = []
    for start in range(0, len(images) - batch + 1, batch):
        t = time.perf_counter()
        predictor(images[start:start + batch])
        times.append(time.perf_counter() - t)
    median = float(np.median(times))
    return batch / median, median * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,32", help="comma-separated client thread counts")
    parser.add_argument("--model", choices=sorted(MODELS), default="lenet")
    args = parser.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]

    import pdx
    from pdx.export import Client, export, load
    from pdx.jit import InputSpec

    pdx.seed(0)
    factory, shape = MODELS[args.model]
    net = factory()
    net.eval()
    tmp = tempfile.mkdtemp(prefix="pdx-serve-bench-")
    path = str(export(net, os.path.join(tmp, args.model), [InputSpec([None, *shape], "float32", "image")],
                      name=args.model, differentiable=False))
    images = np.random.default_rng(0).standard_normal((args.requests, *shape)).astype(np.float32)

    rows = []
    predictor = load(path)
    for batch in (1, 32):
        per_s, ms = _direct(predictor, images, batch)
        rows.append((f"predictor() in-process, batch {batch}", "-", "-", per_s, ms, float("nan")))

    # (--max-batch-size, --batch-timeout-ms)
    for max_batch, wait_ms in ((32, 0.0), (32, 2.0), (1, 0.0)):
        label = f"pdx serve, batch<={max_batch}, wait {wait_ms:g} ms" if max_batch > 1 else "pdx serve, no batching"
        with open(os.path.join(tmp, f"serve-{max_batch}-{wait_ms}.log"), "w+") as log:
            proc, url = _start(path, max_batch, wait_ms, log)
            try:
                client = Client(url)
                client.wait_ready(180)
                for concurrency in concurrencies:
                    for binary in (False, True):
                        per_s, p50, p99 = _load(client, args.model, images, concurrency, binary)
                        rows.append((label, concurrency, ".npy" if binary else "JSON", per_s, p50, p99))
                        print(f"  {label:<36} c={concurrency:<3} {'npy' if binary else 'json':<4} "
                              f"{per_s:8.0f}/s  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms", flush=True)
                if (max_batch, wait_ms) == (32, 0.0) and os.path.exists(f"/proc/{proc.pid}/status"):
                    per_s, p50, before, after = _oversize(client, args.model, images, proc.pid)
                    big = f"{label}, 33-96 img/request (RSS {before:.0f}->{after:.0f} MB)"
                    rows.append((big, 1, ".npy", per_s, p50, float("nan")))
                    print(f"  {big}: {per_s:8.0f}/s  p50 {p50:7.2f} ms", flush=True)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)

    print(f"\n{args.model} {list(shape)}, single-image requests, {args.requests} per row, "
          f"{os.cpu_count()} CPU cores")
    width = max(36, *(len(r[0]) for r in rows))
    print(f"| {'setup':<{width}} | clients | body | images/s | p50 ms | p99 ms |")
    print(f"|{'-' * (width + 2)}|--------:|------|---------:|-------:|-------:|")
    for label, conc, body, per_s, p50, p99 in rows:
        p99_text = "" if np.isnan(p99) else f"{p99:.2f}"
        print(f"| {label:<{width}} | {conc!s:>7} | {body:<4} | {per_s:8.0f} | {p50:6.2f} | {p99_text:>6} |")


if __name__ == "__main__":
    main()
