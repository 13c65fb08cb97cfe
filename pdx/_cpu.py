"""What this process's CPU can do natively, read once from /proc/cpuinfo.

Floor module: imports nothing from pdx. Used where an answer depends on the
CPU's instruction set (Paddle's `is_bfloat16_supported("cpu")`, which oneDNN
primitives exist).
"""

from __future__ import annotations

import functools

__all__ = ["bf16_native"]

_AVX512_CORE = frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"})


@functools.cache
def _flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def bf16_native() -> bool:
    """Whether the CPU has bfloat16-capable vector units: AVX-512 (core) or newer.

    On AVX2-only CPUs bfloat16 arithmetic is emulated (slower than float32) and
    oneDNN has no bfloat16 convolution or matmul.

    >>> isinstance(bf16_native(), bool)
    True
    """
    flags = _flags()
    return bool({"avx512_bf16", "amx_bf16"} & flags) or _AVX512_CORE <= flags
