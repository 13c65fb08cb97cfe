"""Prometheus metrics of `pdx serve` (text exposition format, no client library needed).

Counters and histograms are updated on the event loop thread only, so they need no lock.
"""

from __future__ import annotations

import collections
from typing import Sequence

__all__ = ["Metrics", "batch_sizes"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def batch_sizes(max_batch_size: int) -> list[int]:
    """Powers of two up to max_batch_size, and max_batch_size itself: the batch shapes ever run.

    Example:
      >>> batch_sizes(12)
      [1, 2, 4, 8, 12]
    """
    return sorted({2 ** i for i in range(max_batch_size.bit_length())} | {max_batch_size})


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


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Request, latency, batch and queue metrics of one served model.

    `requests` counts answered predict requests by status code; a client that
    disconnects before its body arrived got no answer and is counted in
    `client_disconnects` instead (never as a 5xx).
    """

    def __init__(self, model: str, max_batch_size: int):
        self.model = model
        self.requests: collections.Counter[int] = collections.Counter()
        self.client_disconnects = 0
        self.latency = _Histogram(_LATENCY_BUCKETS)
        self.inference = _Histogram(_LATENCY_BUCKETS)
        self.batch_size = _Histogram(batch_sizes(max_batch_size))

    def render(self, queue_depth: int, ready: bool) -> str:
        labels = f'model="{_escape_label(self.model)}"'
        lines = ["# HELP pdx_serve_requests_total Predict requests answered, by HTTP status code.",
                 "# TYPE pdx_serve_requests_total counter"]
        for code in sorted(self.requests):
            lines.append(f'pdx_serve_requests_total{{{labels},code="{code}"}} {self.requests[code]}')
        lines += ["# HELP pdx_serve_client_disconnects_total Predict requests whose client disconnected "
                  "before the body arrived (not answered).",
                  "# TYPE pdx_serve_client_disconnects_total counter",
                  f"pdx_serve_client_disconnects_total{{{labels}}} {self.client_disconnects}"]
        lines += ["# HELP pdx_serve_request_latency_seconds Predict request latency in the server, "
                  "request received to response ready.",
                  "# TYPE pdx_serve_request_latency_seconds histogram"]
        lines += self.latency.lines("pdx_serve_request_latency_seconds", labels)
        lines += ["# HELP pdx_serve_inference_seconds Model execution time per executed batch.",
                  "# TYPE pdx_serve_inference_seconds histogram"]
        lines += self.inference.lines("pdx_serve_inference_seconds", labels)
        lines += ["# HELP pdx_serve_batch_size Rows per executed batch (before padding).",
                  "# TYPE pdx_serve_batch_size histogram"]
        lines += self.batch_size.lines("pdx_serve_batch_size", labels)
        lines += ["# HELP pdx_serve_queue_depth Requests waiting for a batch.",
                  "# TYPE pdx_serve_queue_depth gauge",
                  f"pdx_serve_queue_depth{{{labels}}} {queue_depth}",
                  "# HELP pdx_serve_ready 1 while /health/ready answers 200.",
                  "# TYPE pdx_serve_ready gauge",
                  f"pdx_serve_ready{{{labels}}} {int(ready)}"]
        return "\n".join(lines) + "\n"
