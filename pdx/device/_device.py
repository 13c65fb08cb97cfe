"""Device selection and capability queries (Paddle's paddle.device / paddle.set_device), answered by JAX.

`set_device` sets JAX's default device (`jax_default_device`), so new arrays
and eager ops land there, as in Paddle. The `is_compiled_with_*` answers say
whether JAX in this process has a backend of that kind (a GPU build of JAX
hidden by `JAX_PLATFORMS=cpu` answers False, like a CPU build).
"""

from __future__ import annotations

import jax

from pdx.device._place import as_place, backend_devices

__all__ = [
    "device_count", "get_all_custom_device_type", "get_all_device_type", "get_available_custom_device",
    "get_available_device", "get_cudnn_version", "get_default_device", "get_device", "is_compiled_with_cinn",
    "is_compiled_with_cuda", "is_compiled_with_custom_device", "is_compiled_with_distribute",
    "is_compiled_with_ipu", "is_compiled_with_rocm", "is_compiled_with_xpu", "set_default_device", "set_device",
    "synchronize",
]

_ACCELERATORS = ("gpu", "tpu")


def _gpu_runtime() -> str | None:
    devices = backend_devices("gpu")
    if not devices:
        return None
    version = getattr(devices[0].client, "platform_version", "") or ""
    return "rocm" if "rocm" in version.lower() else "cuda"


def is_compiled_with_cuda() -> bool:
    """Whether JAX has a CUDA GPU backend in this process.

    Returns:
      A bool.

    Example:
      >>> import pdx
      >>> isinstance(pdx.is_compiled_with_cuda(), bool)
      True
    """
    return _gpu_runtime() == "cuda"


def is_compiled_with_rocm() -> bool:
    """Whether JAX has a ROCm GPU backend in this process.

    Returns:
      A bool.

    Example:
      >>> import pdx
      >>> isinstance(pdx.is_compiled_with_rocm(), bool)
      True
    """
    return _gpu_runtime() == "rocm"


def is_compiled_with_xpu() -> bool:
    """Always False: JAX has no Kunlun XPU backend.

    Returns:
      False.

    Example:
      >>> import pdx
      >>> pdx.is_compiled_with_xpu()
      False
    """
    return False


def is_compiled_with_ipu() -> bool:
    """Always False: JAX has no Graphcore IPU backend.

    Returns:
      False.

    Example:
      >>> import pdx
      >>> pdx.is_compiled_with_ipu()
      False
    """
    return False


def is_compiled_with_cinn() -> bool:
    """Always False: pdx compiles with XLA, not Paddle's CINN.

    Returns:
      False.

    Example:
      >>> import pdx
      >>> pdx.is_compiled_with_cinn()
      False
    """
    return False


def is_compiled_with_distribute() -> bool:
    """Always True: multi-process training runs on `jax.distributed` (see `pdx.parallel`).

    Returns:
      True.

    Example:
      >>> import pdx
      >>> pdx.is_compiled_with_distribute()
      True
    """
    return True


def is_compiled_with_custom_device(device_type) -> bool:
    """Whether JAX has a backend named `device_type` (e.g. 'tpu') in this process.

    Args:
      device_type: a backend name.

    Returns:
      A bool.

    Example:
      >>> import pdx
      >>> pdx.is_compiled_with_custom_device("npu")
      False
    """
    if not isinstance(device_type, str):
        raise TypeError(f"is_compiled_with_custom_device(device_type) needs a string; got {device_type!r}")
    if device_type in ("cpu", "gpu", "cuda", "rocm", "xpu"):
        return False
    return bool(backend_devices(device_type))


def get_all_device_type() -> list[str]:
    """The device kinds JAX can use here, e.g. ['cpu'] or ['cpu', 'gpu'].

    Returns:
      A list of strings.

    Example:
      >>> import pdx
      >>> "cpu" in pdx.device.get_all_device_type()
      True
    """
    kinds = ["cpu"] if backend_devices("cpu") else []
    return kinds + [k for k in _ACCELERATORS if backend_devices(k)]


def get_all_custom_device_type() -> list[str]:
    """Plugin device kinds beyond CPU and GPU that JAX can use (e.g. ['tpu']).

    Returns:
      A list of strings.

    Example:
      >>> import pdx
      >>> "cpu" in pdx.device.get_all_custom_device_type()
      False
    """
    return [k for k in get_all_device_type() if k not in ("cpu", "gpu")]


