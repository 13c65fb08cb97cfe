"""glibc malloc settings pdx makes at import on Linux, so compiled steps stop faulting pages in.

XLA:CPU allocates each execution's temporary buffer (all of a training step's
activations: 150-160 MB for ResNet-18 at batch 32 or GPT-mini) when the step
starts and frees it when it ends. glibc serves a block that large with a
fresh `mmap` and gives it back with `munmap`, so every step touches
38,000-41,000 new pages: each is faulted in and zeroed by the kernel inside
the step's kernels (a third of a ResNet step's system time). With one malloc
arena, no `mmap` for large blocks and freed memory kept for reuse up to
`TRIM_BYTES`, the next step gets the same pages back: 0 faults per step,
GPT-mini 190 -> 162 ms (0.85x) on a 2-core Xeon (benchmarks/HISTORY.md,
"CPU speed, fourth pass").

The cost: memory the process freed (up to `TRIM_BYTES` at the top of the
heap) is not returned to the system, large allocations come from the heap,
and threads share one arena, which slows libraries that allocate from many
threads at once (PyTorch's bf16 CPU kernels in the same process: GPT-mini
102 -> 159 ms). `PDX_MALLOC_DEFAULTS=0` leaves malloc as it is;
other C libraries (musl) and other systems are left alone.

Example:
  >>> sorted(SETTINGS)
  ['M_ARENA_MAX', 'M_MMAP_MAX', 'M_TRIM_THRESHOLD']
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys

__all__ = ["SETTINGS", "TRIM_BYTES", "apply"]

TRIM_BYTES = 1 << 30  # freed memory at the heap's top kept for reuse (glibc takes an int)

# mallopt parameter numbers (malloc.h) -> value.
SETTINGS: dict[str, tuple[int, int]] = {
    "M_ARENA_MAX": (-8, 1),  # threads share the main arena (other arenas mmap blocks > 64 MB regardless)
    "M_MMAP_MAX": (-4, 0),  # large blocks from the heap, reusable after free
    "M_TRIM_THRESHOLD": (-1, TRIM_BYTES),
}


def apply(environ=os.environ) -> list[str]:
    """Make the settings where allowed; returns the names of those glibc accepted."""
    if environ.get("PDX_MALLOC_DEFAULTS", "1").strip().lower() in ("0", "false", "no", "off"):
        return []
    if sys.platform != "linux" or platform.libc_ver()[0] != "glibc":
        return []
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return []
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return [name for name, (param, value) in SETTINGS.items() if mallopt(param, value) == 1]
