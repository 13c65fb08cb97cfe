"""pdx.device: Paddle's device names and queries (set_device, places, is_compiled_with_*) over JAX devices.

pdx places arrays with JAX: `set_device` sets JAX's default device, Places
(`CPUPlace`, `CUDAPlace`, ...) name JAX devices, and every capability query is
answered from the JAX backends of this process. See README.md.

Paddle's typed tensor factories (`paddle.device.FloatTensor`, ...) are pdx's
top-level ones, named here by pdx's alias table (`NAMES` in pdx/_paddle_tree.py).

Example:
  >>> import pdx
  >>> pdx.device.set_device("cpu")
  Place(cpu)
  >>> pdx.device.get_device()
  'cpu'
"""

from pdx.device import cuda
from pdx.device._device import (
    device_count,
    get_all_custom_device_type,
    get_all_device_type,
    get_available_custom_device,
    get_available_device,
    get_cudnn_version,
    get_default_device,
    get_device,
    is_compiled_with_cinn,
    is_compiled_with_cuda,
    is_compiled_with_custom_device,
    is_compiled_with_distribute,
    is_compiled_with_ipu,
    is_compiled_with_rocm,
    is_compiled_with_xpu,
    set_default_device,
    set_device,
    synchronize,
)
from pdx.device._cuda import (
    get_device_capability,
    get_device_name,
    get_device_properties,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
)
from pdx.device._guard import (
    device,
    device_guard,
    get_device_module,
    get_rng_state,
    is_available,
    is_bf16_supported,
    manual_seed,
    set_rng_state,
)
from pdx.device._place import CPUPlace, CUDAPinnedPlace, CUDAPlace, CustomPlace, Place, XPUPlace, as_jax_device

__all__ = [
    "device",
    "device_guard",
    "get_device_module",
    "get_rng_state",
    "is_available",
    "is_bf16_supported",
    "manual_seed",
    "set_rng_state",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "CPUPlace",
    "CUDAPinnedPlace",
    "CUDAPlace",
    "CustomPlace",
    "Place",
    "XPUPlace",
    "as_jax_device",
    "cuda",
    "device_count",
    "get_all_custom_device_type",
    "get_all_device_type",
    "get_available_custom_device",
    "get_available_device",
    "get_cudnn_version",
    "get_default_device",
    "get_device",
    "is_compiled_with_cinn",
    "is_compiled_with_cuda",
    "is_compiled_with_custom_device",
    "is_compiled_with_distribute",
    "is_compiled_with_ipu",
    "is_compiled_with_rocm",
    "is_compiled_with_xpu",
    "set_default_device",
    "set_device",
    "synchronize",
]