def get_available_device() -> list[str]:
    """Every accelerator device JAX sees, as Paddle names them ('gpu:0', 'gpu:1', 'tpu:0', ...).

    Returns:
      A list of strings (empty on a CPU-only machine, as Paddle).

    Example:
      >>> import pdx
      >>> isinstance(pdx.device.get_available_device(), list)
      True
    """
    return [f"{k}:{i}" for k in _ACCELERATORS for i in range(len(backend_devices(k)))]


def get_available_custom_device() -> list[str]:
    """The devices of `get_all_custom_device_type()`, e.g. ['tpu:0', 'tpu:1'].

    Returns:
      A list of strings.

    Example:
      >>> import pdx
      >>> isinstance(pdx.device.get_available_custom_device(), list)
      True
    """
    return [d for d in get_available_device() if not d.startswith("gpu:")]


def device_count(device_type: str | None = None) -> int:
    """Number of accelerator devices (GPUs by default) visible to this process.

    Args:
      device_type: 'gpu' (default), 'tpu' or 'cpu'.

    Returns:
      An int (0 when there are none).

    Example:
      >>> import pdx
      >>> pdx.device.device_count() >= 0
      True
    """
    return len(backend_devices(device_type or "gpu"))


def get_cudnn_version() -> int | None:
    """The cuDNN version JAX's CUDA backend loads (from the nvidia-cudnn wheel), as Paddle's int (e.g. 90100).

    Returns:
      An int, or None without a CUDA backend or a pip-installed cuDNN.

    Example:
      >>> import pdx
      >>> pdx.get_cudnn_version() is None or pdx.get_cudnn_version() > 0
      True
    """
    if not is_compiled_with_cuda():
        return None
    from importlib import metadata

    for dist in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12"):  # the cuDNN wheels jax[cuda] installs
        try:
            parts = [int(p) for p in metadata.version(dist).split(".")[:3]]
        except (metadata.PackageNotFoundError, ValueError):
            continue
        major, minor, patch = (parts + [0, 0, 0])[:3]
        return major * 10000 + minor * 100 + patch
    return None


def set_device(device):
    """Make `device` JAX's default device: new arrays and eager ops go there (Paddle's `set_device`).

    Args:
      device: 'cpu', 'gpu', 'gpu:N', 'tpu:N', an int GPU id, or a Place.

    Returns:
      The Place now in use.

    Raises:
      ValueError: when JAX has no such device here, e.g. `set_device('gpu')` on a CPU-only machine.

    Example:
      >>> import pdx
      >>> pdx.set_device("cpu")
      Place(cpu)
    """
    place = as_place(device)
    if place.kind in ("gpu", "cuda") and not backend_devices("gpu"):
        raise ValueError(f"set_device({device!r}): no GPU is visible to JAX (backends: "
                         f"{get_all_device_type()}); install a CUDA build of jax (jax[cuda12]) and unset "
                         "JAX_PLATFORMS, or use set_device('cpu')")
    jax.config.update("jax_default_device", place.jax_device())
    return place


def _current() -> jax.Device:
    dev = jax.config.jax_default_device
    if isinstance(dev, str):
        dev = jax.devices(dev)[0]
    return dev if dev is not None else jax.devices()[0]


def get_device(input=None) -> str:  # noqa: A002 (Paddle's name)
    """The current default device as Paddle names it ('cpu', 'gpu:0', 'tpu:0'), or where `input` lives.

    Args:
      input: optional tensor; its device is reported instead.

    Returns:
      A string.

    Example:
      >>> import pdx
      >>> pdx.get_device() in ("cpu", "gpu:0", "tpu:0")
      True
    """
    if input is not None:
        dev = next(iter(input.devices()))
    else:
        dev = _current()
    return "cpu" if dev.platform == "cpu" else f"{dev.platform}:{dev.id}"


def get_default_device() -> str:
    """Paddle 3's name for `get_device()`: the default device, 'cpu', 'gpu:0', ... (a str, as Paddle's Device is).

    Example:
      >>> import pdx
      >>> pdx.device.get_default_device() == pdx.get_device()
      True
    """
    return get_device()


def set_default_device(device) -> None:
    """Paddle 3's name for `set_device(device)` (returns None, as Paddle's does).

    Example:
      >>> import pdx
      >>> pdx.device.set_default_device("cpu")
    """
    set_device(device)


def synchronize(device=None) -> None:
    """Wait until every computation issued so far has finished (e.g. before reading a timer).

    Args:
      device: accepted for Paddle; pdx waits for all devices.

    Returns:
      None.

    Example:
      >>> import pdx
      >>> pdx.device.synchronize()
    """
    for array in jax.live_arrays():
        array.block_until_ready()

