"""pdx.device.cuda: Paddle's GPU queries (device count, names, memory statistics), answered by JAX.

Example:
  >>> import pdx
  >>> pdx.device.cuda.device_count() >= 0
  True
"""

from pdx.device._cuda import (
    DeviceProperties,
    current_device,
    device_count,
    empty_cache,
    get_device_capability,
    get_device_name,
    get_device_properties,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    synchronize,
)

__all__ = [
    "DeviceProperties",
    "current_device",
    "device_count",
    "empty_cache",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "synchronize",
]
