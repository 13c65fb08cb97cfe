"""pdx.profiler: Paddle's profiler API over `jax.profiler` (traces for TensorBoard / Perfetto)."""

from pdx.profiler._profiler import Profiler
from pdx.profiler._profiler import ProfilerState
from pdx.profiler._profiler import ProfilerTarget
from pdx.profiler._profiler import RecordEvent
from pdx.profiler._profiler import export_chrome_tracing
from pdx.profiler._profiler import make_scheduler

__all__ = ["Profiler", "ProfilerState", "ProfilerTarget", "RecordEvent", "export_chrome_tracing", "make_scheduler"]
