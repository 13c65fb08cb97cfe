"""Device scopes and device-level queries of paddle.device that need no stream API:
`device` / `device_guard` (a scope with another default device), `is_available`,
`is_bf16_supported`, the generator of the current device and `get_device_module`."""

from __future__ import annotations

import jax

from pdx import _random
from pdx.device._device import _current, set_device
from pdx.device._place import as_place, backend_devices

__all__ = ["device", "device_guard", "get_device_module", "get_rng_state", "is_available", "is_bf16_supported",
           "manual_seed", "set_rng_state"]


class device:  # noqa: N801 (Paddle's name)
    """Context manager: `device` is the default device inside the block (Paddle's `paddle.device.device`).

    Args:
      device: 'cpu', 'gpu:N', an int GPU id, a Place, or None (no change).

    Example:
      >>> import pdx
      >>> with pdx.device.device("cpu"):
      ...     pdx.get_device()
      'cpu'
    """

    def __init__(self, device=None):
        self._target = device
        self._saved = None

    def __enter__(self):
        self._saved = jax.config.jax_default_device
        if self._target is not None:
            set_device(self._target)
        return self

    def __exit__(self, *exc):
        jax.config.update("jax_default_device", self._saved)
        return False


class device_guard(device):  # noqa: N801 (Paddle's name)
    """Context manager placing the ops of the block on `device` (Paddle's `device_guard`).

    Example:
      >>> import pdx
      >>> with pdx.device_guard("cpu"):
      ...     pdx.ones([2]).devices().pop().platform
      'cpu'
    """


def is_available() -> bool:
    """Whether an accelerator (GPU or TPU) is visible to JAX in this process.

    Example:
      >>> import pdx
      >>> isinstance(pdx.device.is_available(), bool)
      True
    """
    return bool(backend_devices("gpu") or backend_devices("tpu"))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current device computes in bfloat16 (XLA emulates it on CPUs; TPUs and
    GPUs from compute capability 8.0 have it natively).

    Example:
      >>> import pdx
      >>> pdx.device.is_bf16_supported()
      True
    """
    dev = _current()
    if dev.platform == "gpu":
        capability = getattr(dev, "compute_capability", "0.0")
        return including_emulation or float(capability) >= 8.0
    return including_emulation or dev.platform == "tpu"


def manual_seed(seed: int) -> None:
    """Seed the generator random ops draw from (the same one as `pdx.seed`).

    Example:
      >>> import pdx
      >>> pdx.device.manual_seed(7)
    """
    _random.seed(seed)


def get_rng_state(device=None):
    """The generator state (a typed JAX key; pdx has one generator for every device).

    Example:
      >>> import pdx
      >>> pdx.device.set_rng_state(pdx.device.get_rng_state())
    """
    return _random.get_rng_state()


def set_rng_state(new_state, device=None) -> None:
    """Restore a state returned by `get_rng_state`."""
    _random.set_rng_state(new_state)


def get_device_module(device=None):
    """The pdx module with the queries of `device`'s kind: `pdx.device.cuda` for a GPU, else `pdx.device`.

    Example:
      >>> import pdx
      >>> pdx.get_device_module("cpu").__name__
      'pdx.device'
    """
    import pdx.device as module

    kind = as_place(device).kind if device is not None else _current().platform
    return module.cuda if kind in ("gpu", "cuda") else module
