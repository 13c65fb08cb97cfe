"""A thin `Profiler` with Paddle's scheduler arguments over `jax.profiler`.

Paddle's profiler cycles through states per step: CLOSED (off), READY
(warming up, not recorded), RECORD, and RECORD_AND_RETURN (the last recorded
step of a cycle, after which the trace is handed to `on_trace_ready`). Here a
RECORD span is one `jax.profiler.start_trace` ... `stop_trace`, which writes
an XSpace trace under `<dir>/plugins/profile/<run>/` (open it in
TensorBoard's profile plugin, or the `.trace.json.gz` / Perfetto trace it
also writes in Perfetto UI).
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable

import jax

__all__ = ["Profiler", "ProfilerState", "ProfilerTarget", "RecordEvent", "make_scheduler", "export_chrome_tracing"]


class ProfilerState(enum.Enum):
    """Per-step state of the profiler (Paddle's `paddle.profiler.ProfilerState`)."""

    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3


class ProfilerTarget(enum.Enum):
    """What to profile; jax traces the host and every device it runs on, so all are equivalent."""

    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3


def make_scheduler(*, closed: int, ready: int, record: int, repeat: int = 0, skip_first: int = 0) -> Callable:
    """A step -> ProfilerState schedule (Paddle's `paddle.profiler.make_scheduler`).

    After `skip_first` steps, cycles of `closed` off steps, `ready` warm-up
    steps and `record` recorded steps, `repeat` times (0: forever).

    Example:
      >>> import pdx
      >>> s = pdx.profiler.make_scheduler(closed=1, ready=1, record=2)
      >>> [s(i).name for i in range(4)]
      ['CLOSED', 'READY', 'RECORD', 'RECORD_AND_RETURN']
    """
    for name, v in (("closed", closed), ("ready", ready), ("record", record), ("repeat", repeat),
                    ("skip_first", skip_first)):
        if not isinstance(v, int) or v < 0:
            raise ValueError(f"make_scheduler: {name} must be an int >= 0; got {name}={v!r}")
    if record < 1:
        raise ValueError(f"make_scheduler: record must be >= 1; got record={record}")
    period = closed + ready + record

    def schedule(step: int) -> ProfilerState:
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat and step // period >= repeat:
            return ProfilerState.CLOSED
        pos = step % period
        if pos < closed:
            return ProfilerState.CLOSED
        if pos < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD_AND_RETURN if pos == period - 1 else ProfilerState.RECORD

    return schedule


def _range_scheduler(start: int, end: int) -> Callable:
    if not (isinstance(start, int) and isinstance(end, int)) or not 0 <= start < end:
        raise ValueError(f"Profiler: scheduler=(start, end) needs 0 <= start < end; got ({start!r}, {end!r})")

    def schedule(step: int) -> ProfilerState:
        if step < start or step >= end:
            return ProfilerState.CLOSED
        return ProfilerState.RECORD_AND_RETURN if step == end - 1 else ProfilerState.RECORD

    return schedule


def export_chrome_tracing(dir_name: str, worker_name: str | None = None) -> Callable:
    """An `on_trace_ready` callback: traces go to `dir_name` (Paddle's `export_chrome_tracing`).

    jax writes the trace when recording stops; this names where. Returns a
    callable that records the directory on the profiler.
    """

    def handler(prof: "Profiler") -> None:
        prof.trace_dirs.append(dir_name)

    handler.dir_name = dir_name
    return handler


class Profiler:
    """Record jax traces for chosen steps (Paddle's `paddle.profiler.Profiler`).

    Args:
      targets: accepted for Paddle compatibility (jax traces host and devices).
      scheduler: None (record from `start()` to `stop()`), a `(start, end)`
        step range, or a `make_scheduler(...)` callable.
      on_trace_ready: `export_chrome_tracing(dir)` (default dir './profiler_log').
      timer_only: only time steps (no trace); `step_info()` reports them.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> prof = pdx.profiler.Profiler(scheduler=(1, 2), on_trace_ready=pdx.profiler.export_chrome_tracing("/tmp/pdx_prof"))
      >>> prof.start()
      >>> for _ in range(3):
      ...     _ = (jnp.ones(4) * 2).block_until_ready()
      ...     prof.step()
      >>> prof.stop()
    """

    def __init__(self, *, targets=None, scheduler=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, timer_only=False, emit_nvtx=False, custom_device_types=None, with_flops=False):
        if scheduler is None:
            self._schedule = lambda step: ProfilerState.RECORD
        elif isinstance(scheduler, (tuple, list)) and len(scheduler) == 2:
            self._schedule = _range_scheduler(*scheduler)
        elif callable(scheduler):
            self._schedule = scheduler
        else:
            raise TypeError(f"Profiler: scheduler must be None, (start, end) or make_scheduler(...); got {scheduler!r}")
        self._on_ready = on_trace_ready or export_chrome_tracing("./profiler_log")
        self._dir = getattr(self._on_ready, "dir_name", "./profiler_log")
        self.timer_only = timer_only
        self.step_num = 0
        self.trace_dirs: list[str] = []
        self._recording = False
        self._times: list[float] = []
        self._last = None

    def _begin(self):
        if not self.timer_only and not self._recording:
            os.makedirs(self._dir, exist_ok=True)
            jax.profiler.start_trace(self._dir, create_perfetto_trace=True)
            self._recording = True

    def _end(self):
        if self._recording:
            jax.profiler.stop_trace()
            self._recording = False
            self._on_ready(self)

    def _enter(self, state: ProfilerState):
        if state in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN):
            self._begin()

    def start(self) -> None:
        """Begin; the schedule's state for step 0 applies."""
        self.step_num = 0
        self._last = time.perf_counter()
        self._enter(self._schedule(0))

    def step(self, num_samples: int | None = None) -> None:
        """Mark the end of a training step; records or stops per the schedule."""
        now = time.perf_counter()
        if self._last is not None:
            self._times.append(now - self._last)
        self._last = now
        if self._schedule(self.step_num) == ProfilerState.RECORD_AND_RETURN:
            self._end()
        self.step_num += 1
        self._enter(self._schedule(self.step_num))

    def stop(self) -> None:
        """Finish (writing the trace if one is being recorded)."""
        self._end()

    def step_info(self, unit: str | None = None) -> str:
        """Average step time so far, as Paddle's one-line summary."""
        if not self._times:
            return "no steps timed yet"
        avg = sum(self._times) / len(self._times)
        return f"reader_cost: n/a s batch_cost: {avg:.5f} s ips: {1.0 / avg:.3f} steps/s"

    def summary(self, *args, **kwargs) -> None:
        """Print the step timing; the op-level view is in TensorBoard / Perfetto."""
        print(f"pdx.profiler: {len(self._times)} steps, {self.step_info()}; traces in {sorted(set(self.trace_dirs))}")

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


class RecordEvent:
    """Name a region of host code in the trace (Paddle's `RecordEvent`, over `jax.profiler.TraceAnnotation`).

    Example:
      >>> import pdx
      >>> with pdx.profiler.RecordEvent("data"):
      ...     pass
    """

    def __init__(self, name: str, event_type=None):
        self.name = name
        self._annotation = None

    def begin(self) -> None:
        self._annotation = jax.profiler.TraceAnnotation(self.name)
        self._annotation.__enter__()

    def end(self) -> None:
        if self._annotation is not None:
            self._annotation.__exit__(None, None, None)
            self._annotation = None

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.end()
        return False
