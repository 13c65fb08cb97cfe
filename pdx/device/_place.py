"""Paddle's Place objects (CPUPlace, CUDAPlace, ...) as names for JAX devices.

A Place only describes where data should live; `place.jax_device()` (and
`as_jax_device`, which every pdx API taking a `place`/`places` argument calls)
turns it into the `jax.Device` that `jax.device_put` understands.
"""

from __future__ import annotations

import jax

__all__ = ["CPUPlace", "CUDAPinnedPlace", "CUDAPlace", "CustomPlace", "Place", "XPUPlace", "as_jax_device",
           "backend_devices"]


def backend_devices(platform: str) -> list:
    """The JAX devices of `platform` ('cpu', 'gpu', 'cuda', 'rocm', 'tpu'), or [] when it is not available."""
    try:
        return list(jax.devices(platform))
    except RuntimeError:
        return []


class Place:
    """Base class of the Paddle places; `jax_device()` names the JAX device it stands for."""

    kind = "undefined"
    platform = "cpu"

    def __init__(self, device_id: int = 0):
        if not isinstance(device_id, int) or isinstance(device_id, bool) or device_id < 0:
            raise ValueError(f"{type(self).__name__}(device_id) must be an int >= 0; got {device_id!r}")
        self.device_id = device_id

    def jax_device(self) -> jax.Device:
        """The `jax.Device` for this place, or a ValueError when JAX has no such device."""
        devices = backend_devices(self.platform)
        if not devices:
            raise ValueError(f"{self!r}: JAX has no {self.platform!r} device here (available: "
                             f"{sorted({d.platform for d in jax.devices()})}); use pdx.CPUPlace() or install "
                             "the matching jax plugin (e.g. jax[cuda12])")
        if self.device_id >= len(devices):
            raise ValueError(f"{self!r}: device id {self.device_id} is out of range; JAX sees {len(devices)} "
                             f"{self.platform} device(s)")
        return devices[self.device_id]

    def get_device_id(self) -> int:
        """The device index (Paddle's `Place.get_device_id`)."""
        return self.device_id

    def __eq__(self, other):
        return type(other) is type(self) and other.device_id == self.device_id

    def __hash__(self):
        return hash((type(self).__name__, self.device_id))

    def __repr__(self):
        return f"Place({self.kind}:{self.device_id})"


class CPUPlace(Place):
    """The host CPU (Paddle's `paddle.CPUPlace()`).

    Example:
      >>> import pdx
      >>> pdx.CPUPlace()
      Place(cpu)
    """

    kind, platform = "cpu", "cpu"

    def __init__(self):
        super().__init__(0)

    def __repr__(self):
        return "Place(cpu)"


class CUDAPlace(Place):
    """GPU number `device_id` (Paddle's `paddle.CUDAPlace(0)`); JAX's 'gpu' backend (CUDA or ROCm).

    Constructing one always works; using it where no GPU is visible raises a ValueError.

    Example:
      >>> import pdx
      >>> pdx.CUDAPlace(0)
      Place(gpu:0)
    """

    kind, platform = "gpu", "gpu"


class CUDAPinnedPlace(Place):
    """Page-locked host memory (Paddle's `paddle.CUDAPinnedPlace()`); pdx places such data on the CPU device.

    Example:
      >>> import pdx
      >>> pdx.CUDAPinnedPlace()
      Place(gpu_pinned)
    """

    kind, platform = "gpu_pinned", "cpu"

    def __init__(self):
        super().__init__(0)

    def __repr__(self):
        return "Place(gpu_pinned)"


class XPUPlace(Place):
    """A Kunlun XPU (Paddle's `paddle.XPUPlace(0)`); JAX has no XPU backend, so using it raises.

    Example:
      >>> import pdx
      >>> pdx.XPUPlace(0)
      Place(xpu:0)
    """

    kind, platform = "xpu", "xpu"


class CustomPlace(Place):
    """A plugin device by type name (Paddle's `paddle.CustomPlace('npu', 0)`); 'tpu' maps to JAX's TPU.

    Example:
      >>> import pdx
      >>> pdx.CustomPlace("tpu", 0)
      Place(tpu:0)
    """

    def __init__(self, device_type: str, device_id: int = 0):
        super().__init__(device_id)
        self.kind = self.platform = str(device_type)

    def __eq__(self, other):
        return isinstance(other, CustomPlace) and (other.kind, other.device_id) == (self.kind, self.device_id)

    def __hash__(self):
        return hash((self.kind, self.device_id))


def _parse(device: str) -> Place:
    name, _, index = device.strip().lower().partition(":")
    if index and not index.isdigit():
        raise ValueError(f"device {device!r} must look like 'cpu', 'gpu', 'gpu:0' or 'tpu:1'")
    i = int(index or 0)
    if name == "cpu":
        return CPUPlace()
    if name in ("gpu", "cuda"):
        return CUDAPlace(i)
    if name == "xpu":
        return XPUPlace(i)
    if name == "gpu_pinned":
        return CUDAPinnedPlace()
    return CustomPlace(name, i)


def as_place(device) -> Place:
    """A Place from a Place, a device string ('cpu', 'gpu:1') or an int GPU id."""
    if isinstance(device, Place):
        return device
    if isinstance(device, str):
        return _parse(device)
    if isinstance(device, int) and not isinstance(device, bool):
        return CUDAPlace(device)
    if isinstance(device, jax.Device):
        return _parse(f"{device.platform}:{device.id}")
    raise TypeError(f"device must be a Place, a string like 'cpu' / 'gpu:0' or an int GPU id; got {device!r}")


def as_jax_device(place):
    """What `jax.device_put` takes, from whatever Paddle code passes as `place`/`places`.

    None, a `jax.Device` and a `jax.sharding.Sharding` pass through; a Place or a
    device string becomes its `jax.Device`; a one-element list/tuple (Paddle's
    `places=[place]`) is unwrapped.

    Example:
      >>> import pdx
      >>> as_jax_device(pdx.CPUPlace()).platform
      'cpu'
    """
    if place is None or isinstance(place, (jax.Device, jax.sharding.Sharding)):
        return place
    if isinstance(place, (list, tuple)):
        if len(place) != 1:
            raise ValueError(f"places={place!r}: pdx places a batch on one device or one jax.sharding.Sharding; "
                             "pass a NamedSharding over several devices for data parallelism")
        return as_jax_device(place[0])
    return as_place(place).jax_device()
