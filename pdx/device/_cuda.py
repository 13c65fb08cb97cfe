"""GPU queries of paddle.device.cuda, answered from JAX's device objects and memory statistics."""

from __future__ import annotations

from typing import NamedTuple

import jax

from pdx.device._place import as_place, backend_devices

__all__ = ["DeviceProperties", "current_device", "device_count", "empty_cache", "get_device_capability",
           "get_device_name", "get_device_properties", "max_memory_allocated", "max_memory_reserved",
           "memory_allocated", "memory_reserved", "synchronize"]


class DeviceProperties(NamedTuple):
    """What `get_device_properties` reports about a GPU."""

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int


def _gpu(device) -> jax.Device:
    if device is None:
        device = 0
    place = as_place(device)
    if place.kind not in ("gpu", "cuda"):
        raise ValueError(f"device={device!r} is not a GPU; pass an int id, 'gpu:N' or a CUDAPlace")
    if not backend_devices("gpu"):
        raise ValueError(f"device={device!r}: no GPU is visible to JAX; check pdx.device.cuda.device_count() first")
    return place.jax_device()


def _stat(device, key: str) -> int:
    stats = _gpu(device).memory_stats() or {}
    return int(stats.get(key, 0))


def device_count() -> int:
    """Number of GPUs visible to JAX.

    Returns:
      An int.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.device_count() >= 0
      True
    """
    return len(backend_devices("gpu"))


def current_device() -> int:
    """Index of the current default GPU (0 unless `pdx.set_device('gpu:N')` chose another).

    Returns:
      An int.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.current_device() >= 0
      True
    """
    dev = jax.config.jax_default_device
    return dev.id if isinstance(dev, jax.Device) and dev.platform == "gpu" else 0


def synchronize(device=None) -> None:
    """Wait for every computation issued so far.

    Args:
      device: accepted for Paddle; pdx waits for all devices.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.synchronize()
    """
    for array in jax.live_arrays():
        array.block_until_ready()


def empty_cache() -> None:
    """Accepted for Paddle: XLA's allocator keeps freed blocks for reuse and offers no release call.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.empty_cache()
    """


def memory_allocated(device=None) -> int:
    """Bytes currently held by live arrays on the GPU (`bytes_in_use` of JAX's allocator).

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      An int.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.memory_allocated() if pdx.device.cuda.device_count() else 0
      0
    """
    return _stat(device, "bytes_in_use")


def max_memory_allocated(device=None) -> int:
    """Peak bytes held on the GPU since the process started (`peak_bytes_in_use`).

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      An int.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.max_memory_allocated() if pdx.device.cuda.device_count() else 0
      0
    """
    return _stat(device, "peak_bytes_in_use")


def memory_reserved(device=None) -> int:
    """Bytes the allocator has reserved from the GPU (`bytes_reserved`, else `bytes_limit`).

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      An int.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.memory_reserved() if pdx.device.cuda.device_count() else 0
      0
    """
    return _stat(device, "bytes_reserved") or _stat(device, "bytes_limit")


def max_memory_reserved(device=None) -> int:
    """Peak bytes reserved (`peak_bytes_reserved`, else the current reservation).

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      An int.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.max_memory_reserved() if pdx.device.cuda.device_count() else 0
      0
    """
    return _stat(device, "peak_bytes_reserved") or memory_reserved(device)


def get_device_name(device=None) -> str:
    """The GPU's model name, e.g. 'NVIDIA H100 80GB HBM3'.

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      A string.

    Example:
      >>> import pdx
      >>> pdx.device.cuda.get_device_name() if pdx.device.cuda.device_count() else ""
      ''
    """
    return _gpu(device).device_kind


def get_device_capability(device=None) -> tuple[int, int]:
    """The CUDA compute capability `(major, minor)`, e.g. (9, 0) for an H100.

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      A pair of ints ((0, 0) when JAX does not report it, e.g. on ROCm).

    Example:
      >>> import pdx
      >>> pdx.device.cuda.get_device_capability() if pdx.device.cuda.device_count() else (0, 0)
      (0, 0)
    """
    cc = str(getattr(_gpu(device), "compute_capability", "") or "0.0")
    major, _, minor = cc.partition(".")
    return int(major or 0), int(minor or 0)


def get_device_properties(device=None) -> DeviceProperties:
    """Name, compute capability, memory size and SM count of a GPU.

    Args:
      device: int id, 'gpu:N' or CUDAPlace; default GPU 0.

    Returns:
      A `DeviceProperties`.

    Example:
      >>> import pdx
      >>> n = pdx.device.cuda.device_count()
      >>> n == 0 or pdx.device.cuda.get_device_properties().total_memory > 0
      True
    """
    dev = _gpu(device)
    major, minor = get_device_capability(device)
    stats = dev.memory_stats() or {}
    return DeviceProperties(name=dev.device_kind, major=major, minor=minor,
                            total_memory=int(stats.get("bytes_limit", 0)),
                            multi_processor_count=int(getattr(dev, "core_count", 0) or 0))

