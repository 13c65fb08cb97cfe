"""Paddle's torch-style top-level autocast names over `pdx.amp.auto_cast` and its current policy."""

from __future__ import annotations

from pdx._amp_policy import auto_cast, current_policy

__all__ = ["autocast", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype",
           "is_autocast_enabled", "is_bfloat16_supported", "is_float16_supported"]


def autocast(device_type=None, dtype="float16", enabled=True, cache_enabled=True):
    """Mixed precision for the ops in a `with` block (`pdx.amp.auto_cast` with torch-style arguments).

    Args:
      device_type: accepted for Paddle ('cuda', 'cpu', ...); the policy applies on every device.
      dtype: 'float16' (Paddle's default here) or 'bfloat16'.
      enabled: False runs everything in the parameters' precision.
      cache_enabled: accepted for Paddle.

    Returns:
      A context manager.

    Example:
      >>> import jax.numpy as jnp, pdx
      >>> with pdx.autocast("cpu", dtype="bfloat16"):
      ...     y = pdx.nn.Linear(4, 2)(jnp.ones((1, 4)))
      >>> str(y.dtype)
      'bfloat16'
    """
    return auto_cast(enable=enabled, dtype=str(dtype))


def is_autocast_enabled(device_type=None):
    """Whether an enabled `autocast`/`auto_cast` block is active.

    Args:
      device_type: accepted for Paddle.

    Returns:
      A bool.

    Example:
      >>> import pdx
      >>> pdx.is_autocast_enabled()
      False
    """
    policy = current_policy()
    return bool(policy is not None and policy.enabled)


def get_autocast_dtype(device_type=None):
    """The low-precision dtype of the active autocast block ('float16' when none is active, as Paddle).

    Args:
      device_type: accepted for Paddle.

    Returns:
      'float16' or 'bfloat16'.

    Example:
      >>> import pdx
      >>> pdx.get_autocast_dtype()
      'float16'
    """
    return current_policy().dtype if is_autocast_enabled() else "float16"


def get_autocast_cpu_dtype(device_type=None):
    """Same as `get_autocast_dtype` (one policy for every device).

    Args:
      device_type: accepted for Paddle.

    Returns:
      'float16' or 'bfloat16'.

    Example:
      >>> import pdx
      >>> pdx.get_autocast_cpu_dtype()
      'float16'
    """
    return get_autocast_dtype()


def get_autocast_gpu_dtype(device_type=None):
    """Same as `get_autocast_dtype` (one policy for every device).

    Args:
      device_type: accepted for Paddle.

    Returns:
      'float16' or 'bfloat16'.

    Example:
      >>> import pdx
      >>> pdx.get_autocast_gpu_dtype()
      'float16'
    """
    return get_autocast_dtype()


def _platform(device) -> str:
    import jax

    if device is None:
        return jax.devices()[0].platform
    name = str(device).split(":")[0].lower()
    return {"cuda": "gpu"}.get(name, name)


def is_bfloat16_supported(device=None) -> bool:
    """Whether bfloat16 mixed precision is worth running on `device` (default: JAX's default backend).

    True on GPUs and TPUs. On a CPU, as Paddle answers: True when it has AVX-512 (core) or
    newer vector units; on AVX2-only CPUs XLA still computes bfloat16, but emulated and slower
    than float32, so the answer is False there.

    Example:
      >>> import pdx
      >>> pdx.amp.is_bfloat16_supported("gpu")
      True
    """
    platform = _platform(device)
    if platform == "cpu":
        from pdx import _cpu

        return _cpu.bf16_native()
    return platform in ("gpu", "tpu")


def is_float16_supported(device=None) -> bool:
    """Whether float16 mixed precision is worth running on `device`: True on GPUs and TPUs,
    False on CPUs (as Paddle answers there: CPUs have no float16 arithmetic, XLA would emulate it).

    Example:
      >>> import pdx
      >>> pdx.amp.is_float16_supported("cpu")
      False
    """
    return _platform(device) in ("gpu", "tpu")
